"""The HTML pages: the visualiser at GET /, and the favicon every browser asks for."""

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, HTMLResponse

from ..config import Settings
from ..dependencies import get_settings

router = APIRouter(include_in_schema=False)

FAVICON = Path(__file__).resolve().parents[2] / "static" / "favicon.ico"


@router.get("/", response_class=HTMLResponse)
async def index(request: Request, settings: Annotated[Settings, Depends(get_settings)]):
    return request.app.state.templates.TemplateResponse(request, "index.html", {"max_source_length": settings.max_source_length})


@router.get("/favicon.ico")
def favicon():
    # Without it every page load logs a 404 in the console.
    return FileResponse(FAVICON, media_type="image/x-icon")
