"""The walk: every control and shortcut, the stack and sorted list, the tables, the URL."""

import re

from pagehelpers import (
    grad_text,
    last_step,
    next_frames,
    node,
    open_program,
    step_of,
    url_for,
    wait_for_graph,
    wait_for_ticks,
    wait_until_still,
)

CHAPTER_2 = "a = 2\nb = 3\nc = a * b\nL = c + a"
# Chapter 2's walk: a start step and 8 pops (stage 1), then a seed step and 4 nodes (stage 2).
SORT_END, PROPAGATE_START, LAST = 8, 9, 13


def button(page, name):
    return page.get_by_role("button", name=name, exact=True)


def caption(page):
    return page.locator('[data-vg="caption"]').text_content()


def stack(page):
    return page.locator('[data-vg="stack"] li:not(.vg-empty)').all_text_contents()


def sorted_list(page):
    return page.locator('[data-vg="sorted"] li:not(.vg-empty)').all_text_contents()


def test_stage_1_replays_the_stack_and_the_sorted_list(page):
    open_program(page, CHAPTER_2, nodes=4)
    assert last_step(page) == LAST
    assert step_of(page) == 0
    assert stack(page) == ["(L, 0)"] and sorted_list(page) == []
    expected = [  # after each pop, top of the stack first (chapter 2's table, reversed)
        (["(c, 0)", "(L, 1)"], []),
        (["(a, 0)", "(c, 1)", "(L, 1)"], []),
        (["(c, 1)", "(L, 1)"], ["a"]),
        (["(b, 0)", "(c, 2)", "(L, 1)"], ["a"]),
        (["(c, 2)", "(L, 1)"], ["a", "b"]),
        (["(L, 1)"], ["a", "b", "c"]),
        (["(L, 2)"], ["a", "b", "c"]),
        ([], ["a", "b", "c", "L"]),
    ]
    for k, (stack_after, sorted_after) in enumerate(expected, start=1):
        button(page, "Step forward").click()
        assert step_of(page) == k
        assert stack(page) == stack_after, f"step {k}"
        assert sorted_list(page) == sorted_after, f"step {k}"
    # Step 7 is the one the course singles out: a was already visited.
    button(page, "Step back").click()
    assert "Pop (L, 1)" in caption(page) and "a was already visited, so skip it" in caption(page)
    assert node(page, "L").get_attribute("class").count("is-focus") == 1
    assert "is-explored" in node(page, "a").get_attribute("class")


def test_stage_2_fills_in_the_grads_with_plus_equals(page):
    open_program(page, CHAPTER_2, nodes=4)
    button(page, "Start of stage 2").click()
    assert step_of(page) == PROPAGATE_START
    assert grad_text(page, "L") == "1" and grad_text(page, "a") == ""
    button(page, "Step forward").click()  # L passes 1 × 1 to c and to a
    assert grad_text(page, "c") == "1" and grad_text(page, "a") == "1" and grad_text(page, "b") == ""
    updates = page.locator("g.vg-update-label .vg-edge-text").all_text_contents()
    assert sorted(updates) == ["a.grad +=1 × 1", "c.grad +=1 × 1"]
    button(page, "Step forward").click()  # c passes 3 × 1 to a (1 → 4) and 2 × 1 to b
    assert grad_text(page, "a") == "4" and grad_text(page, "b") == "2"
    assert node(page, "a").locator(".vg-was").text_content() == "was 1"
    assert "a.grad += 3 × 1, so 1 → 4" in caption(page)
    assert "is-focus" in node(page, "c").get_attribute("class")
    button(page, "End").click()
    assert step_of(page) == LAST
    assert [grad_text(page, name) for name in "abcL"] == ["4", "2", "1", "1"]
    assert "Done: a.grad = 4, b.grad = 2." in caption(page)


