"""The nudge panel: measured (f(x+h) − f(x))/h from the server beside the grad, h adjustable,
and "Check every leaf" marking leaves whose two gradients disagree, in the panel and on the graph."""

import re

from pagehelpers import node, open_program

SQUARE = "a = 3\nb = a ** 2"
CHAPTER_2 = "a = 2\nb = 3\nc = a * b\nL = c + a"
RELU_AT_ZERO = "a = 0\nb = relu(a)"  # relu's gradient at 0 is 0 by the rule, but nudging up measures 1


def panel(page):
    return page.locator('[data-vg="nudge"]')


def figure(page, name):
    return panel(page).locator(f'[data-nudge="{name}"]')


def wait_measured(page, text):
    figure(page, "measured").filter(has_text=re.compile(text)).wait_for()


def test_square_at_3_measures_6_0001_and_h_changes_the_measurement(page, artifacts):
    open_program(page, SQUARE, nodes=2)
    assert page.get_by_label("Nudge size h", exact=True).input_value() == "0.0001"
    wait_measured(page, r"^6\.0001$")
    assert figure(page, "expected").text_content() == "6"
    assert figure(page, "difference").text_content().startswith("0.0001")
    panel(page).screenshot(path=str(artifacts / "nudge-panel.png"))

    page.get_by_label("Nudge size h", exact=True).select_option("0.1")
    wait_measured(page, r"^6\.1$")
    assert figure(page, "expected").text_content() == "6"
    assert figure(page, "difference").text_content().startswith("0.1")

    page.get_by_label("Nudge size h", exact=True).select_option("1e-8")  # round-off: no longer 6 plus h
    wait_measured(page, r"^(?!6\.1$)")
    assert figure(page, "measured").text_content() != "6.00000001"


def test_the_leaf_can_be_picked_in_the_panel_or_on_the_graph(page):
    open_program(page, CHAPTER_2, nodes=4)
    wait_measured(page, r"^4$")  # a comes first: 1 from L plus 3 through c, exact for straight functions
    page.get_by_label("Leaf", exact=True).select_option(label="b = 3")
    wait_measured(page, r"^2$")
    node(page, "a").click()
    wait_measured(page, r"^4$")
    assert page.get_by_label("Leaf", exact=True).input_value() == node(page, "a").get_attribute("data-node-id")


def test_check_every_leaf_marks_nothing_on_a_smooth_program(page):
    open_program(page, CHAPTER_2, nodes=4)
    wait_measured(page, r"^4$")
    page.get_by_role("button", name="Check every leaf").click()
    summary = figure(page, "summary")
    summary.filter(has_text="agree").wait_for()
    assert summary.text_content() == "All 2 leaves agree at h = 0.0001."
    assert page.locator('[data-vg="graph"] [data-nudge="disagree"]').count() == 0
    assert "Tolerance" in figure(page, "tolerance").text_content()


def test_check_every_leaf_marks_relu_at_its_kink(page, artifacts):
    open_program(page, RELU_AT_ZERO, nodes=2)
    wait_measured(page, r"^1$")
    assert figure(page, "expected").text_content() == "0"
    assert "beyond tolerance" in figure(page, "difference").text_content()
    page.get_by_role("button", name="Check every leaf").click()
    figure(page, "summary").filter(has_text="disagree").wait_for()
    assert figure(page, "summary").text_content().startswith("1 of 1 leaf disagree")
    marked = page.locator('[data-vg="graph"] [data-nudge="disagree"]')
    assert marked.count() == 1
    assert marked.get_attribute("data-node-id") == node(page, "a").get_attribute("data-node-id")
    assert panel(page).locator("tr.vg-disagree th").text_content() == "a"
    page.locator('[data-vg="graph"]').screenshot(path=str(artifacts / "nudge-marked-graph.png"))
    panel(page).screenshot(path=str(artifacts / "nudge-check.png"))

    # A smooth program next: the marks go with the old graph.
    page.locator('[data-vg="program"]').fill(SQUARE)
    wait_measured(page, r"^6\.0001$")
    assert marked.count() == 0
