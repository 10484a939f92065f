"""What routes get from the application they run in, as FastAPI dependencies (no globals):
create_app() stores these on app.state, so each app (and each test) has its own."""

import anyio
from fastapi import Request
from fastapi.templating import Jinja2Templates

from .config import Settings


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_templates(request: Request) -> Jinja2Templates:
    """Jinja2 templates from the repository's templates/ directory."""
    return request.app.state.templates


def get_work_limiter(request: Request) -> anyio.CapacityLimiter:
    """Bounds how many requests compute at once; the rest wait (within their time budget)."""
    return request.app.state.work_limiter
