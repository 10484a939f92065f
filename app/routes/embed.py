"""The embed (GET /embed, made to be framed by any site) and the self-contained HTML download
(POST or GET /export/html, the same request as /backward, answered with a file that replays it)."""

from typing import Annotated

from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import HTMLResponse, Response

from .. import schemas
from ..dependencies import ServiceDep
from ..export.options import EmbedOptions
from ..export.standalone import request_html
from ..scorm import MAX_TITLE
from ..service import Service

router = APIRouter()

DOWNLOAD_NAME = "valuegraph.html"


TitleQuery = Annotated[str | None, Query(max_length=MAX_TITLE, description="The file's title (default: valuegraph)")]


@router.get("/embed", response_class=HTMLResponse, include_in_schema=False)
def embed(request: Request):
    """The visualiser with minimal chrome; see app.export.options.EmbedOptions for the query options."""
    options = EmbedOptions.from_query(request.query_params)
    return request.app.state.templates.TemplateResponse(
        request, "embed.html", {"options": options, "inline": None, "title": "valuegraph"}
    )


async def _answer(request: schemas.BackwardRequest, query, service: Service, title: str | None) -> Response:
    options = EmbedOptions.from_query(query)
    html = await service.run(request_html, request, service.limits, options, (title or "").strip() or "valuegraph")
    return Response(
        html.encode("utf-8"),
        media_type="text/html; charset=utf-8",
        headers={"content-disposition": f'attachment; filename="{DOWNLOAD_NAME}"'},
    )


@router.post("/export/html", response_class=HTMLResponse, include_in_schema=False)
async def post_export_html(
    request: Request, body: Annotated[schemas.BackwardRequest, Body()], service: ServiceDep, title: TitleQuery = None
) -> Response:
    """The same body as POST /backward; the embed's options (stage, step, controls...) may go in
    the query string. Answers with one HTML file holding every script, style and number."""
    return await _answer(body, request.query_params, service, title)


@router.get("/export/html", response_class=HTMLResponse, include_in_schema=False)
async def get_export_html(
    request: Request, query: Annotated[schemas.BackwardQuery, Query()], service: ServiceDep, title: TitleQuery = None
) -> Response:
    """The same as POST, for links: the program in `expression`, the embed's options beside it."""
    return await _answer(query.as_request(), request.query_params, service, title)
