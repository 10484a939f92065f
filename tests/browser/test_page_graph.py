"""The graph: what typing a program draws, in the micrograd look."""

import re
from urllib.parse import parse_qs, urlparse

import pytest
from pagehelpers import grad_text, node, open_program, wait_for_graph, wait_until_still

CHAPTER_2 = "a = 2\nb = 3\nc = a * b\nL = c + a"


def edge_keys(page):
    return sorted(page.locator("path.vg-edge").evaluate_all("paths => paths.map(p => p.dataset.edge)"))


def test_typing_a_program_draws_its_nodes_and_edges(page):
    open_program(page, "a = 1")
    editor = page.get_by_role("textbox", name="Program", exact=True)
    editor.press("Control+a")
    editor.press_sequentially("x = 3\ny = x * x + 1")
    # x, x * x, the constant 1 and the sum: four nodes; * has two edges (x twice), + has two.
    wait_for_graph(page, nodes=4)
    assert page.locator("[data-node-id]").count() == 4
    assert edge_keys(page) == ["1:0", "1:1", "3:0", "3:1"]
    assert page.locator('[data-vg="graph-summary"]').text_content() == "4 nodes · 4 edges · output y = 10"
    # Each record shows label and data; grads stay blank until the walk reaches them.
    assert node(page, "x").locator(".vg-data").text_content() == "3"
    assert node(page, "y").locator(".vg-data").text_content() == "10"
    assert grad_text(page, "y") == ""
    # The URL is written once the graph's load has ended (after the drawing wait_for_graph sees).
    page.wait_for_url(lambda url: parse_qs(urlparse(url).query).get("expression") == ["x = 3\ny = x * x + 1"])


def test_ctrl_enter_runs_at_once(page):
    open_program(page, "a = 1")
    editor = page.get_by_role("textbox", name="Program", exact=True)
    editor.fill("p = 2\nq = p * 5")
    editor.press("Control+Enter")
    wait_for_graph(page, nodes=3)
    assert node(page, "q").locator(".vg-data").text_content() == "10"


def test_a_value_used_twice_by_one_op_gets_two_edges(page):
    open_program(page, "a = 1\nb = a + a", nodes=2)
    assert edge_keys(page) == ["1:0", "1:1"]
    paths = page.locator("path.vg-edge").evaluate_all("paths => paths.map(p => p.getAttribute('d'))")
    assert paths[0] != paths[1], "the two edges of a + a must be drawn apart"
    labels = page.locator("g.vg-edge-label .vg-edge-text").all_text_contents()
    assert labels == ["1", "1"], "each edge carries its own local gradient"


def test_records_ops_constants_and_output_look_different(page):
    open_program(page, "a = 2\nL = log(a * 3)", nodes=4)
    ops = page.locator(".vg-op-text").all_text_contents()
    assert sorted(ops) == ["*", "log"]
    constant = page.locator("[data-node-id].vg-kind-const")
    assert constant.count() == 1 and constant.locator(".vg-data").text_content() == "3"
    assert page.locator("[data-node-id].vg-kind-named").count() == 1  # a
    output = page.locator("[data-node-id].vg-output")
    assert output.locator(".vg-label").text_content() == "L"
    assert output.locator(".vg-output-tag").text_content() == "output"
    # The local gradients on the edges: ∂(a*3)/∂a = 3, ∂(a*3)/∂3 = 2, ∂log(u)/∂u = 1/6.
    assert sorted(page.locator("g.vg-edge-label .vg-edge-text").all_text_contents()) == ["0.16667", "2", "3"]
    # Constant and named leaf are styled differently (dashed, shaded record for the constant).
    dash = page.evaluate("getComputedStyle(document.querySelector('.vg-kind-const .vg-box')).strokeDasharray")
    assert dash not in ("none", "")
    assert page.evaluate("getComputedStyle(document.querySelector('.vg-kind-named .vg-box')).strokeDasharray") == "none"


# Each record's data and grad text, as drawn (its box in the record's own coordinates), and its cell's edges.
NUMBERS_IN_CELLS = """() => [...document.querySelectorAll('[data-node-id]')].flatMap((record) => {
  const [left, middle] = [...record.querySelectorAll('.vg-cell-line')].map((line) => Number(line.getAttribute('x1')));
  const box = record.querySelector('.vg-box');
  const right = Number(box.getAttribute('x')) + Number(box.getAttribute('width'));
  return [['.vg-data', left, middle], ['.vg-grad', middle, right]].map(([cls, from, to]) => {
    const text = record.querySelector(cls);
    const b = text.getBBox();
    return { text: text.textContent, from, to, x0: b.x, x1: b.x + b.width };
  });
})"""


