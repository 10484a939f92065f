"""Collapsed scopes: what folding a scope costs, beside the request that loads the program.

    python -m benchmarks.bench_scopes [--quick]

For micrograd programs whose graphs open with layers collapsed (an MLP(3, [4, 4, 1]) forward pass,
a program's own network classes trained for 15 steps): the page is opened in headless Chromium and the body it sends to
POST /layout (the collapsed view as children lists) is captured. Then, side by side:
- POST /layout with that body, in-process (median), against POST /backward for the same program
  with trace and layout, as the page asks for it (median): the layout of the folded view is the
  extra server work a collapsed graph costs;
- in the page, a click on a layer box until the expanded graph is drawn (a new /layout request and
  the redraw), median over fresh page loads.
"""

import argparse
import asyncio
import json
import shutil
import time
from urllib.parse import quote

import httpx

from app.config import Settings
from app.main import create_app
from benchmarks.bench_browser import CHROMIUM, CHROMIUM_FLAGS
from benchmarks.bench_http import Server
from benchmarks.common import REPO, median, ms, print_table, ratio

MLP_FORWARD = "from micrograd.nn import MLP\n\nn = MLP(3, [4, 4, 1])\nx = [0.4, -1.2, 2.5]\ny = n(x)\ny.backward()\n"
PROGRAMS = {
    "MLP(3, [4, 4, 1]) forward": MLP_FORWARD,
    "own network classes, 15 training steps": (REPO / "tests" / "corpus" / "own_classes_mlp_training.py").read_text(
        encoding="utf-8"
    ),
}
# The clicked box is gone and every node the SVG counts is on screen.
EXPANDED = """(key) => {
  const svg = document.querySelector('[data-vg="graph"] svg');
  const gone = ![...document.querySelectorAll('.vg-scope-box')].some((box) => box.dataset.scope === key);
  return gone && document.querySelectorAll('[data-node-id]').length === Number(svg.dataset.nodeCount);
}"""


def _wait_drawn(page):
    page.wait_for_function(
        "() => { const svg = document.querySelector('[data-vg=\"graph\"] svg');"
        " return svg && document.querySelectorAll('[data-node-id]').length === Number(svg.dataset.nodeCount) && "
        "document.querySelector('.vg-scope-box'); }"
    )


def _browser(server_url, program, loads):
    """The /layout body the page sends, and click-to-expanded times (s) over fresh page loads."""
    from playwright.sync_api import sync_playwright

    bodies, times = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            for _ in range(loads):
                page = browser.new_page(viewport={"width": 1280, "height": 720})
                page.on("request", lambda r: bodies.append(r.post_data) if r.url.endswith("/layout") else None)
                page.goto(f"{server_url}/?expression={quote(program)}")
                _wait_drawn(page)
                key = page.locator(".vg-scope-box").nth(1).get_attribute("data-scope")
                started = page.evaluate(
                    "() => { const t = performance.now(); const box = document.querySelectorAll('.vg-scope-box')[1]; "
                    "box.dispatchEvent(new MouseEvent('click', {bubbles: true})); return t; }"
                )
                page.wait_for_function(EXPANDED, arg=key, polling="raf")
                times.append((page.evaluate("performance.now()") - started) / 1e3)
                page.close()
        finally:
            browser.close()
    return json.loads(bodies[0]), times


async def _server(program, layout_body, runs):
    app = create_app(Settings(response_cache_bytes=1))  # nothing cached: every request computes
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as client:
        backward_body = {"expression": program, "trace": True, "layout": True}

        async def timed(path, body):
            samples = []
            for _ in range(runs):
                started = time.perf_counter()
                (await client.post(path, json=body)).raise_for_status()
                samples.append(time.perf_counter() - started)
            return median(samples)

        return await timed("/layout", layout_body), await timed("/backward", backward_body)


def main(quick=False):
    if not shutil.which(CHROMIUM):
        print(f"\n{CHROMIUM} is not installed (apt-get install chromium): the scope benchmark is skipped.")
        return
    runs, loads = (10, 2) if quick else (200, 7)
    rows = []
    with Server(1) as server:
        for name, program in PROGRAMS.items():
            body, clicks = _browser(server.url, program, loads)
            layout_time, backward_time = asyncio.run(_server(program, body, runs))
            rows.append(
                (
                    name,
                    f"{len(body['children']):,}",
                    ms(layout_time),
                    ms(backward_time),
                    ratio(layout_time, backward_time),
                    ms(median(clicks)),
                )
            )
    print_table(
        "Collapsed scopes: POST /layout for the folded view beside POST /backward for the program (in-process, median "
        "ms), and a click that expands a layer in Chromium",
        (
            "program",
            "items folded view",
            "/layout ms",
            "/backward ms (trace, layout)",
            "ratio",
            "click -> expanded drawn ms",
        ),
        rows,
        [
            "Click: from the click on a layer box to the frame where the expanded graph is complete (a new /layout "
            "request through uvicorn and the redraw), median over fresh page loads at 1280x720."
        ],
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
