"""The picture on a phone and in an iframe (issue 11): at 390×844 the graph comes first, readable at
Fit for chapter 2, nothing overflows sideways, the caption grows instead of clipping, and a one-finger
swipe over the graph scrolls the page (Move graph makes it pan the graph); the embed fits its frame."""

import sys
from pathlib import Path

import pytest
from pagehelpers import next_frames, open_program, wait_for_graph, wait_for_scroll_to_settle, wait_until_still
from playwright.sync_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs"))
import screenshots  # noqa: E402  (docs/screenshots.py, a script)

CHAPTER_2 = "a = 2\nb = 3\nc = a * b\nL = c + a"
PHONE = {"width": 390, "height": 844}


@pytest.fixture()
def phone(browser, base_url):
    context = browser.new_context(
        base_url=base_url, viewport=PHONE, has_touch=True, is_mobile=True, reduced_motion="reduce"
    )
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == []


def swipe_up(page, x, y, distance=300):
    cdp = page.context.new_cdp_session(page)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    for i in range(1, 11):
        cdp.send(
            "Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x, "y": y - distance * i / 10}]}
        )
        next_frames(page, 1)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    wait_for_scroll_to_settle(page)  # the scroll's fling settles


def view_of(page):
    return page.evaluate("[scrollY, d3.zoomTransform(document.querySelector('[data-vg=graph] svg')).toString()]")


def test_phone_graph_first_readable_at_fit_and_nothing_overflows(phone):
    open_program(phone, CHAPTER_2, nodes=4)
    graph_top = phone.locator('[data-vg="graph"]').bounding_box()["y"]
    assert graph_top < phone.locator('[data-vg="program"]').bounding_box()["y"], "the graph comes before the editor"
    assert graph_top < PHONE["height"] / 2, (
        "the graph starts in the first half of the first screen (under the title and the Teach live bar)"
    )
    phone.get_by_role("button", name="Fit to screen").click()
    smallest = phone.evaluate(
        "Math.min(...[...document.querySelectorAll('.vg-data')].map((t) => parseFloat(getComputedStyle(t).fontSize) * "
        "t.getScreenCTM().a))"
    )
    assert smallest >= 12, f"at Fit the numbers are {smallest:.1f} px"
    last = phone.evaluate("document.querySelector('[data-valuegraph]').valuegraph.timeline.last")
    for k in range(last + 1):
        phone.evaluate("(k) => document.querySelector('[data-valuegraph]').valuegraph.controls.go(k, 'step')", k)
        width = phone.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"step {k}: the page is {width} px wide"
        clipped = phone.evaluate(
            "(() => { const c = document.querySelector('[data-vg=caption]'); return c.scrollHeight - c.clientHeight; "
            "})()"
        )
        assert clipped <= 1, f"step {k}: the caption is cut by {clipped} px"


def test_one_finger_swipe_over_the_graph_scrolls_the_page_and_move_graph_pans_it(phone):
    open_program(phone, CHAPTER_2, nodes=4)
    box = phone.locator('[data-vg="graph"]').bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] * 0.8
    scroll, transform = view_of(phone)
    assert scroll == 0
    swipe_up(phone, x, y)
    after_scroll, after_transform = view_of(phone)
    assert after_scroll > 100 and after_transform == transform, "one finger scrolls the page, the graph stays"

    phone.evaluate("scrollTo(0, 0)")
    move = phone.get_by_role("button", name="Move graph")
    assert move.is_visible(), "a touch screen shows the Move graph toggle"
    move.click()
    assert move.get_attribute("aria-pressed") == "true"
    box = phone.locator('[data-vg="graph"]').bounding_box()
    swipe_up(phone, box["x"] + box["width"] / 2, box["y"] + box["height"] * 0.8, distance=150)
    scroll, moved = view_of(phone)
    assert scroll == 0 and moved != after_transform, "with Move graph on, one finger pans the graph"


