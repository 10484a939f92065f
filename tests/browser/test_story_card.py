"""A node clicked tells its story where the learner is looking: as a card over the graph, on a
laptop's first screen, in presenter mode and in the embed; the card's close button and Escape unpin."""

from urllib.parse import quote

import httpx
import pytest
from pagehelpers import next_frames, node, open_program, step_of, wait_for_graph, wait_until_still
from playwright.sync_api import expect

CHAPTER_2 = "a = 2; b = 3; c = a * b; L = c + a"
STORY = '[data-vg="story"]'
LAPTOPS = [(1280, 720), (1024, 768)]


def inside(inner, outer, slack=0.5):
    return (
        inner["x"] >= outer["x"] - slack
        and inner["y"] >= outer["y"] - slack
        and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + slack
        and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + slack
    )


def assert_card_tells(page, label, grad, width, height):
    """The story of `label`, whose grad reads `grad`, is on screen over the graph."""
    story = page.locator(STORY)
    expect(story.get_by_role("button", name="Close the node's story")).to_be_visible()
    next_frames(page)  # the card picks its corner in the next frame
    box = story.bounding_box()
    assert inside(box, {"x": 0, "y": 0, "width": width, "height": height}), f"the story is off screen: {box}"
    assert inside(box, page.locator('[data-vg="graph"]').bounding_box()), "the story is over the graph"
    assert story.locator("h3").text_content().startswith(label)
    assert f"grad = {grad}" in story.text_content()
    assert page.get_by_role("region", name="A node's story").count() == 1, "one story, not a copy"
    # Not hiding the node clicked: the node stays where a second click lands.
    centre = node(page, label).bounding_box()
    point = {"x": centre["x"] + centre["width"] / 2, "y": centre["y"] + centre["height"] / 2}
    assert not inside({**point, "width": 0, "height": 0}, box), "the card hides the node clicked"


def assert_card_closed(page, width, height):
    story = page.locator(STORY)
    expect(story.get_by_role("button", name="Close the node's story")).to_be_hidden()
    graph = page.locator('[data-vg="graph"]').bounding_box()
    box = story.bounding_box()
    assert box is None or not inside(box, graph), "the story left the graph"


@pytest.mark.parametrize(("width", "height"), LAPTOPS)
def test_a_click_shows_the_story_over_the_graph_and_close_or_escape_unpins(page, width, height):
    page.set_viewport_size({"width": width, "height": height})
    open_program(page, CHAPTER_2, nodes=4)
    page.get_by_role("button", name="End", exact=True).click()
    node(page, "a").click()
    assert_card_tells(page, "a", 4, width, height)
    page.get_by_role("button", name="Close the node's story").click()
    assert_card_closed(page, width, height)
    node(page, "c").locator("[tabindex]").focus()
    page.keyboard.press("Enter")  # the keyboard pins as a click does
    assert_card_tells(page, "c", 1, width, height)
    page.keyboard.press("Escape")
    assert_card_closed(page, width, height)
    expect(page.locator(STORY).locator("h3")).to_have_text("c = a * b")  # the focused node's story, at home


def test_presenter_mode_shows_the_card_and_its_first_escape_closes_only_the_card(page):
    width, height = 1280, 720
    page.set_viewport_size({"width": width, "height": height})
    open_program(page, CHAPTER_2, nodes=4)
    page.get_by_role("button", name="End", exact=True).click()
    page.get_by_role("button", name="Presenter").click()
    node(page, "b").click()
    assert_card_tells(page, "b", 2, width, height)
    page.keyboard.press("Escape")
    assert_card_closed(page, width, height)
    assert page.get_by_role("button", name="Leave presenter").get_attribute("aria-pressed") == "true"
    page.keyboard.press("Escape")
    assert page.get_by_role("button", name="Presenter").get_attribute("aria-pressed") == "false"


@pytest.mark.parametrize(("width", "height"), [*LAPTOPS, (390, 844)])
def test_the_embed_shows_the_card_while_a_node_is_pinned(page, width, height):
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"/embed?expression={quote(CHAPTER_2)}")
    wait_for_graph(page, 4)
    page.keyboard.press("End")  # the walk's end: every grad filled in
    expect(page.locator(STORY)).to_be_hidden()  # no room for it in the embed until a node is pinned
    node(page, "a").click()
    assert_card_tells(page, "a", 4, width, height)
    page.get_by_role("button", name="Close the node's story").click()
    expect(page.locator(STORY)).to_be_hidden()
    node(page, "L").click()
    assert_card_tells(page, "L", 1, width, height)
    page.keyboard.press("Escape")
    expect(page.locator(STORY)).to_be_hidden()


def test_a_phone_shows_the_card_over_the_graph_at_its_width(page):
    width, height = 390, 844
    page.set_viewport_size({"width": width, "height": height})
    open_program(page, CHAPTER_2, nodes=4)
    page.keyboard.press("End")  # the walk's end, without scrolling to the player
    node(page, "a").click()
    assert_card_tells(page, "a", 4, width, height)
    graph = page.locator('[data-vg="graph"]').bounding_box()
    assert page.locator(STORY).bounding_box()["width"] >= graph["width"] - 20


def overlaps(a, b):
    across = a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
    return across and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"]


