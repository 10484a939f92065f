"""The JSON API: POST and GET /backward, and /healthz."""

import json
from typing import Annotated

import anyio.to_thread
import pydantic_core
from fastapi import APIRouter, Body, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.routing import APIRoute
from starlette.background import BackgroundTask

from engine import Limits

from .. import schemas
from ..compression import accepts_gzip
from ..dependencies import ServiceDep
from ..errors import json_error
from ..middleware import answer_sent, body_limit_message
from ..serialize import COLUMNS_MEDIA_TYPE, wants_columns
from ..service import Service, answer


class JSONBodyRequest(Request):
    """Reads a JSON body with pydantic-core's parser, twice as fast as json.loads on a large graph
    (benchmarks/bench_graph.py), and the same objects for every body both read. What it refuses
    (a lone surrogate, a byte-order mark, a syntax error, nesting past its depth) goes to json.loads,
    which reads it as before or raises the error FastAPI answers 422 (json_invalid)."""

    async def json(self):
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                self._json = pydantic_core.from_json(body)
            except ValueError:
                self._json = json.loads(body)
        return self._json


class JSONBodyRoute(APIRoute):
    def get_route_handler(self):
        handler = super().get_route_handler()

        async def handle(request: Request):
            return await handler(JSONBodyRequest(request.scope, request.receive))

        return handle


router = APIRouter(tags=["api"], route_class=JSONBodyRoute)


async def _answer(
    request: schemas.BackwardRequest, raw: Request, service: Service, accept: str | None, accept_encoding: str | None
) -> Response:
    columns = wants_columns(accept)
    gzipped = columns and accepts_gzip(accept_encoding)  # compressed as it is written (app.compression)
    body, free = await service.backward_json(request, columns, gzipped)
    # One URL, two encodings (the columns compressed here, not by the middleware): a shared cache keeps them apart.
    headers = {"Vary": "Accept, Accept-Encoding", "Content-Encoding": "gzip"} if gzipped else {"Vary": "Accept"}
    return Response(
        body,
        media_type=COLUMNS_MEDIA_TYPE if columns else "application/json",
        headers=headers,
        background=free and BackgroundTask(_free_once_sent, raw.scope, free),
    )


async def _free_once_sent(scope, free) -> None:
    """free() once the answer has left the server, in a worker thread, not on the event loop: freeing a
    100,000-node graph holds the interpreter lock for a few tenths of a second, and while the answer's bytes
    still wait in the server the event loop needs the lock to send them."""
    await answer_sent(scope)
    await anyio.to_thread.run_sync(free)


CHAPTER_2_EXAMPLE = answer(schemas.BackwardRequest(expression=schemas.CHAPTER_2_PROGRAM), Limits())
BACKWARD_RESPONSES = {
    200: {"description": "The graph with its gradients (example: chapter 2's program)"},
    400: {"model": schemas.ProgramErrorResponse, "description": "The program has an error, or exceeds a limit"},
    413: {"model": schemas.MessageResponse, "description": "The request body is too large"},
    503: {"model": schemas.MessageResponse, "description": "The request ran past its time budget"},
}


@router.post("/backward", response_model=schemas.BackwardResponse, responses=BACKWARD_RESPONSES)
async def post_backward(
    request: Annotated[
        schemas.BackwardRequest,
        Body(
            openapi_examples={
                "chapter 2": {"summary": "Chapter 2's graph", "value": {"expression": schemas.CHAPTER_2_PROGRAM}},
                "a graph": {
                    "summary": "Chapter 2's graph as a learner's own Value class in any language writes it",
                    "value": {"graph": schemas.CHAPTER_2_GRAPH},
                },
            }
        ),
    ],
    service: ServiceDep,
    raw: Request,
    accept: Annotated[str | None, Header(include_in_schema=False)] = None,
    accept_encoding: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Response:
    """Run a program and its backward pass; return the graph, its gradients and every step. With
    `graph` instead of a program: the same for a graph built elsewhere, with each node's
    expected_grad and the gradient_check of the learner's own grads."""
    settings = service.settings
    if request.graph is None and len(await raw.body()) > settings.max_body_bytes:
        # Let past the general limit for naming a graph (app.middleware), and it has none.
        return json_error(413, {"message": body_limit_message(settings.max_body_bytes, settings.max_graph_body_bytes)})
    return await _answer(request, raw, service, accept, accept_encoding)


@router.get("/backward", response_model=schemas.BackwardResponse, responses=BACKWARD_RESPONSES)
async def get_backward(
    query: Annotated[schemas.BackwardQuery, Query()],
    service: ServiceDep,
    raw: Request,
    accept: Annotated[str | None, Header(include_in_schema=False)] = None,
    accept_encoding: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Response:
    """The same as POST, for links and curl; variables are written in the program."""
    unknown = [name for name in raw.query_params if name not in schemas.BackwardQuery.model_fields]
    if unknown:  # as POST refuses a field it does not know: a parameter left unread would change nothing, silently
        raise RequestValidationError(
            [
                {
                    "type": "extra_forbidden",
                    "loc": ("query", name),
                    "msg": GET_VARIABLES if name == "variables" else "Extra inputs are not permitted",
                    "input": raw.query_params[name],
                }
                for name in unknown
            ]
        )
    return await _answer(query.as_request(), raw, service, accept, accept_encoding)


GET_VARIABLES = "GET /backward takes no variables: write them in the program (x = 3), or POST them"


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