@pytest.mark.parametrize(
    ("size", "query"),
    [((640, 400), "controls=minimal"), ((800, 640), ""), ((640, 640), ""), ((640, 400), ""), ((900, 560), "")],
    ids=["640x400-minimal", "share-default-800x640", "share-default-640x640", "640x400-full", "900x560-full"],
)
def test_the_embed_fits_its_frame(page, size, query):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(f"/embed?{query}")
    wait_for_graph(page, 4)
    assert page.evaluate("document.documentElement.scrollHeight") <= size[1], "nothing to scroll inside the frame"
    for name in ("play", "graph", "caption"):
        box = page.locator(f'[data-vg="{name}"]').bounding_box()
        assert box["y"] >= 0 and box["y"] + box["height"] <= size[1], f"{name} is in the frame"
    inside = page.evaluate(
        """() => { const g = document.querySelector('[data-vg="graph"]').getBoundingClientRect();
            return [...document.querySelectorAll('.vg-box')].every((b) => { const r = b.getBoundingClientRect();
                return r.left >= g.left && r.right <= g.right && r.top >= g.top && r.bottom <= g.bottom; }); }"""
    )
    assert inside, "the whole graph is in the frame (the embed opens on Fit; Follow is a press away)"
    program = page.locator('[data-vg="program"]')
    shown = program.evaluate("(t) => t.scrollHeight <= t.clientHeight || getComputedStyle(t).overflowY === 'auto'")
    assert shown, "the editor shows the whole program or scrolls"
    assert program.evaluate("(t) => t.clientHeight") >= 4 * 20, "chapter 2's four lines fit"


def test_the_docs_embed_picture_is_the_minimal_embed_one_step_in(page, artifacts):
    """docs/screenshots.py's picture of the embed, taken here into the artifacts folder."""
    screenshots.show_embed(page)
    assert page.locator('[data-vg="scrubber"]').input_value() == "1"
    assert page.evaluate("[innerWidth, innerHeight]") == [640, 400]
    page.screenshot(path=str(artifacts / "embed-640x400-minimal.png"))


def test_two_fingers_zoom_the_graph_without_move_graph(phone):
    open_program(phone, CHAPTER_2, nodes=4)
    box = phone.locator('[data-vg="graph"]').bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    scroll, before = view_of(phone)
    cdp = phone.context.new_cdp_session(phone)
    cdp.send(
        "Input.dispatchTouchEvent",
        {"type": "touchStart", "touchPoints": [{"x": x - 20, "y": y, "id": 0}, {"x": x + 20, "y": y, "id": 1}]},
    )
    for i in range(1, 11):
        cdp.send(
            "Input.dispatchTouchEvent",
            {
                "type": "touchMove",
                "touchPoints": [{"x": x - 20 - 8 * i, "y": y, "id": 0}, {"x": x + 20 + 8 * i, "y": y, "id": 1}],
            },
        )
        next_frames(phone, 1)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    wait_until_still(phone)
    next_frames(phone)
    after_scroll, after = view_of(phone)
    scale = lambda t: float(t.split("scale(")[1].rstrip(")"))  # noqa: E731
    assert scale(after) > 1.5 * scale(before), "a pinch zooms the graph"
    assert phone.get_by_role("button", name="Follow").get_attribute("aria-pressed") == "false", "and pauses following"


@pytest.mark.parametrize("size", [(1280, 720), (1024, 768), (390, 844)], ids=["1280x720", "1024x768", "phone"])
def test_the_stages_names_are_whole(page, size):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    open_program(page, CHAPTER_2, 4)
    names = page.locator(".vg-player .vg-stage-name")
    assert names.all_inner_texts() == ["1 · Topological sort", "2 · Propagation"]
    room = names.evaluate_all(
        """(names) => names.map((name) => { const text = document.createRange(); text.selectNodeContents(name);
            return name.clientWidth - text.getBoundingClientRect().width; })"""
    )
    assert min(room) >= 0, f"a name is cut short: {room}"


@pytest.mark.parametrize("size", [(1024, 768), (900, 700)], ids=["1024x768", "900x700"])
def test_a_small_laptop_shows_the_graph_and_the_player_on_the_first_screen(page, size):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    open_program(page, CHAPTER_2, 4)
    box = {
        name: page.locator(selector).bounding_box()
        for name, selector in [("graph", ".vg-graph"), ("play", ".vg-player [data-vg=play]"), ("editor", "#vg-program")]
    }
    assert box["graph"]["y"] + box["graph"]["height"] <= size[1], f"the whole picture is on the first screen: {box}"
    assert box["play"]["y"] + box["play"]["height"] <= size[1], f"so is Play: {box}"
    if size[0] >= 1000:  # beside the graph, so that typing shows the picture change
        assert box["editor"]["x"] + box["editor"]["width"] <= box["graph"]["x"], f"the editor is beside it: {box}"
        assert box["editor"]["y"] + box["editor"]["height"] <= size[1], f"and on the first screen too: {box}"
    summary = page.locator('[data-vg="graph-summary"]')  # cut short on a narrow head: whole in its tooltip
    expect(summary).to_have_attribute("title", "4 nodes · 4 edges · output L = 8")