def test_long_numbers_stay_inside_their_cells(page):
    # -0.046149, 1e-16 * x, -18.572: numbers past the six characters a cell holds at full size
    program = "x = 2.0\nw = -3.0\nz = x * w\nq = exp(z) / (exp(z) + 1)\nL = log(q) * -0.046149 + 1e-16 * x"
    open_program(page, program, step=1000)
    wait_until_still(page)
    cells = [cell for cell in page.evaluate(NUMBERS_IN_CELLS) if cell["x1"] > cell["x0"]]  # drawn: not culled
    assert sum(len(cell["text"]) >= 8 for cell in cells) >= 3, cells
    for cell in cells:
        assert cell["from"] <= cell["x0"] and cell["x1"] <= cell["to"], cell


def test_direction_switch_turns_the_graph_and_is_kept_in_the_url(page):
    open_program(page, CHAPTER_2, nodes=4)

    def centre(label):
        box = node(page, label).locator(".vg-box").bounding_box()
        return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2

    (ax, _), (lx, _) = centre("a"), centre("L")
    assert lx > ax, "left to right: the output is right of its inputs"
    page.get_by_role("button", name="Bottom to top").click()
    page.wait_for_url(re.compile(r"dir=bt"))
    wait_until_still(page)  # the records glide to their new places
    (_, ay), (_, ly) = centre("a"), centre("L")
    assert ly < ay, "bottom to top: the output is above its inputs"
    assert page.get_by_role("button", name="Left to right").get_attribute("aria-pressed") == "true"


def test_pan_zoom_and_fit(page):
    open_program(page, CHAPTER_2, nodes=4)
    viewport = page.locator(".vg-viewport")
    fitted = viewport.get_attribute("transform")
    page.get_by_role("button", name="Zoom in").click()
    wait_until_still(page)
    assert viewport.get_attribute("transform") != fitted
    page.get_by_role("button", name="Fit to screen").click()
    wait_until_still(page)
    assert viewport.get_attribute("transform") == fitted
    box = page.locator('[data-vg="graph"]').bounding_box()
    page.mouse.move(box["x"] + 40, box["y"] + 40)
    page.mouse.down()
    page.mouse.move(box["x"] + 140, box["y"] + 90)
    page.mouse.up()
    assert viewport.get_attribute("transform") != fitted


def test_a_nodes_story_sums_what_each_parent_passed_back(page):
    open_program(page, CHAPTER_2, nodes=4)
    node(page, "a").click()
    story = page.locator('[data-vg="story"]')
    assert story.locator("h3").text_content() == "a: a leaf"
    assert "not reached yet" in story.text_content()
    page.get_by_role("button", name="End", exact=True).click()
    text = story.text_content()
    assert "grad = Σ of what each user passed back" in text
    assert "from L: 1 × 1 = 1" in text and "from c: 3 × 1 = 3" in text
    assert "total: grad = 4" in text
    node(page, "c").click()
    assert story.locator("h3").text_content() == "c = a * b"
    assert "∂c/∂a = 3" in story.text_content() and "∂c/∂b = 2" in story.text_content()


@pytest.mark.allow_console(r"status of 400")
def test_markup_in_a_program_is_shown_as_text_and_runs_nothing(page):
    program = '# <img src=x onerror="window.pwned=1">\nx = 2\nL = x * x'
    open_program(page, program, nodes=2)
    page.get_by_role("textbox", name="Program", exact=True).fill('<img src=x onerror="window.pwned=1">')
    page.get_by_role("textbox", name="Program", exact=True).press("Control+Enter")
    message = page.locator('[data-vg="error-message"]')
    message.wait_for()
    assert page.locator("img").count() == 0
    assert page.evaluate("window.pwned") is None


def test_variables_come_from_the_box_and_the_url(page):
    open_program(page, "L = x * y", nodes=3, variables="x = 3, y = 4")
    assert page.locator('[data-vg="graph-summary"]').text_content().endswith("output L = 12")
    box = page.get_by_role("textbox", name="Variables")
    assert box.input_value() == "x = 3, y = 4"
    box.fill("x = 5, y = 4")
    page.wait_for_function("() => document.querySelector('[data-vg=graph-summary]').textContent.endsWith('L = 20')")
    page.wait_for_url(lambda url: "variables=x+%3D+5" in url)
