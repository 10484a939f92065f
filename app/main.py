"""The ASGI application: `uvicorn app.main:app`, or create_app(settings) in tests."""

import gc
from contextlib import asynccontextmanager

import anyio
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.middleware.gzip import GZipMiddleware
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from . import __version__, compression
from .assets import STATIC_DIR, TEMPLATES_DIR, add_template_globals
from .cache import ResponseCache
from .config import Settings
from .dependencies import make_jobs
from .errors import JSONAnswer, register_error_handlers
from .middleware import BodySizeLimit, RequestBudget
from .rooms import Classroom
from .routes import api, classroom, embed, layout, oembed, pages, runs, scorm
from .security import SecurityHeaders, StaticVersions
from .service import Service


@asynccontextmanager
async def lifespan(app: FastAPI):
    # Long-lived start-up objects need no more collecting; freezing them keeps the collector's
    # passes over a large request's graph short.
    gc.freeze()
    yield
    await app.state.classroom.close()
    await app.state.jobs.close()


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings.from_environ()
    app = FastAPI(
        title="valuegraph",
        summary="See reverse-mode autodiff work one scalar at a time.",
        description=(
            "Run a small program of scalar operations and get its graph, its gradients and every step of the "
            "backward pass."
        ),
        version=__version__,
        lifespan=lifespan,
        # /docs is served from static/vendor/ by app.routes.pages (FastAPI's own loads a CDN);
        # ReDoc is not vendored, and an OAuth2 redirect has nothing to serve.
        docs_url=None,
        redoc_url=None,
        default_response_class=JSONAnswer,
    )
    app.state.settings = settings
    app.state.templates = Jinja2Templates(directory=TEMPLATES_DIR)
    add_template_globals(app.state.templates.env)
    static_versions = StaticVersions(STATIC_DIR)
    app.state.templates.env.globals["static_url"] = static_versions.template_function()
    app.state.work_limiter = anyio.CapacityLimiter(settings.worker_threads)
    app.state.response_cache = ResponseCache(settings.response_cache_bytes)
    app.state.service = Service(settings, app.state.work_limiter, app.state.response_cache)
    app.state.classroom = Classroom(app.state.service)
    app.state.jobs = make_jobs(settings)
    app.state.templates.env.globals["oembed_href"] = oembed.discovery_href
    register_error_handlers(app)

    # Added innermost first: CORS headers go on every answer, 413 included.
    # Inside the 413: that answer keeps its Content-Length while the rest of the body is read (gzip would stream it).
    # An answer already compressed (the columnar one, app.compression) passes through as it is.
    app.add_middleware(GZipMiddleware, minimum_size=1000, compresslevel=compression.LEVEL)
    app.add_middleware(
        BodySizeLimit,
        max_bytes=settings.max_body_bytes,
        max_graph_bytes=settings.max_graph_body_bytes,
        max_discard_bytes=settings.max_discard_bytes,
        linger_seconds=settings.linger_seconds,
        max_linger_bytes=settings.max_linger_bytes,
    )
    # Outside the 413, so reading the body counts against the budget too.
    app.add_middleware(RequestBudget, seconds=settings.time_budget, retry_after=settings.retry_after)
    # Outside the 413 and the 503, so those have the headers too.
    app.add_middleware(SecurityHeaders, static=static_versions)
    app.add_middleware(
        CORSMiddleware, allow_origins=["*"], allow_methods=["GET", "POST", "DELETE"], allow_headers=["*"]
    )

    app.include_router(api.router)
    app.include_router(layout.router)
    app.include_router(pages.router)
    app.include_router(embed.router)
    app.include_router(classroom.router)
    app.include_router(oembed.router)
    app.include_router(scorm.router)
    app.include_router(runs.router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR, check_dir=False), name="static")
    _add_openapi_examples(app)
    return app


def _add_openapi_examples(app: FastAPI) -> None:
    generate = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is None:
            app.openapi_schema = api.add_response_examples(generate())
        return app.openapi_schema

    app.openapi = openapi


app = create_app()
