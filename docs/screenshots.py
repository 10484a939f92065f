"""The documentation's pictures, made again after the page changes. From the repository root:

    python3 docs/screenshots.py

serves the app on 127.0.0.1, opens it in Debian's Chromium (`apt-get install chromium`; Playwright
comes with the test extra) and writes static/img/screenshot-chapter2.png,
static/img/screenshot-embed-640x400.png, and the downloaded file and a notebook output at a
desktop's size and a phone's (screenshot-file-*.png, screenshot-notebook-*.png). The browser tests
show the page the same way (the `show_*` functions below), check what it shows and take their
pictures into a temporary folder: the suite never writes into the checkout.
"""

import re
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[1]
IMAGES = REPO / "static" / "img"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update"]
CHAPTER_2 = "a = 2\nb = 3\nc = a * b\nL = c + a"


def wait_for_graph(page, nodes: int) -> None:
    """Until the graph is drawn and its load has ended (the caption is set then, and the embed's
    opening goto: a Step forward before it would be undone)."""
    page.wait_for_function(
        """(nodes) => {
            const svg = document.querySelector('[data-vg="graph"] svg');
            return svg && Number(svg.dataset.nodeCount) === nodes
                && document.querySelectorAll('[data-node-id]').length === nodes
                && document.querySelector('[data-vg="caption"]').textContent !== '';
        }""",
        arg=nodes,
    )


def show_chapter_2(page) -> None:
    """Chapter 2's graph as c passes its gradient to a and b (a's second contribution), with the
    update callouts and gradient flow on, and a's story over the graph (a click pins it)."""
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"/?expression={quote(CHAPTER_2)}&step=11")
    wait_for_graph(page, 4)
    page.get_by_role("button", name="Gradient flow").click()
    page.locator("[data-node-id]").filter(has=page.locator(".vg-label", has_text=re.compile("^a$"))).click()
    page.wait_for_timeout(400)  # the fit and the transitions settle


def show_embed(page) -> None:
    """The embed at 640×400 with controls=minimal, one step into the walk."""
    page.set_viewport_size({"width": 640, "height": 400})
    page.goto("/embed?controls=minimal")
    wait_for_graph(page, 4)
    page.get_by_role("button", name="Step forward").click()


DESKTOP, PHONE = {"width": 1280, "height": 720}, {"width": 390, "height": 844}


def show_downloaded_file(size):
    """The file /export/html answers, opened from disk with the network blocked, a few steps in."""

    def show(page) -> None:
        page.set_viewport_size(size)
        answer = page.request.get(f"/export/html?expression={quote(CHAPTER_2)}&step=9&title=Chapter%202")
        path = Path(tempfile.mkdtemp()) / "valuegraph.html"
        path.write_bytes(answer.body())
        page.context.route(
            "**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort()
        )
        page.goto(path.as_uri())
        wait_for_graph(page, 4)
        page.wait_for_timeout(400)

    return show


def show_notebook_output(size):
    """show(L) for chapter 2's graph built in Python, as a notebook's page holds its output."""

    def show(page) -> None:
        sys.path.insert(0, str(REPO))
        from app.notebook import show as notebook_show
        from engine import Value

        a, b = Value(2.0, label="a"), Value(3.0, label="b")
        c = a * b
        L = c + a
        L.label = "L"
        page.set_viewport_size(size)
        page.set_content(
            "<!doctype html><title>notebook</title><body style='margin: 8px; font-family: sans-serif'>"
            "<p>In [3]: show(L, step=9)</p>" + notebook_show(L, step=9, alone=True)._repr_html_()
        )
        frame = page.frame_locator("iframe")
        frame.locator("[data-node-id]").first.wait_for()
        page.wait_for_timeout(600)

    return show


PICTURES = {
    "screenshot-chapter2.png": show_chapter_2,
    "screenshot-embed-640x400.png": show_embed,
    "screenshot-file-1280x720.png": show_downloaded_file(DESKTOP),
    "screenshot-file-390x844.png": show_downloaded_file(PHONE),
    "screenshot-notebook-1280x720.png": show_notebook_output(DESKTOP),
    "screenshot-notebook-390x844.png": show_notebook_output(PHONE),
}


def serve():
    """The app on a free port in a background thread: (server, base URL)."""
    import uvicorn

    sys.path.insert(0, str(REPO))
    from app.main import create_app

    server = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=0, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline:
            raise SystemExit("the server did not start")
        time.sleep(0.02)
    return server, f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"


def main() -> None:
    from playwright.sync_api import sync_playwright

    server, url = serve()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            for name, show in PICTURES.items():
                context = browser.new_context(base_url=url, reduced_motion="reduce")
                page = context.new_page()
                show(page)
                page.screenshot(path=str(IMAGES / name))
                context.close()
                print(f"wrote {(IMAGES / name).relative_to(REPO)}")
            browser.close()
    finally:
        server.should_exit = True


if __name__ == "__main__":
    main()