def test_every_button(page):
    open_program(page, CHAPTER_2, nodes=4)
    assert button(page, "Step back").is_disabled() and button(page, "Reset").is_disabled()
    button(page, "End").click()
    assert step_of(page) == LAST and button(page, "End").is_disabled() and button(page, "Step forward").is_disabled()
    button(page, "Reset").click()
    assert step_of(page) == 0
    button(page, "End of stage 1").click()
    assert step_of(page) == SORT_END
    button(page, "Start of stage 2").click()
    assert step_of(page) == PROPAGATE_START
    button(page, "End of stage 2").click()
    assert step_of(page) == LAST
    button(page, "Start of stage 1").click()
    assert step_of(page) == 0

    # 4x (300 ms a step): Pause is pressed well before the walk could reach its end and stop by itself,
    # however slowly the click comes (at 50x the last step came 240 ms after step 3).
    page.get_by_label("Speed").select_option("4")
    button(page, "Play").click()
    assert button(page, "Pause").is_visible()
    page.wait_for_function("() => Number(document.querySelector('[data-vg=scrubber]').value) >= 3")
    button(page, "Pause").click()
    paused_at = step_of(page)
    assert 3 <= paused_at < LAST
    wait_for_ticks(page, 4)
    assert step_of(page) == paused_at, "Pause stops the timer"
    page.get_by_label("Speed").select_option("50")
    button(page, "Play").click()
    page.wait_for_function(f"() => Number(document.querySelector('[data-vg=scrubber]').value) === {LAST}")
    assert button(page, "Play").is_visible(), "the player stops by itself at the end"

    scrubber = page.get_by_role("slider", name="Step")
    scrubber.fill("5")
    assert step_of(page) == 5 and "Pop (b, 0)" in caption(page)


def test_keyboard_shortcuts(page):
    open_program(page, CHAPTER_2, nodes=4)
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert step_of(page) == 2
    page.keyboard.press("ArrowLeft")
    assert step_of(page) == 1
    page.keyboard.press("End")
    assert step_of(page) == LAST
    page.keyboard.press("Home")
    assert step_of(page) == 0
    # The slowest speed (2.4 s a step): however slowly the second press comes, the walk is still far
    # from its end (at 50x it could end and stop by itself first, and the second press play it again).
    page.get_by_label("Speed").select_option("0.5")
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press(" ")
    assert button(page, "Pause").is_visible()
    page.keyboard.press(" ")
    assert button(page, "Play").is_visible()
    # Keys typed into the editor are text, not shortcuts.
    editor = page.get_by_role("textbox", name="Program", exact=True)
    at = step_of(page)
    editor.press("End")
    editor.press("ArrowLeft")
    assert step_of(page) == at


def test_tables_and_graph_stay_in_step(page):
    open_program(page, CHAPTER_2, nodes=4)
    sort_rows = page.locator('[data-vg="sort-table"] tbody tr')
    propagate_rows = page.locator('[data-vg="propagate-table"] tbody tr')
    assert sort_rows.count() == SORT_END + 1 and propagate_rows.count() == LAST - PROPAGATE_START + 1
    # Chapter 2's first table: step 7 pops (L, 1) and skips a.
    row = sort_rows.nth(7)
    assert row.locator("td").nth(0).text_content() == "(L, 1)"
    assert row.locator("td").nth(2).text_content() == "[(L,2)]"
    assert row.locator("td").nth(3).text_content() == "[a, b, c]"
    row.click()
    assert step_of(page) == 7
    assert row.get_attribute("aria-current") == "step"
    assert "is-focus" in node(page, "L").get_attribute("class")
    # Chapter 2's second table: i, node, grad.
    second = propagate_rows.nth(2)
    assert [second.locator("td").nth(i).text_content() for i in range(3)] == ["2", "c", "1"]
    second.locator("button").click()
    assert step_of(page) == PROPAGATE_START + 2
    assert grad_text(page, "a") == "4"
    assert "is-focus" in node(page, "c").get_attribute("class")
    page.get_by_role("button", name="Step back").click()
    assert propagate_rows.nth(1).get_attribute("aria-current") == "step"


