"""Runs longer than a request: POST /runs, GET and DELETE /runs/{id}, GET /runs/{id}/events and
GET /runs/{id}/graph. Each
route only validates and calls app.jobs (the job package), which runs programs in worker processes.
With the job queue on Redis, Redis out of reach answers 503 with Retry-After (as Teach live does)."""

import math
from typing import Annotated

from fastapi import APIRouter, Header, Path, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from engine import is_python

from .. import schemas
from ..broker import BrokerUnavailable
from ..dependencies import JobsDep
from ..errors import json_error
from ..jobs import JobLimitReached
from ..rooms import client_key
from ..serialize import COLUMNS_MEDIA_TYPE, wants_columns

router = APIRouter(tags=["runs"])

JobId = Annotated[str, Path(max_length=64)]
NOT_FOUND = {"model": schemas.MessageResponse, "description": "No such job, or it finished and expired"}
TOO_MANY = {"model": schemas.MessageResponse, "description": "Too many jobs at once, for this client or in all"}
UNAVAILABLE = {"model": schemas.MessageResponse, "description": "The job queue (Redis) cannot be reached"}


def _not_found(job_id: str) -> Response:
    return json_error(404, {"message": f"no job {job_id[:64]!r}: it never existed, or it finished and expired"})


def _unavailable(down: BrokerUnavailable) -> Response:
    seconds = max(1, math.ceil(down.retry_after))
    return json_error(
        503,
        {"message": f"the job queue (Redis) cannot be reached: no job can start or be read; try again in {seconds} s"},
        {"retry-after": str(seconds)},
    )


@router.post(
    "/runs",
    status_code=202,
    response_model=schemas.RunCreated,
    responses={
        400: {"model": schemas.MessageResponse, "description": "Not a Python program"},
        429: TOO_MANY,
        503: UNAVAILABLE,
    },
)
async def create_run(body: schemas.BackwardRequest, request: Request, jobs: JobsDep):
    """Run a program as a job, for programs that need longer than a request's time budget: the same
    body as POST /backward. Its `run` is ignored here: ask GET /runs/{id}/graph?run=k for a call's graph."""
    if body.expression is None:
        return json_error(400, {"message": "a job runs a program: give `expression`, not `graph`"})
    if not is_python(body.expression):  # it would run, make no backward() call, and end with nothing to show
        return json_error(
            400,
            {
                "message": "a job runs a Python program to its end, for its backward() calls; this program is the "
                "course shorthand, which POST /backward (the page's Run) answers at once"
            },
        )
    try:
        job_id = await jobs.submit(body, client_key(request.client and request.client.host))
    except JobLimitReached as limit:
        return json_error(429, {"message": str(limit)})
    except BrokerUnavailable as down:
        return _unavailable(down)
    return JSONResponse(
        {"id": job_id, "status_url": f"/runs/{job_id}", "events_url": f"/runs/{job_id}/events"}, status_code=202
    )


@router.get("/runs/{job_id}", response_model=schemas.RunStatus, responses={404: NOT_FOUND, 503: UNAVAILABLE})
async def run_status(job_id: JobId, jobs: JobsDep):
    """The job's status, progress, loss curve so far (`runs`), printed lines, and its error if it failed."""
    try:
        status = await jobs.status(job_id)
    except BrokerUnavailable as down:
        return _unavailable(down)
    return _not_found(job_id) if status is None else status


@router.delete("/runs/{job_id}", response_model=schemas.RunStatus, responses={404: NOT_FOUND, 503: UNAVAILABLE})
async def cancel_run(job_id: JobId, jobs: JobsDep):
    """Cancel a queued or running job (its process is stopped at once); a finished job is left as it is."""
    try:
        status = await jobs.cancel(job_id)
    except BrokerUnavailable as down:
        return _unavailable(down)
    return _not_found(job_id) if status is None else status


@router.get(
    "/runs/{job_id}/events",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "The job's events"},
        404: NOT_FOUND,
        503: UNAVAILABLE,
    },
)
async def run_events(job_id: JobId, jobs: JobsDep):
    """The job as server-sent events: `loss` per backward() call, `printed` per line, `progress`,
    and `end` with its whole status (as GET /runs/{id}); from the job's start, whenever one connects."""
    try:
        events = await jobs.events(job_id)
    except BrokerUnavailable as down:
        return _unavailable(down)
    if events is None:
        return _not_found(job_id)
    return StreamingResponse(events, media_type="text/event-stream", headers={"cache-control": "no-cache"})


@router.get(
    "/runs/{job_id}/graph",
    response_model=schemas.BackwardResponse,
    responses={
        400: {"model": schemas.ProgramErrorResponse, "description": "The program has an error, or exceeds a limit"},
        404: NOT_FOUND,
        429: TOO_MANY,
        503: UNAVAILABLE,
    },
)
async def run_graph(
    job_id: JobId,
    run: Annotated[int, Query(ge=0, le=10**9)],
    jobs: JobsDep,
    accept: Annotated[str | None, Header(include_in_schema=False)] = None,
):
    """What POST /backward answers for the job's program with `run` = k: the graph, trace and check
    of its k-th backward() call, in JSON or, as /backward, in the columnar encoding. The program is
    run again to that call in a worker process, within the job limits (not the request's time budget)."""
    columns = wants_columns(accept)
    try:
        made = await jobs.graph(job_id, run, columns)
    except JobLimitReached as limit:
        return json_error(429, {"message": str(limit)})
    except BrokerUnavailable as down:
        return _unavailable(down)
    if made is None:
        return _not_found(job_id)
    kind, answer = made
    if kind == "graph":
        return Response(
            answer, media_type=COLUMNS_MEDIA_TYPE if columns else "application/json", headers={"Vary": "Accept"}
        )
    return json_error(400, answer)
