"""The product app plus one trivial endpoint, for benchmarks only (never in app/).

The trivial endpoint reads the same request model as POST /backward and does no work, so
the gap between the two is what our own work costs. For uvicorn:
`uvicorn --factory benchmarks.apps:create_bench_app`.
"""

from fastapi import FastAPI

from app import schemas
from app.config import Settings
from app.dependencies import get_service, get_settings
from app.main import create_app

TRIVIAL_PATH = "/bench/trivial"


def create_bench_app(settings: Settings | None = None, async_dependencies: bool = False) -> FastAPI:
    app = create_app(settings)

    @app.post(TRIVIAL_PATH)
    async def trivial(request: schemas.BackwardRequest) -> dict[str, bool]:
        return {"ok": True}

    if async_dependencies:
        _use_async_dependencies(app)
    return app


def create_bench_app_with_async_dependencies() -> FastAPI:
    """What-if, for uvicorn --factory: the same app with its dependencies as async def."""
    return create_bench_app(async_dependencies=True)


def _use_async_dependencies(app: FastAPI) -> None:
    """FastAPI runs a plain-def dependency in the thread pool: a thread hop each. These
    overrides return the same objects from async functions, without the hop."""
    state = app.state

    async def settings_now():
        return state.settings

    async def service_now():
        return state.service

    app.dependency_overrides.update({get_settings: settings_now, get_service: service_now})
