"""GET and POST /export/scorm: the lesson as a SCORM 1.2 package (a .zip); see app/scorm.py."""

from typing import Annotated

from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import Response

from .. import schemas
from ..dependencies import ServiceDep
from ..export.options import EmbedOptions
from ..export.standalone import request_html
from ..scorm import MAX_TITLE, lesson_title, scorm_package
from ..service import Service
from .embed import EMBED_PARAMETERS

router = APIRouter(tags=["export"])

DOWNLOAD_NAME = "valuegraph-scorm.zip"
ZIP_RESPONSE = {
    200: {"content": {"application/zip": {}}, "description": "The package"},
    400: {"description": "The program has an error"},
}


def _package(request: schemas.BackwardRequest, limits, options: EmbedOptions, title: str) -> bytes:
    return scorm_package(request_html(request, limits, options, title, scorm=True), title)


async def _answer(body: schemas.BackwardRequest, query, title: str | None, service: Service) -> Response:
    chosen = lesson_title(body.expression or "", title)
    package = await service.run(_package, body, service.limits, EmbedOptions.from_query(query), chosen)
    return Response(
        package,
        media_type="application/zip",
        headers={"content-disposition": f'attachment; filename="{DOWNLOAD_NAME}"'},
    )


TitleQuery = Annotated[
    str | None,
    Query(max_length=MAX_TITLE, description="The lesson's title in the platform (default: the program's first line)"),
]


@router.post(
    "/export/scorm", response_class=Response, responses=ZIP_RESPONSE, openapi_extra={"parameters": EMBED_PARAMETERS}
)
async def post_scorm(
    request: Request,
    body: Annotated[schemas.BackwardRequest, Body()],
    service: ServiceDep,
    title: TitleQuery = None,
) -> Response:
    """The same body as POST /backward; the embed's options (stage, controls...) may go in the query."""
    return await _answer(body, request.query_params, title, service)


@router.get(
    "/export/scorm", response_class=Response, responses=ZIP_RESPONSE, openapi_extra={"parameters": EMBED_PARAMETERS}
)
async def get_scorm(
    request: Request,
    query: Annotated[schemas.BackwardQuery, Query()],
    service: ServiceDep,
    title: TitleQuery = None,
) -> Response:
    """The same as POST, for links: the program in `expression`."""
    body = schemas.BackwardRequest.model_construct(**dict(query), variables={})
    return await _answer(body, request.query_params, title, service)
