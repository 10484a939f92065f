"""What routes get from the application they run in, as FastAPI dependencies (no globals):
create_app() stores these on app.state, so each app (and each test) has its own.

They are `async def` because they only read app.state: FastAPI runs a plain `def` dependency
in the thread pool, and those hops were a quarter of a small request's time."""

from typing import Annotated

import anyio
from fastapi import Depends, Request

from .cache import ResponseCache
from .config import Settings
from .service import Service


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_work_limiter(request: Request) -> anyio.CapacityLimiter:
    """Bounds how many requests compute at once; the rest wait (within their time budget)."""
    return request.app.state.work_limiter


async def get_response_cache(request: Request) -> ResponseCache:
    return request.app.state.response_cache


async def get_service(request: Request) -> Service:
    """The pipeline within this app's settings, budget, limiter and cache (app/service.py)."""
    return request.app.state.service


ServiceDep = Annotated[Service, Depends(get_service)]