@pytest.mark.parametrize(("width", "height"), [*LAPTOPS, (1400, 900)])
def test_the_camera_shows_the_walk_beside_the_card_and_the_whole_box_again_when_it_closes(page, width, height):
    """While a node's card is open the view follows the walk in the rest of the graph's box: the step's node
    is never under the card (at 1400x900, the README's picture, the card over a corner hid the output)."""
    page.set_viewport_size({"width": width, "height": height})
    open_program(page, CHAPTER_2, nodes=4)
    page.get_by_role("button", name="End", exact=True).click()
    wait_until_still(page)
    view = page.locator('[data-vg="graph"] svg > g').first
    before = view.get_attribute("transform")
    node(page, "b").click()
    assert_card_tells(page, "b", 2, width, height)
    wait_until_still(page)
    told = node(page, "b").bounding_box()  # the node the card tells of: in view beside it
    graph = page.locator('[data-vg="graph"]').bounding_box()
    assert inside(told, graph, slack=2) and not overlaps(told, page.locator(STORY).bounding_box()), "b is out of view"
    for _ in range(6):  # back through the propagation: each step's node in view beside the card
        page.get_by_role("button", name="Step back").click()
        wait_until_still(page)
        card = page.locator(STORY).bounding_box()
        focus = page.locator("[data-node-id].is-focus")
        if focus.count():
            assert not overlaps(focus.bounding_box(), card), f"the card hides the step's node at step {step_of(page)}"
    page.get_by_role("button", name="End", exact=True).click()
    page.keyboard.press("Escape")
    assert_card_closed(page, width, height)
    wait_until_still(page)
    assert view.get_attribute("transform") == before, "the view fills its box again"


def test_escape_in_the_share_dialog_closes_the_dialog_and_leaves_the_card(page):
    open_program(page, CHAPTER_2, nodes=4)
    node(page, "a").click()
    expect(page.locator(STORY).get_by_role("button", name="Close the node's story")).to_be_visible()
    page.get_by_role("button", name="Share / embed").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button").first.focus()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(page.locator(STORY).get_by_role("button", name="Close the node's story")).to_be_visible()


def test_the_close_button_stays_at_hand_in_a_long_story_scrolled_down(page):
    users = "\n".join(f"u{k} = a * {k + 2}" for k in range(12))
    program = f"a = 2\n{users}\nL = " + " + ".join(f"u{k}" for k in range(12))
    page.set_viewport_size({"width": 1024, "height": 768})
    open_program(page, program, nodes=None)
    page.get_by_role("button", name="End", exact=True).click()
    node(page, "a").click()
    story = page.locator(STORY)
    close = story.get_by_role("button", name="Close the node's story")
    expect(close).to_be_visible()
    assert story.evaluate("(s) => s.scrollHeight > s.clientHeight + 50"), "the story is long enough to scroll"
    story.evaluate("(s) => { s.scrollTop = s.scrollHeight; }")
    next_frames(page)
    assert inside(close.bounding_box(), story.bounding_box()), "the close button scrolled away"
    close.click()
    expect(close).to_be_hidden()


def test_in_the_self_contained_file_the_card_keeps_clear_of_the_legend(page, live_server, tmp_path):
    """The file's legend floats over the graph's bottom left corner: the card takes another corner."""
    answer = httpx.post(f"{live_server}/export/html", json={"expression": CHAPTER_2})
    assert answer.status_code == 200
    lesson = tmp_path / "lesson.html"
    lesson.write_bytes(answer.content)
    for width, height in ((1280, 720), (640, 400)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(lesson.as_uri())
        wait_for_graph(page, 4)
        legend = page.locator('[data-vg="legend"]')
        expect(legend).to_be_visible()
        for label in ("L", "b", "a"):
            node(page, label).locator("[tabindex]").focus()  # the keyboard: the legend's summary may lie over a node
            page.keyboard.press("Enter")
            expect(page.locator(STORY).get_by_role("button", name="Close the node's story")).to_be_visible()
            next_frames(page)
            card = page.locator(STORY).bounding_box()
            assert not overlaps(card, legend.bounding_box()), f"the card over {label} covers the legend at {width}"
            page.get_by_role("button", name="Close the node's story").click()


@pytest.mark.parametrize(("width", "height"), [*LAPTOPS, (1400, 900), (390, 844)])
@pytest.mark.parametrize("label", ["a", "L"])
def test_the_node_clicked_stays_in_view_beside_its_card_at_any_step(page, width, height, label):
    """The card takes part of the graph's box and the camera follows the walk in the rest: the node clicked is
    shown there with it, not left behind off the box's edge."""
    page.set_viewport_size({"width": width, "height": height})
    open_program(page, CHAPTER_2, nodes=4)
    for step in ("Step forward", "Step forward", "End"):
        page.get_by_role("button", name=step, exact=True).click()
        wait_until_still(page)
        node(page, label).click()
        expect(page.locator(STORY).get_by_role("button", name="Close the node's story")).to_be_visible()
        next_frames(page)
        wait_until_still(page)
        told = node(page, label).bounding_box()
        graph = page.locator('[data-vg="graph"]').bounding_box()
        card = page.locator(STORY).bounding_box()
        where = f"at step {step_of(page)}"
        assert inside(told, graph, slack=2), f"{label} is out of the graph's box {where}"
        assert not overlaps(told, card), f"the card hides {label} {where}"
        page.get_by_role("button", name="Close the node's story").click()
        wait_until_still(page)
