"""The lessons menu: each lesson opens its program at the stage and step it states, with its caption."""

import re
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from pagehelpers import open_program, step_of, url_for, wait_for_graph
from playwright.sync_api import expect

LESSONS_MODULE = "/static/js/lessons.js"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "learners.md"


def lessons(page):
    return page.evaluate(f"async () => (await import('{LESSONS_MODULE}')).LESSONS")


def expected_step(api, lesson):
    """The page's step number from the server's own trace: stage 1 is a start step plus one step
    per pop of the stack; stage 2 is a seed step plus one step per node walked."""
    trace = api.post("/backward", data={"expression": lesson["program"]}).json()["trace"]
    sort_end = len(trace["sort"])
    last = sort_end + 1 + len(trace["propagate"])
    if lesson["stage"] == "sort":
        return sort_end if lesson["step"] == "end" else lesson["step"]
    return last if lesson["step"] == "end" else sort_end + 1 + lesson["step"]


def test_every_lesson_opens_its_program_at_its_stage_and_step(page, playwright, base_url, artifacts):
    api = playwright.request.new_context(base_url=base_url)
    open_program(page, "a = 1\nb = a * 5", nodes=3)
    all_lessons = lessons(page)
    ids = [lesson["id"] for lesson in all_lessons]
    for wanted in [
        "value",
        "local-add-mul",
        "local-curved",
        "nudge",
        "chapter1",
        "sort",
        "propagate",
        "reuse",
        "nan-log-zero",
        "nan-log-negative",
        "nan-power",
    ]:
        assert wanted in ids, f"the course walk lacks {wanted}"
    menu = page.get_by_label("Lesson", exact=True)
    caption = page.locator('[data-lesson="caption"]')
    stage_title = page.locator('[data-vg="stage-title"]')
    for lesson in all_lessons:
        menu.select_option(lesson["id"])
        step = expected_step(api, lesson)
        # The URL is written once the lesson's graph is loaded and moved to its step.
        page.wait_for_function(
            "([program, step]) => { const q = new URLSearchParams(location.search);"
            " return q.get('expression') === program && q.get('step') === String(step); }",
            arg=[lesson["program"], step],
        )
        wait_for_graph(page)
        assert step_of(page) == step, lesson["id"]
        assert caption.text_content() == lesson["caption"]
        assert stage_title.text_content().startswith("2" if lesson["stage"] == "propagate" else "1"), lesson["id"]
        if lesson["id"] == "propagate":
            page.screenshot(path=str(artifacts / "lesson-propagate.png"))
        if lesson["id"] == "nan-log-negative":  # as its caption says: NaN data, but only the 2's grad is NaN
            grads = page.evaluate(
                "() => document.querySelector('[data-valuegraph]').valuegraph.model.nodes"
                ".map((n) => [n.label, String(n.data), String(n.grad)])"
            )
            assert grads == [
                ["a", "-1", "-1"],
                ["b", "NaN", "2"],
                [None, "2", "NaN"],
                [None, "NaN", "1"],
                ["L", "NaN", "1"],
            ], grads
    api.dispose()


def wait_for_lesson_entry(page, program):
    """Until the page's URL (its history entry) is the lesson's: written once the lesson's graph is
    loaded. A graph drawn is not enough: a lesson opened before its run wrote the entry aborts that run,
    and Back would skip the lesson."""
    page.wait_for_url(lambda url: parse_qs(urlparse(url).query).get("expression") == [program])


def test_next_and_previous_walk_the_course_in_order_and_back_returns(page):
    open_program(page, "a = 1\nb = a * 5", nodes=3)
    first, second = (lesson["program"] for lesson in lessons(page)[:2])
    assert first == "a = 2\nb = 3\nc = a * b"
    page.get_by_role("button", name="Next lesson").click()
    wait_for_lesson_entry(page, first)  # the opening graph has 3 nodes too: wait_for_graph alone would not wait
    wait_for_graph(page, 3)
    assert page.get_by_role("button", name="Previous lesson").is_disabled()
    page.get_by_role("button", name="Next lesson").click()
    wait_for_lesson_entry(page, second)
    wait_for_graph(page, 5)
    assert page.get_by_label("Lesson", exact=True).input_value() == "local-add-mul"
    page.go_back()
    wait_for_graph(page, 3)
    assert page.locator('[data-vg="program"]').input_value() == "a = 2\nb = 3\nc = a * b"


