"""The HTML pages: the visualiser at GET /, and the favicon every browser asks for."""

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse

from engine import Limits

router = APIRouter(include_in_schema=False)

FAVICON = Path(__file__).resolve().parents[2] / "static" / "favicon.ico"


@router.get("/", response_class=HTMLResponse)
def index(request: Request):
    settings = getattr(request.app.state, "settings", None)
    max_source_length = settings.max_source_length if settings else Limits.max_source_length
    return request.app.state.templates.TemplateResponse(
        request, "index.html", {"max_source_length": max_source_length}
    )


@router.get("/favicon.ico")
def favicon():
    # Without it every page load logs a 404 in the console.
    return FileResponse(FAVICON, media_type="image/x-icon")
