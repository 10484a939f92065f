"""The embed fits its frame at every size, not at a few tested ones: one page per `controls` value,
resized through widths and heights (no reload), never scrolls, unless the frame is shorter than the
controls themselves, and then only once the graph has shrunk to nothing."""

from urllib.parse import quote

import pytest
from pagehelpers import NEXT_FRAME, evaluate_in_frames, wait_for_graph

CHAPTER_2 = "a = 2\nb = 3\nc = a * b\nL = c + a"
WIDTHS = (320, 640, 1280)
HEIGHTS = range(240, 901, 30)
# The frame's height from which nothing scrolls (the controls' own height, rounded up), by width.
FITS_FROM = {
    "full": {320: 380, 640: 260, 1280: 240},
    "minimal": {320: 320, 640: 240, 1280: 240},
    "none": {320: 280, 640: 240, 1280: 240},
}

MEASURE = f"""async () => {{
  const nextFrame = {NEXT_FRAME};
  await nextFrame();
  await nextFrame();
  const d = document.documentElement;
  return [d.scrollHeight - innerHeight, d.scrollWidth - innerWidth,
          document.querySelector('[data-vg="graph"]').getBoundingClientRect().height];
}}"""


@pytest.mark.parametrize("controls", ["full", "minimal", "none"])
def test_no_frame_size_scrolls_the_embed(page, controls):
    page.set_viewport_size({"width": 900, "height": 560})
    page.goto(f"/embed?expression={quote(CHAPTER_2)}&controls={controls}&table=shown")
    wait_for_graph(page, 4)
    if controls != "none":
        page.get_by_role("button", name="Step forward").click()
    scrolled = []
    for width in WIDTHS:
        for heights in (HEIGHTS, reversed(HEIGHTS)):  # both ways: no state left from the last size
            for height in heights:
                page.set_viewport_size({"width": width, "height": height})
                down, across, graph = evaluate_in_frames(page, MEASURE)
                if across > 0 or (down > 0 and (height >= FITS_FROM[controls][width] or graph > 10)):
                    scrolled.append((width, height, down, across, round(graph)))
    assert scrolled == [], "(width, height, px scrolled down, across, graph height) where the frame scrolls"


@pytest.mark.parametrize(
    ("size", "controls"), [((320, 600), "full"), ((900, 600), "full"), ((480, 300), "minimal"), ((1280, 620), "none")]
)
def test_the_first_layout_fits_too(page, size, controls):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(f"/embed?expression={quote(CHAPTER_2)}&controls={controls}")
    wait_for_graph(page, 4)
    down, across, graph = evaluate_in_frames(page, MEASURE)
    assert down <= 0 and across <= 0 and graph > 50
