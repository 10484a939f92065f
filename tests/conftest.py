"""Shared fixtures: the real ASGI app, driven in-process through httpx (tests marked anyio)."""

from contextlib import AsyncExitStack

import httpx
import pytest

from app.config import Settings
from app.main import create_app


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
async def make_client():
    """make_client(**settings) -> an httpx.AsyncClient on a fresh app with those settings."""
    async with AsyncExitStack() as clients:

        def make(**settings) -> httpx.AsyncClient:
            app = create_app(Settings(**settings))
            client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
            clients.push_async_callback(client.aclose)
            return client

        yield make


@pytest.fixture
async def client(make_client) -> httpx.AsyncClient:
    return make_client()
