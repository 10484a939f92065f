"""Helpers for the browser tests: opening a program, reading the player and the drawn nodes."""

import http.server
import re
import threading
from contextlib import contextmanager
from urllib.parse import quote

from playwright.sync_api import Error as PlaywrightError


def url_for(program, **params):
    query = "&".join(f"{key}={quote(str(value))}" for key, value in params.items())
    return f"/?expression={quote(program)}" + (f"&{query}" if query else "")


def wait_for_graph(page, nodes=None):
    """Until the graph for the current program is fully drawn (and, if given, has `nodes` nodes)."""
    page.wait_for_function(
        """(nodes) => {
            const svg = document.querySelector('[data-vg="graph"] svg');
            if (!svg || !svg.dataset.nodeCount) return false;
            const count = Number(svg.dataset.nodeCount);
            if (nodes !== null && count !== nodes) return false;
            return document.querySelectorAll('[data-node-id]').length === count
                && document.querySelector('[data-vg="caption"]').textContent !== '';
        }""",
        arg=nodes,
    )


def wait_until_still(page):
    """Until the graph stops moving: no camera move (fit, zoom, follow) and no record gliding to a
    new place is running (the svg's data-motion, set by static/js/motion.js)."""
    page.wait_for_function("() => document.querySelector('[data-vg=\"graph\"] svg')?.dataset.motion === 'still'")


# In the page: a promise of the next frame that fails instead of waiting for ever. page.evaluate has no timeout of
# its own, and headless Chromium can stop painting a page; a wait on requestAnimationFrame alone then hangs the run.
FRAME_MS = 10_000
NEXT_FRAME = f"""() => new Promise((done, fail) => {{
    const late = setTimeout(() => fail(new Error('no frame was painted in {FRAME_MS} ms')), {FRAME_MS});
    requestAnimationFrame(() => {{ clearTimeout(late); done(); }});
}})"""


def evaluate_in_frames(target, script, arg=None):
    """target.evaluate(script, arg) (a page or a frame) of a script that awaits NEXT_FRAME; if no frame came, once
    more after bringing the page to the front: Chromium paints no frames for a page it takes to be hidden."""
    try:
        return target.evaluate(script, arg)
    except PlaywrightError as error:
        if "no frame was painted" not in str(error):
            raise
        getattr(target, "page", target).bring_to_front()  # a frame's page, or the page itself
        return target.evaluate(script, arg)


def next_frames(page, frames=2):
    """Until the browser has painted `frames` more frames and run the tasks queued meanwhile (a
    PerformanceObserver's entries, a zoom's redraw)."""
    evaluate_in_frames(
        page,
        f"""async (frames) => {{
            const nextFrame = {NEXT_FRAME};
            for (let k = 0; k < frames; k++) await nextFrame();
            await new Promise((done) => setTimeout(done, 0));
        }}""",
        frames,
    )


def wait_for_scroll_to_settle(page, frames=10):
    """Until the page's scroll position has stayed the same for `frames` frames in a row (a
    touch fling has come to rest)."""
    evaluate_in_frames(
        page,
        f"""async (frames) => {{
            const nextFrame = {NEXT_FRAME};
            for (let last = window.scrollY, same = 0; same < frames; ) {{
                await nextFrame();
                same = window.scrollY === last ? same + 1 : 0;
                last = window.scrollY;
            }}
        }}""",
        frames,
    )


def wait_for_ticks(page, ticks):
    """As long as the player's timer takes for `ticks` steps at the speed chosen (controls.js's
    STEP_MS over the speed): a step that was going to come would have come by then."""
    page.evaluate(
        """async (ticks) => {
            const main = new URL(document.querySelector('script[type=module]').src).pathname;
            const { STEP_MS } = await import(main.replace(/main\\.js.*$/, 'controls.js'));
            const speed = Number(document.querySelector('[data-vg=speed]').value);
            await new Promise((done) => setTimeout(done, ticks * STEP_MS / speed));
        }""",
        ticks,
    )


def open_program(page, program, nodes=None, **params):
    page.goto(url_for(program, **params))
    wait_for_graph(page, nodes)


def step_of(page):
    return int(page.locator('[data-vg="scrubber"]').input_value())


def last_step(page):
    return int(page.locator('[data-vg="scrubber"]').get_attribute("max"))


def node(page, label):
    """The drawn node whose label cell reads `label`."""
    return page.locator("[data-node-id]").filter(
        has=page.locator(".vg-label", has_text=re.compile(f"^{re.escape(label)}$"))
    )


def grad_text(page, label):
    return node(page, label).locator(".vg-grad").text_content()


@contextmanager
def served_elsewhere(html: str):
    """A page served from another port of 127.0.0.1 (another origin, on the app's own network), such
    as a lesson that frames the embed; its URL until the block ends. (A made-up host routed by
    Playwright cannot frame a loopback page: Chromium refuses.)"""

    class Lesson(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/" else 204)  # 204: the favicon, without a console 404
            self.send_header("content-type", "text/html; charset=utf-8")
            self.end_headers()
            if self.path == "/":
                self.wfile.write(html.encode())

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Lesson)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()


# In the page: what of the graph is inside its panel: {boxes: {scope key: its title's height in px}, output: whether
# the output's record is}.
GRAPH_IN_VIEW = """() => {
    const panel = document.querySelector('[data-vg="graph"] svg').getBoundingClientRect();
    const inside = (r) => r.width > 0 && r.left >= panel.left && r.right <= panel.right
        && r.top >= panel.top && r.bottom <= panel.bottom;
    const output = document.querySelector('[data-valuegraph]').valuegraph.model.output;
    return {
        boxes: Object.fromEntries([...document.querySelectorAll('.vg-scope-box')]
            .map((box) => [box.dataset.scope, box.querySelector('.vg-scope-title').getBoundingClientRect()])
            .filter(([, title]) => inside(title)).map(([key, title]) => [key, title.height])),
        output: inside(document.querySelector(`[data-node-id="${output}"]`).getBoundingClientRect()),
    };
}"""
