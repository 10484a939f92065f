"""GET and POST /export/scorm: the lesson as a SCORM package (a .zip), 1.2 or (edition=2004) 2004
4th edition; see app/scorm.py."""

from typing import Annotated, Literal

from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import Response

from .. import schemas
from ..dependencies import ServiceDep
from ..export.options import EmbedOptions
from ..export.standalone import request_document
from ..scorm import EDITIONS, MAX_TITLE, lesson_title, scorm_package
from ..service import Service
from .embed import EMBED_PARAMETERS

router = APIRouter(tags=["export"])

DOWNLOAD_NAME = "valuegraph-scorm.zip"
ZIP_RESPONSE = {
    200: {"content": {"application/zip": {}}, "description": "The package"},
    400: {"description": "The program has an error"},
}


def _package(request: schemas.BackwardRequest, limits, options: EmbedOptions, title: str, edition: str) -> bytes:
    return scorm_package(request_document(request, limits, options, title, scorm=edition), title, edition)


async def _answer(body: schemas.BackwardRequest, query, title: str | None, edition: str, service: Service) -> Response:
    chosen = lesson_title(body.expression or getattr(body, "source", None) or "", title)
    package = await service.run(_package, body, service.limits, EmbedOptions.from_query(query), chosen, edition)
    return Response(
        package,
        media_type="application/zip",
        headers={"content-disposition": f'attachment; filename="{DOWNLOAD_NAME}"'},
    )


TitleQuery = Annotated[
    str | None,
    Query(max_length=MAX_TITLE, description="The lesson's title in the platform (default: the program's first line)"),
]
EditionQuery = Annotated[Literal[EDITIONS], Query(description="The SCORM edition: 1.2 (default) or 2004 (4th edition)")]


@router.post(
    "/export/scorm", response_class=Response, responses=ZIP_RESPONSE, openapi_extra={"parameters": EMBED_PARAMETERS}
)
async def post_scorm(
    request: Request,
    body: Annotated[schemas.ExportRequest, Body()],
    service: ServiceDep,
    title: TitleQuery = None,
    edition: EditionQuery = "1.2",
) -> Response:
    """The same body as POST /backward; the embed's options (stage, controls...) may go in the query."""
    return await _answer(body, request.query_params, title, edition, service)


@router.get(
    "/export/scorm", response_class=Response, responses=ZIP_RESPONSE, openapi_extra={"parameters": EMBED_PARAMETERS}
)
async def get_scorm(
    request: Request,
    query: Annotated[schemas.BackwardQuery, Query()],
    service: ServiceDep,
    title: TitleQuery = None,
    edition: EditionQuery = "1.2",
) -> Response:
    """The same as POST, for links: the program in `expression`."""
    body = schemas.BackwardRequest.model_construct(**dict(query), variables={})
    return await _answer(body, request.query_params, title, edition, service)
