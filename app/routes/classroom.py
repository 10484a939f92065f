"""Teach live: POST /rooms makes a room, GET /rooms/{code}/qr.svg draws its join link, and
/rooms/ws is the WebSocket every member (teacher and students) talks over; see app/rooms.py."""

import math

from fastapi import APIRouter, Request, WebSocket
from fastapi.responses import Response
from pydantic import BaseModel

from ..broker import TooManyRooms
from ..dependencies import ClassroomDep
from ..errors import json_error
from ..origin import site_origin
from ..qr import qr_svg
from ..rooms import (
    NewRoom,
    RoomCreated,
    RoomProblem,
    TooManyCreations,
    client_key,
    normalise_code,
    shown_code,
)

router = APIRouter(tags=["classroom"])

WEBSOCKET_PATH = "/rooms/ws"


def join_url(request: Request, code: str, page: str = "/") -> str:
    return f"{site_origin(request)}{page}?room={shown_code(code)}"


@router.post(
    "/rooms",
    response_model=RoomCreated,
    responses={
        400: {"description": "The state is refused"},
        429: {"description": "This address has made its rooms for the hour (Retry-After says when it may again)"},
        503: {"description": "Too many rooms are open, or Redis is unreachable (Retry-After says when to retry)"},
    },
)
async def create_room(body: NewRoom, request: Request, classroom: ClassroomDep):
    """Start a room showing `state`. The answer's token is the teacher's: keep it out of links.
    With `token` (a teacher's page whose room the store lost), the room of that token is made again
    under its own code, or answered as it is if it still exists."""
    try:
        code, token = await classroom.create_room(
            body.state, client_key(request.client and request.client.host), body.token, body.max_students
        )
    except RoomProblem as problem:
        return json_error(400, {"message": str(problem)})
    except TooManyCreations as limit:
        allowed, seconds_left = limit.args
        minutes = math.ceil(seconds_left / 60)
        return json_error(
            429,
            {
                "message": f"this address has made {allowed:,} rooms in the last hour, the limit; it may make "
                f"another in {minutes} minute{'s' * (minutes != 1)}"
            },
            {"retry-after": str(math.ceil(seconds_left))},
        )
    except TooManyRooms:
        return json_error(
            503,
            {
                "message": f"too many rooms are open (the limit is {classroom.settings.room_max_rooms:,}); "
                "try again later"
            },
        )
    return RoomCreated(
        code=shown_code(code),
        token=token,
        join_url=join_url(request, code),
        embed_url=join_url(request, code, "/embed"),
        qr_svg_url=f"/rooms/{shown_code(code)}/qr.svg",
        websocket_path=WEBSOCKET_PATH,
    )


@router.get(
    "/rooms/{code}/qr.svg",
    response_class=Response,
    responses={200: {"content": {"image/svg+xml": {}}}, 400: {}, 404: {}},
)
async def room_qr(code: str, request: Request, classroom: ClassroomDep):
    """The join link as a QR code, for a projector."""
    try:
        code = normalise_code(code)
    except RoomProblem as problem:
        return json_error(400, {"message": str(problem)})
    if await classroom.broker.get(code) is None:
        return json_error(404, {"message": f"there is no room {shown_code(code)} (it may have expired)"})
    return Response(qr_svg(join_url(request, code)), media_type="image/svg+xml", headers={"cache-control": "no-store"})


class Readiness(BaseModel):
    status: str
    message: str | None = None


@router.get(
    "/readyz",
    response_model=Readiness,
    responses={503: {"description": "The configured broker (Redis) cannot be reached"}},
)
async def readyz(classroom: ClassroomDep):
    """Ready to serve Teach live: 503 while a configured Redis cannot be reached (a load balancer
    sends new classes elsewhere); /healthz stays the liveness check."""
    await classroom.broker.ping()  # BrokerUnavailable: 503 with Retry-After (app/errors.py)
    return {"status": "ready"}


@router.websocket(WEBSOCKET_PATH)
async def room_socket(websocket: WebSocket, classroom: ClassroomDep):
    await classroom.serve(websocket)
