"""The one-line resize snippet of docs/teaching.md, pasted into a course page on another origin, makes the
embed's iframe as tall as its content."""

import http.server
import re
import threading
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

TEACHING = Path(__file__).resolve().parents[2] / "docs" / "teaching.md"


@contextmanager
def course_site(html: str):
    """The course page, served from another port of 127.0.0.1: another origin than the embed's.
    (A made-up host routed by Playwright cannot frame a loopback page: Chromium refuses.)"""
    body = html.encode()

    class Course(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Course)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def readme_snippet() -> str:
    (snippet,) = re.findall(r"```html\n(<script>[^\n]*valuegraph:height[^\n]*</script>)\n```", TEACHING.read_text())
    return snippet


def test_the_readme_snippet_resizes_the_frame_to_its_content(page, live_server):
    snippet = readme_snippet()
    assert snippet.count("\n") == 0 and len(snippet) < 250
    embed = f"{live_server}/embed?expression={quote('a = 2; b = 3; L = a * b + a')}&table=shown"
    course = (
        "<!doctype html><html><head><title>Course</title></head><body>"
        f'<iframe id="vg" src="{embed}" width="900" height="150" title="valuegraph"></iframe>{snippet}</body></html>'
    )
    with course_site(course) as site:
        page.goto(f"{site}/lesson.html")
        check_height(page)


def check_height(page):
    page.wait_for_function("document.getElementById('vg').style.height !== ''")
    frame = page.frame(url=re.compile(r".*/embed\?.*"))
    frame.wait_for_selector("[data-node-id]")
    page.wait_for_function("parseFloat(document.getElementById('vg').style.height) > 400")
    content_height = frame.evaluate(
        "Math.ceil(document.querySelector('[data-valuegraph-embed]').getBoundingClientRect().height)"
    )
    page.wait_for_function(f"parseFloat(document.getElementById('vg').style.height) === {content_height}")
    assert (
        page.evaluate("document.getElementById('vg').clientHeight") == content_height
    )  # inside its border: no scrollbar
