"""The embed (GET /embed, made to be framed by any site) and the self-contained HTML download
(POST or GET /export/html, the same request as /backward, answered with a file that replays it)."""

from typing import Annotated

from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import HTMLResponse, Response

from .. import schemas
from ..budget import run_within_budget
from ..export import EmbedOptions, standalone_html
from ..service import answer
from .api import LimiterDep, SettingsDep

router = APIRouter()

DOWNLOAD_NAME = "valuegraph.html"


@router.get("/embed", response_class=HTMLResponse, include_in_schema=False)
def embed(request: Request):
    """The visualiser with minimal chrome; see app.export.EmbedOptions for the query options."""
    options = EmbedOptions.from_query(request.query_params)
    return request.app.state.templates.TemplateResponse(
        request, "embed.html", {"options": options, "inline": None, "title": "valuegraph"}
    )


def _standalone(request: schemas.BackwardRequest, limits, variables_text: str, options: EmbedOptions) -> bytes:
    full = request.model_copy(update={"trace": True, "layout": True, "check": False})
    response = answer(full, limits)
    return standalone_html(response, expression=request.expression, variables=variables_text, options=options).encode(
        "utf-8"
    )


def _variables_text(variables: dict) -> str:
    # As a person writes them: 3, not 3.0 (repr keeps every digit of the rest).
    return ", ".join(
        f"{name} = {int(value) if float(value).is_integer() else value!r}" for name, value in variables.items()
    )


async def _answer(request: schemas.BackwardRequest, query, settings, limiter) -> Response:
    options = EmbedOptions.from_query(query)
    body = await run_within_budget(
        _standalone,
        request,
        settings.limits,
        _variables_text(request.variables),
        options,
        seconds=settings.time_budget,
        limiter=limiter,
    )
    return Response(
        body,
        media_type="text/html; charset=utf-8",
        headers={"content-disposition": f'attachment; filename="{DOWNLOAD_NAME}"'},
    )


@router.post("/export/html", response_class=HTMLResponse, include_in_schema=False)
async def post_export_html(
    request: Request, body: Annotated[schemas.BackwardRequest, Body()], settings: SettingsDep, limiter: LimiterDep
) -> Response:
    """The same body as POST /backward; the embed's options (stage, step, controls...) may go in
    the query string. Answers with one HTML file holding every script, style and number."""
    return await _answer(body, request.query_params, settings, limiter)


@router.get("/export/html", response_class=HTMLResponse, include_in_schema=False)
async def get_export_html(
    request: Request, query: Annotated[schemas.BackwardQuery, Query()], settings: SettingsDep, limiter: LimiterDep
) -> Response:
    """The same as POST, for links: the program in `expression`, the embed's options beside it."""
    body = schemas.BackwardRequest.model_construct(**dict(query), variables={})
    return await _answer(body, request.query_params, settings, limiter)
