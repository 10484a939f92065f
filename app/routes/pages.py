"""The HTML pages: the visualiser at GET /, the API documentation at /docs, the favicon
every browser asks for, and the text of the installed micrograd's engine.py for the page's example."""

import importlib.util
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, PlainTextResponse

from ..assets import STATIC_DIR
from ..dependencies import SettingsDep, TemplatesDep
from ..sandbox import SANDBOX_PATH, sandbox_page

router = APIRouter(include_in_schema=False)

FAVICON = STATIC_DIR / "favicon.ico"
SWAGGER_UI = "vendor/swagger-ui.v5.35.0"  # + .bundle.js, .css, .LICENSE.txt (npm swagger-ui-dist)


# HEAD too: uptime checks and link checkers ask with it, and HTTP expects it wherever GET works.
@router.api_route("/", methods=["GET", "HEAD"], response_class=HTMLResponse)
async def index(request: Request, settings: SettingsDep, templates: TemplatesDep):
    return templates.TemplateResponse(
        request,
        "index.html",
        {
            "max_source_length": settings.max_source_length,
            "max_nodes": settings.max_nodes,
            "browser_run_seconds": settings.browser_run_seconds,
        },
    )


@router.get(SANDBOX_PATH, response_class=HTMLResponse)
def sandbox():
    """The frame a learner's TypeScript or JavaScript runs in (app/sandbox.py); its CSP is set in app/security.py."""
    return HTMLResponse(sandbox_page()[0])


@router.get("/docs", response_class=HTMLResponse)
async def docs(request: Request, templates: TemplatesDep):
    """Swagger UI on /openapi.json, from static/vendor/, so it works without internet."""
    openapi_url = request.scope.get("root_path", "") + request.app.openapi_url
    return templates.TemplateResponse(request, "docs.html", {"openapi_url": openapi_url, "swagger_ui": SWAGGER_UI})


@router.get("/favicon.ico")
def favicon():
    # Without it every page load logs a 404 in the console.
    return FileResponse(FAVICON, media_type="image/x-icon")


MICROGRAD_MISSING = """# micrograd is not installed on this server, so its engine.py cannot be shown here.
# (pip install micrograd on the server, or paste your own micrograd-style Value class here.)
"""


@router.get("/examples/micrograd-engine.py", response_class=PlainTextResponse)
def micrograd_engine():
    """The page's "micrograd's engine.py" example starts with this text: engine.py as the installed PyPI
    package has it, read now (valuegraph keeps no copy of it), or a comment saying it is not installed."""
    spec = importlib.util.find_spec("micrograd.engine") if importlib.util.find_spec("micrograd") else None
    if spec is None or spec.origin is None:
        return PlainTextResponse(MICROGRAD_MISSING)
    return PlainTextResponse(Path(spec.origin).read_text(encoding="utf-8"))
