"""SVG and PNG of the graph of a self-contained file (app.export.standalone), drawn by headless
Chromium through Playwright: the image is what the page draws, not a second renderer."""

import base64
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
IMAGE_KINDS = ("svg", "png")


class ExportError(Exception):
    """An export that cannot be made here (no browser), with the reason to show."""


def render_image(html: str, kind: str, step: int | None = None) -> bytes:
    """The graph of a standalone file as SVG or PNG, at `step` (default: the end of the walk),
    drawn by headless Chromium through Playwright."""
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError as error:
        raise ExportError(
            "SVG and PNG export need Playwright: pip install 'valuegraph[export]' "
            "(and Chromium at /usr/bin/chromium; Debian: apt-get install chromium)"
        ) from error
    if not Path(CHROMIUM).exists():
        raise ExportError(f"SVG and PNG export need Chromium at {CHROMIUM} (Debian: apt-get install chromium)")
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.route("**/*", lambda route: route.abort())  # the file needs nothing from outside
                page.set_content(html)
                page.wait_for_function(
                    "() => document.querySelectorAll('[data-node-id]').length > 0 && window.valuegraphExport"
                )
                target = "document.querySelector('[data-vg=\"scrubber\"]').max" if step is None else str(int(step))
                page.evaluate(
                    f"() => {{ const s = document.querySelector('[data-vg=\"scrubber\"]'); s.value = {target}; "
                    "s.dispatchEvent(new Event('input')); }"
                )
                page.wait_for_timeout(50)
                if kind == "svg":
                    return page.evaluate("() => window.valuegraphExport.svg()").encode("utf-8")
                return base64.b64decode(page.evaluate("() => window.valuegraphExport.png()"))
            finally:
                browser.close()
    except PlaywrightError as error:
        raise ExportError(f"the browser could not draw the graph: {error.message.splitlines()[0]}") from error
