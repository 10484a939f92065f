"""A course lesson in the embed (/embed?lesson=propagate) by the page's rules, and the Share dialog's embed
snippet carrying the lesson as the page's link does."""

from urllib.parse import parse_qs, quote, urlparse

import pytest
from pagehelpers import served_elsewhere, step_of, url_for, wait_for_graph
from playwright.sync_api import expect
from test_lessons import expected_step, lessons

LESSON = "[data-vg='lesson']"


@pytest.fixture(scope="module")
def propagate(browser, base_url, playwright):
    """The propagate lesson (lessons.js) and the page's step it opens at."""
    page = browser.new_page(base_url=base_url)
    page.goto("/embed")
    lesson = next(lesson for lesson in lessons(page) if lesson["id"] == "propagate")
    page.close()
    api = playwright.request.new_context(base_url=base_url)
    lesson["page_step"] = expected_step(api, lesson)
    api.dispose()
    return lesson


def test_a_lesson_embed_opens_the_lessons_program_at_its_step_with_its_caption(page, propagate):
    page.goto("/embed?lesson=propagate")
    wait_for_graph(page, 4)
    expect(page.locator('[data-vg="program"]')).to_have_value(propagate["program"])
    expect(page.locator(LESSON)).to_be_visible()
    expect(page.locator('[data-vg="lesson-title"]')).to_have_text(propagate["title"])
    expect(page.locator('[data-vg="lesson-caption"]')).to_have_text(propagate["caption"])
    page.wait_for_function(
        "(step) => document.querySelector('[data-vg=scrubber]').value === String(step)", arg=propagate["page_step"]
    )
    expect(page.locator('[data-vg="lesson-unknown"]')).to_be_hidden()
    # step= still chooses the step, counted within the stage shown
    page.goto("/embed?lesson=propagate&stage=propagate&step=0")
    wait_for_graph(page, 4)
    expect(page.locator('[data-vg="lesson-caption"]')).to_have_text(propagate["caption"])
    assert page.locator('[data-vg="step-label"]').text_content().startswith("0 / ")


@pytest.mark.parametrize(
    "size, options",
    [
        ({"width": 800, "height": 450}, ""),
        ({"width": 390, "height": 844}, ""),
        ({"width": 640, "height": 400}, "&controls=minimal"),
    ],
)
def test_the_lessons_caption_is_read_where_the_frame_has_room_and_never_makes_it_small(page, size, options):
    """At 800×450 and on a phone the caption shows over the graph, inside the frame; where it alone would make
    the frame small (640×400 with the editor beside the graph), it is left out and the controls stay."""
    page.set_viewport_size(size)
    page.goto(f"/embed?lesson=propagate{options}")
    wait_for_graph(page, 4)
    root = page.locator("[data-valuegraph-embed]")
    expect(root).not_to_have_attribute("data-fit", "small")
    box = page.locator(LESSON).bounding_box()
    graph = page.locator('[data-vg="graph"]').bounding_box()
    if options:  # the lesson is left out, not the controls
        expect(root).to_have_attribute("data-lesson-room", "none")
        expect(page.locator(LESSON)).to_be_hidden()
        expect(page.locator('[data-vg="program"]')).to_be_visible()
        return
    assert box is not None and box["height"] >= 40, box  # the title and two lines at least
    assert 0 <= box["y"] and box["y"] + box["height"] <= graph["y"] <= size["height"], (box, graph)
    assert graph["height"] >= 140, graph


def test_an_unknown_lesson_is_named_and_the_embed_opens_as_without_it(page):
    page.goto(f"/embed?lesson={quote('<b>no-such-lesson</b>')}")
    wait_for_graph(page, 4)  # chapter 2's program, as /embed alone shows
    expect(page.locator(LESSON)).to_be_hidden()
    notice = page.locator('[data-vg="lesson-unknown"]')
    expect(notice).to_be_visible()
    expect(notice).to_contain_text('"<b>no-such-lesson</b>"')  # as text, never markup
    expect(notice.locator("b")).to_have_count(0)
    assert step_of(page) == 0
    page.get_by_role("button", name="Step forward").click()
    assert step_of(page) == 1


