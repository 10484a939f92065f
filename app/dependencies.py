"""What routes get from the application they run in, as FastAPI dependencies (no globals):
create_app() stores these on app.state, so each app (and each test) has its own. Every route takes
them as the *Dep types below, and reads nothing else from app.state.

They are `async def` because they only read app.state: FastAPI runs a plain `def` dependency
in the thread pool, and those hops were a quarter of a small request's time. They take the
HTTPConnection, so WebSocket routes use them too."""

from typing import Annotated

from fastapi import Depends
from fastapi.templating import Jinja2Templates
from starlette.requests import HTTPConnection

from .config import Settings
from .jobs import JobQueue, LocalJobs
from .rooms import Classroom
from .service import Service


async def get_settings(connection: HTTPConnection) -> Settings:
    return connection.app.state.settings


async def get_service(connection: HTTPConnection) -> Service:
    """The pipeline within this app's settings: its time budget, work limiter and response cache."""
    return connection.app.state.service


async def get_classroom(connection: HTTPConnection) -> Classroom:
    """Teach live's rooms served by this process."""
    return connection.app.state.classroom


def make_jobs(settings: Settings) -> JobQueue:
    """Where this app's jobs run: with VALUEGRAPH_REDIS_URL, on the queue that `valuegraph worker`
    processes share (any app process serves any job); else in a process pool of this server."""
    if settings.redis_url:
        from .jobs.redisjobs import RedisJobs  # imports rq, only installed with the [redis] extra

        return RedisJobs(settings)
    return LocalJobs(settings)


async def get_jobs(connection: HTTPConnection) -> JobQueue:
    """The jobs of this app (POST /runs), run in worker processes."""
    return connection.app.state.jobs


async def get_templates(connection: HTTPConnection) -> Jinja2Templates:
    return connection.app.state.templates


SettingsDep = Annotated[Settings, Depends(get_settings)]
ServiceDep = Annotated[Service, Depends(get_service)]
ClassroomDep = Annotated[Classroom, Depends(get_classroom)]
JobsDep = Annotated[JobQueue, Depends(get_jobs)]
TemplatesDep = Annotated[Jinja2Templates, Depends(get_templates)]
