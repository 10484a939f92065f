"""The one-line resize snippet of docs/teaching.md, pasted into a course page on another origin, makes the
embed's iframe as tall as its content."""

import re
from pathlib import Path
from urllib.parse import quote

from pagehelpers import served_elsewhere, wait_for_graph

TEACHING = Path(__file__).resolve().parents[2] / "docs" / "teaching.md"


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
    with served_elsewhere(course) as site:  # another origin than the embed's
        page.goto(site)
        check_height(page)


def check_height(page):
    page.wait_for_function("() => document.getElementById('vg').style.height !== ''")
    frame = page.frame(url=re.compile(r".*/embed\?.*"))
    wait_for_graph(frame, 4)  # and laid out for it: the embed lays out again once the graph's load ends
    page.wait_for_function("() => parseFloat(document.getElementById('vg').style.height) > 400")
    content_height = frame.evaluate(
        "Math.ceil(document.querySelector('[data-valuegraph-embed]').getBoundingClientRect().height)"
    )
    page.wait_for_function(f"() => parseFloat(document.getElementById('vg').style.height) === {content_height}")
    assert (
        page.evaluate("document.getElementById('vg').clientHeight") == content_height
    )  # inside its border: no scrollbar


def test_a_frame_with_the_tables_grows_to_them_whole_and_no_further(page, live_server):
    """The content's height is the graph at 300 px and the tables whole: a frame given it keeps the graph
    there (it grew, once, to 2,764 px: the tables' rows measured as tall as their unclipped tables)."""
    embed = f"{live_server}/embed?expression={quote('a = 2; b = 3; c = a * b; L = c + a')}&table=shown"
    course = (
        "<!doctype html><html><head><title>Course</title></head><body>"
        f'<iframe id="vg" src="{embed}" width="800" height="640" title="valuegraph"></iframe>{readme_snippet()}'
        "</body></html>"
    )
    with served_elsewhere(course) as site:
        page.goto(site)
        check_height(page)
        frame = page.frame(url=re.compile(r".*/embed\?.*"))
        graph = frame.evaluate("document.querySelector('[data-vg=graph]').getBoundingClientRect().height")
        assert 280 <= graph <= 420, f"the graph is {graph} px tall"
        tables = frame.evaluate("document.querySelector('.vg-tables').getBoundingClientRect().bottom")
        assert tables >= page.evaluate("document.getElementById('vg').clientHeight") - 40, "nothing empty below"
