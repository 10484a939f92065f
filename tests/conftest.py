"""Shared fixtures: the real ASGI app, driven in-process through httpx (tests marked anyio); and the
checkout stays as it was: a run that changes or adds a file git sees fails."""

import functools
import hashlib
import inspect
import subprocess
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import httpx
import pytest

from app.config import Settings
from app.main import create_app

ROOT = Path(__file__).resolve().parent.parent
CHECKOUT_BEFORE = pytest.StashKey[dict | None]()


def checkout_state() -> dict[str, str] | None:
    """{path: git's status and a hash of the content} for every file that differs from the commit
    or is untracked (ignored files left out), or None outside a git checkout."""
    try:
        status = subprocess.run(["git", "status", "--porcelain", "-z"], cwd=ROOT, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if status.returncode != 0:
        return None
    state = {}
    for entry in filter(None, status.stdout.decode(errors="replace").split("\0")):
        path = ROOT / entry[3:]
        content = hashlib.sha1(path.read_bytes()).hexdigest() if path.is_file() else "-"
        state[entry[3:]] = f"{entry[:2]} {content}"
    return state


def pytest_sessionstart(session):
    session.config.stash[CHECKOUT_BEFORE] = checkout_state()


def pytest_sessionfinish(session):
    """Tests write only to temporary folders (issue 23): the README's pictures are made by
    docs/screenshots.py, the fuzzer's new inputs go to a temporary corpus."""
    before, after = session.config.stash.get(CHECKOUT_BEFORE, None), checkout_state()
    if before is None or after is None or before == after:
        return
    changed = sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    reporter.ensure_newline()
    reporter.write_line(f"the test run changed files in the checkout: {', '.join(changed)}", red=True, bold=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """The suite runs on two workers (pyproject's addopts: -n 2): one runs the browser tests, the
    other everything else, each in the order a run on one process gives it. Playwright's sync API
    keeps an event loop running in its process, which the anyio tests cannot share (a run on one
    process puts the browser tests last for the same reason); and tests that count threads or
    processes of their own see only their own partition's."""
    from xdist.scheduler import LoadScopeScheduling

    class BrowserTestsApart(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return "browser" if nodeid.startswith("tests/browser/") else "the rest"

    return BrowserTestsApart(config, log)


# Below pyproject's timeout (300 s). When that one fires in an async test, the test's task is left waiting and the
# teardown of its async fixtures (which anyio runs in the same task) waits behind it for ever; a deadline inside
# the event loop fails the test with TimeoutError and lets the teardown run.
ASYNC_TEST_SECONDS = 240


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    test = pyfuncitem.obj
    if inspect.iscoroutinefunction(test):

        @functools.wraps(test)
        async def within_deadline(*args, **kwargs):
            with anyio.fail_after(ASYNC_TEST_SECONDS):
                return await test(*args, **kwargs)

        pyfuncitem.obj = within_deadline


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
