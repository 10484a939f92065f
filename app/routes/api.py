"""The JSON API: POST and GET /backward, and /healthz."""

import json
from typing import Annotated

import anyio
from fastapi import APIRouter, Body, Depends, Query
from fastapi.responses import Response
from starlette.background import BackgroundTask

from engine import Limits

from .. import schemas
from ..budget import Leftovers, collector_paused, run_within_budget
from ..cache import ResponseCache
from ..config import Settings
from ..dependencies import get_response_cache, get_settings, get_work_limiter
from ..service import answer, compute

router = APIRouter(tags=["api"])


def _backward_json(request: schemas.BackwardRequest, limits: Limits) -> tuple[bytes, Leftovers]:
    """The answer's bytes, and the graph and trace that made them, to free once it is sent."""
    with collector_paused():
        made = compute(request, limits)
        return made.json(), Leftovers(made)


async def _answer(
    request: schemas.BackwardRequest, settings: Settings, limiter: anyio.CapacityLimiter, cache: ResponseCache
) -> Response:
    key = json.dumps(request.model_dump(), sort_keys=True)  # escapes lone surrogates, unlike model_dump_json
    body, release = cache.get(key), None
    if body is None:
        body, leftovers = await run_within_budget(
            _backward_json, request, settings.limits, seconds=settings.time_budget, limiter=limiter
        )
        cache.put(key, body)
        release = BackgroundTask(
            leftovers.free
        )  # after the last byte is sent, in a worker thread, not on the event loop
    return Response(body, media_type="application/json", background=release)


CHAPTER_2_EXAMPLE = answer(schemas.BackwardRequest(expression=schemas.CHAPTER_2_PROGRAM), Limits())
BACKWARD_RESPONSES = {
    200: {"description": "The graph with its gradients (example: chapter 2's program)"},
    400: {"model": schemas.ProgramErrorResponse, "description": "The program has an error, or exceeds a limit"},
    413: {"model": schemas.MessageResponse, "description": "The request body is too large"},
    503: {"model": schemas.MessageResponse, "description": "The request ran past its time budget"},
}
SettingsDep = Annotated[Settings, Depends(get_settings)]
LimiterDep = Annotated[anyio.CapacityLimiter, Depends(get_work_limiter)]
CacheDep = Annotated[ResponseCache, Depends(get_response_cache)]


@router.post("/backward", response_model=schemas.BackwardResponse, responses=BACKWARD_RESPONSES)
async def post_backward(
    request: Annotated[
        schemas.BackwardRequest,
        Body(
            openapi_examples={
                "chapter 2": {"summary": "Chapter 2's graph", "value": {"expression": schemas.CHAPTER_2_PROGRAM}}
            }
        ),
    ],
    settings: SettingsDep,
    limiter: LimiterDep,
    cache: CacheDep,
) -> Response:
    """Run a program and its backward pass; return the graph, its gradients and every step."""
    return await _answer(request, settings, limiter, cache)


@router.get("/backward", response_model=schemas.BackwardResponse, responses=BACKWARD_RESPONSES)
async def get_backward(
    query: Annotated[schemas.BackwardQuery, Query()], settings: SettingsDep, limiter: LimiterDep, cache: CacheDep
) -> Response:
    """The same as POST, for links and curl; variables are written in the program."""
    request = schemas.BackwardRequest.model_construct(**dict(query), variables={})
    return await _answer(request, settings, limiter, cache)


def add_response_examples(openapi: dict) -> dict:
    """Put chapter 2's response into the finished OpenAPI schema as the example of both forms:
    FastAPI drops null values from examples given to the route, and this one has nulls."""
    for operation in openapi["paths"]["/backward"].values():
        operation["responses"]["200"]["content"]["application/json"]["example"] = CHAPTER_2_EXAMPLE
    return openapi


@router.head("/healthz", include_in_schema=False)  # uptime checkers often ask with HEAD
@router.get("/healthz", response_model=schemas.Health)
async def healthz() -> dict[str, str]:
    """Answers while the server can take requests (the event loop is never blocked by work)."""
    return {"status": "ok"}