def test_a_lesson_beside_its_own_program_keeps_its_caption_and_beside_another_is_left_out(page, propagate):
    # the page's link while the lesson is shown (the Share dialog's snippet too): its caption, at the link's step
    page.goto(f"/embed?lesson=propagate&expression={quote(propagate['program'])}&step=3")
    wait_for_graph(page, 4)
    expect(page.locator('[data-vg="lesson-caption"]')).to_have_text(propagate["caption"])
    assert step_of(page) == 3
    # beside another program: no caption, no notice, the link's program at its start
    page.goto(f"/embed?lesson=propagate&expression={quote('x = 3; y = x * x')}")
    wait_for_graph(page, 2)
    expect(page.locator(LESSON)).to_have_count(1)
    expect(page.locator(LESSON)).to_be_hidden()
    expect(page.locator('[data-vg="lesson-unknown"]')).to_be_hidden()
    assert step_of(page) == 0


def test_the_page_around_a_lesson_embed_drives_it_and_another_program_takes_the_caption(page, live_server, propagate):
    lesson_page = f"""<!doctype html><html><body>
<iframe id="vg" src="{live_server}/embed?lesson=propagate" width="900" height="600"></iframe>
<script>
  window.received = [];
  addEventListener("message", (event) => {{ if (event.origin === "{live_server}") window.received.push(event.data); }});
  window.tell = (message) => document.getElementById("vg").contentWindow.postMessage(message, "{live_server}");
</script></body></html>"""
    with served_elsewhere(lesson_page) as url:
        page.goto(url)
        frame = page.frame_locator("#vg")
        expect(frame.locator('[data-vg="lesson-caption"]')).to_have_text(propagate["caption"])
        page.wait_for_function(
            "(step) => window.received.some((m) => m.type === 'valuegraph:step' && m.step === step)",
            arg=propagate["page_step"],
        )
        page.evaluate("tell({type: 'valuegraph:goto', step: 1})")
        page.wait_for_function(
            "() => window.received.at(-1)?.type === 'valuegraph:step' && window.received.at(-1).step === 1"
        )
        expect(frame.locator('[data-vg="lesson-caption"]')).to_be_visible()  # the same program: still the lesson's
        page.evaluate("tell({type: 'valuegraph:program', expression: 'x = 5; y = x + x'})")
        frame.locator('[data-vg="graph"] svg[data-node-count="2"]').wait_for()
        expect(frame.locator(LESSON)).to_be_hidden()


def shared(page):
    """What the Share dialog writes: the embed's URL, the snippet, and the embed's and the page link's parameters."""
    page.get_by_role("button", name="Share / embed").click()
    snippet = page.locator('[data-vg="share-snippet"]')
    embed = snippet.get_attribute("data-url")
    link = page.locator('[data-vg="share-link"]').input_value()
    text = snippet.input_value()
    page.locator('[data-vg="share-close"]').click()
    return embed, text, parse_qs(urlparse(embed).query), parse_qs(urlparse(link).query)


def test_the_share_dialogs_embed_keeps_the_lesson_while_the_page_link_does(page, context, propagate):
    page.goto("/?lesson=propagate")
    page.wait_for_url(lambda url: parse_qs(urlparse(url).query).get("step") == [str(propagate["page_step"])])
    wait_for_graph(page, 4)
    embed, snippet, embed_query, link_query = shared(page)
    assert link_query["lesson"] == embed_query["lesson"] == ["propagate"]
    assert "lesson=propagate" in snippet
    other = context.new_page()
    other.goto(embed)  # the snippet's embed shows the lesson at the page's step
    wait_for_graph(other, 4)
    expect(other.locator('[data-vg="lesson-caption"]')).to_have_text(propagate["caption"])
    assert step_of(other) == propagate["page_step"]
    other.close()
    # edited: the page's link drops the lesson, and so does the snippet
    page.locator('[data-vg="program"]').fill("a = 2\nL = a * a")
    page.wait_for_url(lambda url: "lesson" not in parse_qs(urlparse(url).query))
    wait_for_graph(page, 2)
    _, snippet, embed_query, link_query = shared(page)
    assert "lesson" not in link_query and "lesson" not in embed_query and "lesson=" not in snippet
    assert embed_query["expression"] == ["a = 2\nL = a * a"]
    # a lesson link beside another program: the page leaves the lesson out, and so does the snippet
    page.goto(url_for("x = 3\ny = x * x", lesson="sort"))
    wait_for_graph(page, 2)
    _, snippet, embed_query, link_query = shared(page)
    assert "lesson" not in link_query and "lesson" not in embed_query and "lesson=" not in snippet