def test_a_url_reopens_the_same_step_and_back_forward_work(page, base_url):
    open_program(page, CHAPTER_2, nodes=4)
    button(page, "Start of stage 2").click()
    page.wait_for_url(re.compile(rf"step={PROPAGATE_START}"))
    button(page, "Step forward").click()
    button(page, "Step forward").click()
    page.wait_for_url(re.compile(rf"step={PROPAGATE_START + 2}"))
    link = page.url

    other = page.context.new_page()
    other.goto(link)
    wait_for_graph(other, nodes=4)
    assert step_of(other) == PROPAGATE_START + 2
    assert [grad_text(other, name) for name in "abcL"] == ["4", "2", "1", "1"]
    assert other.locator('[data-vg="propagate-table"] tr[aria-current="step"] td').nth(1).text_content() == "c"
    other.close()

    # Back: to the jump before the steps; again: the start. Forward: where we were.
    page.go_back()
    page.wait_for_function("() => Number(document.querySelector('[data-vg=scrubber]').value) === 0")
    page.go_forward()
    page.wait_for_function(f"() => Number(document.querySelector('[data-vg=scrubber]').value) >= {PROPAGATE_START}")


def test_steps_in_one_task_then_a_jump_leave_the_last_step_in_the_entry_back_returns_to(page):
    """A step writes its URL once its frame is painted; steps and a jump made before any paint still
    leave the entry the jump left with the last step, and the URL ends at the jump's step."""
    open_program(page, CHAPTER_2, nodes=4)
    button(page, "Start of stage 2").click()
    page.wait_for_url(re.compile(rf"step={PROPAGATE_START}(&|$)"))
    page.evaluate(
        """() => {
            const click = (name) => document.querySelector(`[data-vg="${name}"]`).click();
            click("forward");
            click("forward");
            click("forward");
            click("end");
        }"""
    )
    page.wait_for_url(re.compile(rf"step={LAST}(&|$)"))
    page.go_back()
    page.wait_for_function(
        f"() => Number(document.querySelector('[data-vg=scrubber]').value) === {PROPAGATE_START + 3}"
    )
    assert re.search(rf"step={PROPAGATE_START + 3}(&|$)", page.url)
    # Forward again: the jump's entry, and no step written late over the entry Back showed.
    page.go_forward()
    page.wait_for_function(f"() => Number(document.querySelector('[data-vg=scrubber]').value) === {LAST}")
    page.go_back()
    page.wait_for_function(
        f"() => Number(document.querySelector('[data-vg=scrubber]').value) === {PROPAGATE_START + 3}"
    )


def test_back_restores_the_previous_program(page):
    open_program(page, CHAPTER_2, nodes=4)
    page.get_by_label("Examples").select_option(label="Reuse: why += matters")
    wait_for_graph(page, nodes=3)
    page.wait_for_url(re.compile(r"expression=a\+%3D\+1%0Ab\+%3D\+a\+%2B\+a"))
    page.go_back()
    wait_for_graph(page, nodes=4)
    assert page.get_by_role("textbox", name="Program", exact=True).input_value() == CHAPTER_2


def test_examples_menu_loads_each_course_example(page):
    page.goto(url_for(CHAPTER_2))
    wait_for_graph(page, nodes=4)
    menu = page.get_by_label("Examples")
    expected_outputs = {"chapter1": "e = 64", "reuse": "c = 4", "neuron": "y = 0.29131", "softmax": "L = 0.41703"}
    for example, output in expected_outputs.items():
        menu.select_option(example)
        page.wait_for_function(
            "(text) => document.querySelector('[data-vg=graph-summary]').textContent.endsWith(text)",
            arg=f"output {output}",
        )


def test_nothing_moves_on_the_page_while_the_walk_plays(page):
    page.add_init_script(
        # Every shift counts, even those just after the click on Play that the browser would forgive.
        "window.__shifts = []; new PerformanceObserver((list) => { for (const e of list.getEntries())"
        " window.__shifts.push(e.value); }).observe({ type: 'layout-shift', buffered: true });"
    )
    open_program(page, CHAPTER_2, nodes=4)
    wait_until_still(page)
    next_frames(page)
    page.evaluate("window.__shifts = []")
    page.get_by_label("Speed").select_option("10")
    button(page, "Play").click()
    page.wait_for_function(f"() => Number(document.querySelector('[data-vg=scrubber]').value) === {LAST}")
    wait_until_still(page)
    next_frames(page)
    assert page.evaluate("window.__shifts") == []
