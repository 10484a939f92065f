"""The embed at small sizes and on phones: a small frame is chosen, not suffered. At the documented
minimum sizes the graph keeps a visible height (read from the drawn graph, not assumed), nothing is
wider or taller than the frame; below them the embed falls back to the graph and a minimal player,
as oEmbed asks for a small frame; the caption grows to its text on a phone instead of being clipped;
the Teach live bar shows only where a room is asked for."""

from urllib.parse import quote

import httpx
import pytest
from pagehelpers import NEXT_FRAME, evaluate_in_frames, served_elsewhere, wait_for_graph
from playwright.sync_api import expect

PROGRAM = "a = 2; b = 3; c = a * b; L = c + a"
MIN_GRAPH = 120  # px of graph that must stay visible at every documented size

# (width, height, controls): the README's minimum sizes at which nothing scrolls, and the small
# frames below them (300×200: oEmbed's maxwidth=300&maxheight=200).
SIZES = [
    (300, 200, "full"),
    (300, 200, "minimal"),
    (320, 380, "full"),
    (480, 310, "full"),
    (640, 260, "full"),
    (640, 240, "minimal"),
    (640, 400, "minimal"),
    (1280, 720, "full"),
]


def measure(page):
    return page.evaluate(
        """() => {
          const g = document.querySelector('[data-vg="graph"]').getBoundingClientRect();
          const visible = Math.max(0, Math.min(g.bottom, innerHeight) - Math.max(g.top, 0));
          const shown = (selector) =>
            [...document.querySelectorAll(selector)].some((e) => e.getClientRects().length > 0);
          return {
            graph: visible,
            width: document.documentElement.scrollWidth,
            height: document.documentElement.scrollHeight,
            editor: shown('.vg-editor-panel'),
            play: shown('[data-vg="play"]'),
            fit: document.querySelector('.vg-embed').dataset.fit ?? null,
          };
        }"""
    )


@pytest.mark.parametrize("width, height, controls", SIZES, ids=[f"{w}x{h}-{c}" for w, h, c in SIZES])
def test_the_graph_keeps_a_visible_height_at_every_documented_size(page, width, height, controls):
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"/embed?expression={quote(PROGRAM)}&controls={controls}")
    wait_for_graph(page, 4)
    seen = measure(page)
    assert seen["graph"] >= MIN_GRAPH, seen
    assert seen["width"] <= width and seen["height"] <= height, seen  # nothing scrolls
    assert seen["play"], seen
    if (width, height) == (300, 200):
        assert seen["fit"] == "small" and not seen["editor"], seen  # the graph and a minimal player
    if width >= 1280:
        assert seen["fit"] is None and seen["editor"], seen


@pytest.mark.parametrize("query", ["controls=minimal&table=shown", "table=shown", ""])
def test_a_taller_frame_never_drops_the_controls_a_shorter_one_shows(page, query):
    # 800 px wide, growing 10 px at a time: once the editor shows, it stays (the tall layout that would leave only
    # the graph gives way to the short one, the editor beside the graph)
    page.set_viewport_size({"width": 800, "height": 540})
    page.goto(f"/embed?expression={quote(PROGRAM)}&{query}")
    wait_for_graph(page, 4)
    shown = []
    for height in range(540, 960, 10):
        page.set_viewport_size({"width": 800, "height": height})
        page.evaluate(NEXT_FRAME)
        page.evaluate(NEXT_FRAME)  # the frame's layout is fitted on resize, then drawn
        shown.append((height, measure(page)["editor"]))
    first = next(i for i, (_, editor) in enumerate(shown) if editor)
    assert all(editor for _, editor in shown[first:]), shown


def test_oembeds_small_frame_shows_the_graph(page, live_server):
    answer = httpx.get(
        f"{live_server}/oembed",
        params={"url": f"{live_server}/?expression={quote(PROGRAM)}", "maxwidth": 300, "maxheight": 200},
    ).json()
    page.set_viewport_size({"width": 400, "height": 300})
    with served_elsewhere(f"<!doctype html><title>a CMS</title><body style='margin:0'>{answer['html']}") as cms:
        page.goto(cms)
        frame = page.frame_locator("iframe")
        frame_shows_the_graph(page, frame)


def frame_shows_the_graph(page, frame):
    expect(frame.locator("[data-node-id]")).to_have_count(4)
    box = page.locator("iframe").bounding_box()
    assert (box["width"], box["height"]) == (300, 200)
    graph = frame.locator('[data-vg="graph"]').bounding_box()
    assert graph["height"] >= MIN_GRAPH and graph["y"] + graph["height"] <= box["y"] + box["height"]
    expect(frame.locator(".vg-editor-panel")).to_be_hidden()


def caption_clipped_at_any_step(frame_or_page):
    """Walks every step and returns the first step whose caption is cut (its text taller than its box)."""
    return evaluate_in_frames(
        frame_or_page,
        f"""async () => {{
          const nextFrame = {NEXT_FRAME};
          const caption = document.querySelector('[data-vg="caption"]');
          const scrubber = document.querySelector('[data-vg="scrubber"]');
          for (let step = 0; step <= Number(scrubber.max); step++) {{
            scrubber.value = step;
            scrubber.dispatchEvent(new Event('input'));
            await nextFrame();
            if (caption.scrollHeight > caption.clientHeight + 1) return {{step, text: caption.textContent}};
          }}
          return null;
        }}""",
    )


def test_the_caption_grows_on_a_phone_alone_and_in_a_360px_frame(page, live_server):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/embed?expression={quote(PROGRAM)}")
    wait_for_graph(page, 4)
    assert caption_clipped_at_any_step(page) is None
    assert page.evaluate("document.documentElement.scrollWidth") <= 390

    lesson = (
        f"<!doctype html><title>lesson</title><iframe src='{live_server}/embed?expression={quote(PROGRAM)}' "
        "width='360' height='700' style='border:0'></iframe>"
    )
    with served_elsewhere(lesson) as site:
        page.goto(site)
        frame = page.frames[1]
        wait_for_graph(frame, 4)  # loaded: its opening goto(0) cannot come in the middle of the walk below
        assert caption_clipped_at_any_step(frame) is None


def test_the_teach_live_bar_shows_only_where_a_room_is_asked_for(page):
    page.goto(f"/embed?expression={quote(PROGRAM)}&controls=full")
    wait_for_graph(page, 4)
    expect(page.locator("[data-vg-classroom]")).to_have_count(0)