def test_the_reuse_lesson_switches_the_broken_walk_to_assign(page):
    open_program(page, "a = 1\nb = a * 5", nodes=3)
    page.get_by_label("Lesson", exact=True).select_option("reuse")
    assert page.get_by_label("= instead of +=").is_checked()
    page.locator('[data-variant="table"] tr[data-node="a"][data-verdict="wrong"]').wait_for()
    # the next lesson asks for no broken walk: the panel goes back to the correct one
    page.get_by_role("button", name="Next lesson").click()
    expect(page.get_by_label("Correct", exact=True)).to_be_checked()
    expect(page.locator('[data-variant="result"]')).to_be_hidden()


def test_back_leaves_no_lesson_caption_over_another_program(page):
    open_program(page, "a = 1\nb = a * 5", nodes=3)
    page.get_by_label("Lesson", exact=True).select_option("sort")
    page.get_by_role("button", name="Next lesson").click()
    page.get_by_role("button", name="Next lesson").click()
    wait_for_lesson_entry(page, "a = 1\nb = a + a\nc = b + b")
    caption = page.locator('[data-lesson="caption"]')
    expect(caption).to_contain_text("a feeds b twice")
    page.go_back()  # chapter 2 again: the lesson before, whose program it is
    expect(page.locator('[data-vg="program"]')).to_have_value("a = 2\nb = 3\nc = a * b\nL = c + a")
    expect(page.get_by_label("Lesson", exact=True)).to_have_value("propagate")
    expect(caption).not_to_contain_text("a feeds b twice")
    page.go_back()
    page.go_back()  # the program opened first, which no lesson opens
    expect(page.locator('[data-vg="program"]')).to_have_value("a = 1\nb = a * 5")
    expect(page.get_by_label("Lesson", exact=True)).to_have_value("")
    expect(caption).to_be_hidden()
    page.go_forward()  # chapter 2 again: a lesson that opens it comes back
    expect(page.locator('[data-vg="program"]')).to_have_value("a = 2\nb = 3\nc = a * b\nL = c + a")
    expect(caption).to_be_visible()
    assert page.get_by_label("Lesson", exact=True).input_value() in ("sort", "propagate")


def wait_for_query(page, **wanted):
    """Until the URL's parameters include `wanted` (None: the parameter is absent)."""
    page.wait_for_url(lambda url: all(parse_qs(urlparse(url).query).get(k, [None])[0] == v for k, v in wanted.items()))


def test_a_lesson_link_opens_the_lesson_with_its_caption_and_stays_a_lesson_link(page, playwright, base_url):
    page.goto("/")
    wait_for_graph(page, 4)
    lesson = next(lesson for lesson in lessons(page) if lesson["id"] == "propagate")
    api = playwright.request.new_context(base_url=base_url)
    step = expected_step(api, lesson)
    api.dispose()
    listed = re.search(r"The ids, in order: (.*?)\. While", " ".join(DOCS.read_text().split())).group(1)
    assert re.findall(r"`([a-z0-9-]+)`", listed) == [lesson["id"] for lesson in lessons(page)], "docs/learners.md"
    page.goto("/?lesson=propagate")
    entries = page.evaluate("history.length")
    wait_for_query(page, lesson="propagate", expression=lesson["program"], step=str(step))
    wait_for_graph(page, 4)
    assert step_of(page) == step
    caption = page.locator('[data-lesson="caption"]')
    expect(caption).to_have_text(lesson["caption"])
    expect(page.get_by_label("Lesson", exact=True)).to_have_value("propagate")
    assert page.evaluate("history.length") == entries, "the lesson's program and step replace the link's entry"
    page.reload()  # the URL the page wrote is a lesson link too
    wait_for_graph(page, 4)
    expect(caption).to_have_text(lesson["caption"])
    assert step_of(page) == step
    # Share / embed's link carries the lesson as the URL does
    page.get_by_role("button", name="Share / embed").click()
    assert "lesson=propagate" in page.locator('[data-vg="share-link"]').input_value()


def test_another_program_drops_the_lesson_from_the_url(page):
    page.goto("/?lesson=sort")
    wait_for_query(page, lesson="sort", step="7")
    expect(page.locator('[data-lesson="caption"]')).to_be_visible()
    page.locator('[data-vg="program"]').fill("a = 2\nL = a * a")
    wait_for_query(page, lesson=None, expression="a = 2\nL = a * a")
    expect(page.locator('[data-lesson="caption"]')).to_be_hidden()  # the caption goes with the link
    expect(page.get_by_label("Lesson", exact=True)).to_have_value("")
    # a lesson link beside a program that is not the lesson's shows no caption, and the page drops it
    page.goto(url_for("x = 3\ny = x * x", lesson="sort"))
    wait_for_graph(page, 2)
    expect(page.locator('[data-lesson="caption"]')).to_be_hidden()
    expect(page.get_by_label("Lesson", exact=True)).to_have_value("")
    page.get_by_role("button", name="Step forward").click()
    wait_for_query(page, lesson=None, step="1")
