"""One page, three ways of serving it: the downloaded file (also the SCORM lesson and the notebook's
output), opened from disk with the network blocked, looks like the live embed of the same program
and options, at a desktop size and a phone's: the same elements visible, each in the same place and
size within a few pixels and with the same look (so no style of the page can be missing from the
file, as code-graph.css once was, which drew the program twice), nothing wider than the screen, and
no caption clipped at any step. The file's own legend (it travels without the page around it) is
the one element only it has: closed, over the graph's corner."""

from urllib.parse import quote

import httpx
import pytest
from pagehelpers import NEXT_FRAME, evaluate_in_frames, wait_for_graph

PROGRAM = "a = 2; b = 3; c = a * b; L = c + a"
TOLERANCE = 3  # px
LOOK = ("color", "backgroundColor", "fontSize", "fontWeight", "opacity", "visibility", "display")

MEASURE = """(look) => {
  const seen = {};
  for (const element of document.querySelectorAll('.vg-embed [data-vg]')) {
    const box = element.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    if (element.parentElement?.closest('details:not([open])')) continue; // folded away: nobody sees it
    const style = getComputedStyle(element);
    if (style.visibility === 'hidden') continue;
    seen[element.dataset.vg] = {
      box: [box.x, box.y, box.width, box.height].map(Math.round),
      look: look.map((property) => style[property]),
    };
  }
  return { seen, width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight };
}"""

CLIPPED_CAPTION = f"""async () => {{
  const nextFrame = {NEXT_FRAME};
  const caption = document.querySelector('[data-vg="caption"]');
  const scrubber = document.querySelector('[data-vg="scrubber"]');
  for (let step = 0; step <= Number(scrubber.max); step++) {{
    scrubber.value = step;
    scrubber.dispatchEvent(new Event('input'));
    await nextFrame();
    if (caption.scrollHeight > caption.clientHeight + 1) return step;
  }}
  scrubber.value = 0;
  scrubber.dispatchEvent(new Event('input'));
  await nextFrame();
  return null;
}}"""


@pytest.fixture(scope="module")
def downloaded(live_server, tmp_path_factory):
    answer = httpx.get(f"{live_server}/export/html", params={"expression": PROGRAM})
    assert answer.status_code == 200
    path = tmp_path_factory.mktemp("lesson") / "valuegraph.html"
    path.write_bytes(answer.content)
    return path


def seen_in(page, url, size, offline=False):
    page.set_viewport_size(size)
    blocked = []
    if offline:

        def only_files(route):
            if route.request.url.startswith("file://"):
                return route.continue_()
            blocked.append(route.request.url)
            return route.abort()

        page.context.route("**/*", only_files)
    page.goto(url)
    wait_for_graph(page, 4)
    page.wait_for_timeout(200)  # the frame's layout settles after the graph's first draw
    clipped = evaluate_in_frames(page, CLIPPED_CAPTION)
    measured = page.evaluate(MEASURE, list(LOOK))
    if offline:
        page.context.unroute("**/*")
    assert blocked == []
    return measured, clipped


@pytest.mark.parametrize(
    "size", [{"width": 1280, "height": 720}, {"width": 390, "height": 844}], ids=["1280x720", "390x844"]
)
def test_the_downloaded_file_looks_like_the_live_embed(page, downloaded, size):
    live, live_clipped = seen_in(page, f"/embed?expression={quote(PROGRAM)}", size)
    file, file_clipped = seen_in(page, downloaded.as_uri(), size, offline=True)
    assert live_clipped is None and file_clipped is None, (live_clipped, file_clipped)
    for seen in (live, file):
        assert seen["width"] <= size["width"] and seen["height"] <= size["height"], seen
    assert set(file["seen"]) - set(live["seen"]) == {"legend"}
    assert set(live["seen"]) - set(file["seen"]) == set()
    for name, shown in live["seen"].items():
        in_file = file["seen"][name]
        assert all(abs(a - b) <= TOLERANCE for a, b in zip(shown["box"], in_file["box"])), (name, shown, in_file)
        assert shown["look"] == in_file["look"], (
            name,
            dict(zip(LOOK, shown["look"])),
            dict(zip(LOOK, in_file["look"])),
        )
