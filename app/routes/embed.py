"""The embed (GET /embed, made to be framed by any site) and the self-contained HTML download
(POST or GET /export/html, the same request as /backward, answered with a file that replays it)."""

from typing import Annotated

from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import HTMLResponse, Response

from .. import schemas
from ..dependencies import ServiceDep, SettingsDep, TemplatesDep
from ..export.options import CONTROLS, EDITORS, STAGES, TABLES, THEMES, EmbedOptions
from ..export.standalone import request_document
from ..schemas import DEFAULT_SPEED, PLAYER_SPEEDS
from ..scorm import MAX_TITLE
from ..service import Service

router = APIRouter()

DOWNLOAD_NAME = "valuegraph.html"


def _option(name: str, what: str, examples: list[str]) -> dict:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": what,
        "schema": {"type": "string", "examples": examples},
    }


def _choice(name: str, allowed: tuple[str, ...], what: str) -> dict:
    return _option(name, f"{what}: {', '.join(allowed)} (another value: {allowed[0]})", list(allowed))


SPEEDS = [f"{speed:g}" for speed in PLAYER_SPEEDS]

# The embed's options as OpenAPI parameters, for the routes that read them from the query string.
# EmbedOptions.from_query reads them leniently (an unknown value takes the default), so the schema
# says string and names the values that mean something.
EMBED_PARAMETERS = [
    _choice("stage", STAGES, "Which stages of the walk the file plays"),
    _option("step", "The step it opens at, in digits", ["0", "11"]),
    _option("autoplay", "Play on opening: 1, true, yes or on (another value: no)", ["true"]),
    _option(
        "speed",
        f"The player's speed: {', '.join(SPEEDS)} (another value: {DEFAULT_SPEED:g})",
        SPEEDS,
    ),
    _choice("controls", CONTROLS, "How many of the player's controls are shown"),
    _choice("editor", EDITORS, "The program editor"),
    _choice("theme", THEMES, "Colours: the reader's setting, light or dark"),
    _choice("table", TABLES, "The table of nodes beside the graph"),
]
HTML_FILE_RESPONSES = {
    200: {"content": {"text/html": {}}, "description": "One HTML file holding every script, style and number"},
    400: {"model": schemas.ProgramErrorResponse, "description": "The program has an error, or exceeds a limit"},
    413: {"model": schemas.MessageResponse, "description": "The request body is too large"},
    503: {"model": schemas.MessageResponse, "description": "The request ran past its time budget"},
}
TitleQuery = Annotated[str | None, Query(max_length=MAX_TITLE, description="The file's title (default: valuegraph)")]


@router.get("/embed", response_class=HTMLResponse, include_in_schema=False)
def embed(request: Request, settings: SettingsDep, templates: TemplatesDep):
    """The visualiser with minimal chrome; see app.export.options.EmbedOptions for the query options.
    With language=typescript|javascript the code runs in the reader's browser, after Run, within
    these limits (static/js/sandbox.js)."""
    options = EmbedOptions.from_query(request.query_params)
    limits = {"max_nodes": settings.max_nodes, "browser_run_seconds": settings.browser_run_seconds}
    return templates.TemplateResponse(
        request, "embed.html", {"options": options, "inline": None, "title": "valuegraph", **limits}
    )


async def _answer(request: schemas.BackwardRequest, query, service: Service, title: str | None) -> Response:
    options = EmbedOptions.from_query(query)
    document = await service.run(
        request_document, request, service.limits, options, (title or "").strip() or "valuegraph"
    )
    return Response(
        document,
        media_type="text/html; charset=utf-8",
        headers={"content-disposition": f'attachment; filename="{DOWNLOAD_NAME}"'},
    )


@router.post(
    "/export/html",
    response_class=Response,
    tags=["export"],
    responses=HTML_FILE_RESPONSES,
    openapi_extra={"parameters": EMBED_PARAMETERS},
)
async def post_export_html(
    request: Request, body: Annotated[schemas.ExportRequest, Body()], service: ServiceDep, title: TitleQuery = None
) -> Response:
    """The same body as POST /backward; the embed's options (stage, step, controls...) may go in
    the query string. Answers with one HTML file holding every script, style and number."""
    return await _answer(body, request.query_params, service, title)


@router.get(
    "/export/html",
    response_class=Response,
    tags=["export"],
    responses=HTML_FILE_RESPONSES,
    openapi_extra={"parameters": EMBED_PARAMETERS},
)
async def get_export_html(
    request: Request, query: Annotated[schemas.BackwardQuery, Query()], service: ServiceDep, title: TitleQuery = None
) -> Response:
    """The same as POST, for links: the program in `expression`, the embed's options beside it."""
    return await _answer(query.as_request(), request.query_params, service, title)
