"""Browser tests: Debian's Chromium driven by pytest-playwright, against the real app served by
uvicorn on 127.0.0.1 (a free port) for the whole session.

Chromium comes from `apt-get install chromium` (/usr/bin/chromium); `playwright install` is not
needed (it downloads a browser, which these machines cannot).
"""

import re
import threading
import time
from pathlib import Path

import pytest
import uvicorn

from app.main import create_app

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps trying to reach Google's services.
CHROMIUM_FLAGS = [
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1440, "height": 1000}


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_FLAGS}


@pytest.fixture(scope="session")
def live_server():
    """The real app on 127.0.0.1, port chosen by the OS; its base URL."""
    server = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="session")
def base_url(live_server):
    return live_server


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": VIEWPORT, "reduced_motion": "reduce"}


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory):
    """Screenshots and reports to look at after a run: in pytest's temporary folder (the newest run's
    is /tmp/pytest-of-$USER/pytest-current/artifacts), never in the checkout."""
    return tmp_path_factory.mktemp("artifacts", numbered=False)


@pytest.fixture(autouse=True)
def no_console_errors(page, request):
    """Every test fails on a console error or an uncaught exception, except the ones it expects
    (@pytest.mark.allow_console(r"regex"), e.g. the 400 that a program error is answered with)."""
    problems = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(f"uncaught: {error}"))
    yield
    allowed = [re.compile(pattern) for marker in request.node.iter_markers("allow_console") for pattern in marker.args]
    unexpected = [p for p in problems if not any(a.search(p) for a in allowed)]
    assert unexpected == [], f"console errors: {unexpected}"


def pytest_configure(config):
    config.addinivalue_line("markers", "allow_console(*patterns): console errors this test expects")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Browser tests run last: from its first use to the end of the session, Playwright's sync API
    keeps an asyncio loop running in the main thread, where async tests could then not start theirs."""
    here = Path(__file__).resolve().parent
    items.sort(key=lambda item: Path(item.path).resolve().is_relative_to(here))
