"""Issue 10 in the page: the code and the graph as one view, the editor's Python indentation,
collapsed scopes, the loss curve and every example program."""

import re
from urllib.parse import quote

import pytest
from pagehelpers import GRAPH_IN_VIEW, last_step, next_frames, node, url_for, wait_for_graph, wait_until_still
from playwright.sync_api import expect

ANSWERED_400 = r"status of 400"
MLP_FORWARD = "from micrograd.nn import MLP\n\nn = MLP(3, [4, 4, 1])\nx = [2.0, 3.0, -1.0]\ny = n(x)\ny.backward()\n"
PYTHON_EXAMPLES = ["py-neuron", "py-mlp-training", "py-operations", "py-softmax", "py-sort-needed"]


def examples(page):
    """{id: program} of the page's Examples menu, read from its module."""
    return dict(
        page.evaluate("async () => (await import('/static/js/examples.js')).EXAMPLES.map((e) => [e.id, e.program])")
    )


def open_example(page, example_id, viewport=None):
    page.goto("/?expression=a%3D1")
    wait_for_graph(page)
    program = examples(page)[example_id]
    if viewport:
        page.set_viewport_size(viewport)
    page.goto(url_for(program))
    wait_for_graph(page)
    return program


def model(page, expression):
    return page.evaluate(
        f"() => {{ const m = document.querySelector('[data-valuegraph]').valuegraph.model; return {expression}; }}"
    )


def editor(page):
    return page.get_by_role("textbox", name="Program", exact=True)


def line_y(page, line):
    """The y of the middle of a line's (1-based) first row in the editor, on screen (long lines wrap)."""
    box = editor(page).bounding_box()
    metrics = page.evaluate(
        "(line) => { const t = document.querySelector('[data-vg=program]'); const s = getComputedStyle(t);"
        " const row = document.querySelector('[data-valuegraph]').valuegraph.editor.rows.top(line);"
        " return [parseFloat(s.lineHeight), parseFloat(s.paddingTop), t.scrollTop, row]; }",
        line,
    )
    height, padding, scroll, row = metrics
    return box["y"] + padding - scroll + (row + 0.5) * height


# ---- the code and the graph, linked ----


def test_pointing_at_a_node_marks_the_code_that_made_it(page):
    open_example(page, "py-neuron")
    node(page, "y").hover()
    expect(page.locator("mark.vg-link-mark")).to_have_text(["z.tanh()"])
    assert page.locator(".vg-link-hover").get_attribute("data-line") == "14"
    # Focusing a node from the keyboard does the same.
    node(page, "u1*v1").locator(".vg-box").focus()
    expect(page.locator("mark.vg-link-mark")).to_have_text(["u1*v1"])
    assert page.locator(".vg-link-hover").get_attribute("data-line") == "10"
    page.mouse.move(5, 5)
    node(page, "u1*v1").locator(".vg-box").blur()
    expect(page.locator("mark.vg-link-mark")).to_have_count(0)


def test_pointing_at_a_line_marks_the_nodes_it_made(page):
    open_example(page, "py-neuron")
    linked = page.locator("[data-node-id].is-linked")
    expect(linked).to_have_count(0)
    page.mouse.move(editor(page).bounding_box()["x"] + 60, line_y(page, 5))  # v1 = Value(1.2, label='v1')
    expect(linked).to_have_count(1)
    expect(linked.locator(".vg-label")).to_have_text("v1")
    assert page.locator(".vg-link-hover").get_attribute("data-line") == "5"
    page.mouse.move(editor(page).bounding_box()["x"] + 60, line_y(page, 1))  # a comment made nothing
    expect(linked).to_have_count(0)
    # From the keyboard: the caret's line.
    editor(page).click()
    page.mouse.move(5, 5)
    editor(page).press("Control+Home")
    caret = page.locator('[data-vg="caret"]')
    for _ in range(10):  # down to line 3, u2 = Value(-1.5, label='u2'), however many rows line 2 wraps onto
        if caret.text_content().startswith("Ln 3,"):
            break
        editor(page).press("ArrowDown")
    expect(linked).to_have_count(1)
    expect(linked.locator(".vg-label")).to_have_text("u2")


def test_the_walk_bands_the_line_of_its_current_node(page):
    open_example(page, "py-neuron")
    band = page.locator(".vg-link-walk")
    page.get_by_role("button", name="Start of stage 2").click()
    for _ in range(4):
        focus = int(page.locator("[data-node-id].is-focus").get_attribute("data-node-id"))
        line = model(page, f"m.nodes[{focus}].span.line")
        expect(band).to_have_attribute("data-line", str(line))
        page.get_by_role("button", name="Step forward", exact=True).click()
    lines = set()
    for _ in range(4):
        lines.add(band.get_attribute("data-line"))
        page.get_by_role("button", name="Step forward", exact=True).click()
    assert len(lines) > 1, "the band moves with the walk"


def test_a_walk_step_moves_the_band_and_leaves_the_programs_text_as_it_was(page):
    """The layer behind the editor keeps its text from step to step (laying a long program's text out
    again at every step cost each step a relayout of all its lines); only the walk's band moves, and
    pointing at a node still marks its code."""
    open_example(page, "py-neuron")
    page.get_by_role("button", name="Start of stage 2").click()
    page.evaluate("() => { window.__text = document.querySelector('[data-vg=code-links]').firstChild; }")
    lines = set()
    for _ in range(6):
        lines.add(page.locator(".vg-link-walk").first.get_attribute("data-line"))
        page.get_by_role("button", name="Step forward", exact=True).click()
    assert len(lines) > 1, "the band moved"
    assert page.evaluate("() => document.querySelector('[data-vg=code-links]').firstChild === window.__text")
    layer_text = page.evaluate("() => document.querySelector('[data-vg=code-links]').textContent")
    assert layer_text == editor(page).input_value() + "\n"
    assert page.locator(".vg-link-walk").count() == 1 and page.locator(".vg-link-mark").count() == 0
    focus = page.locator("[data-node-id].is-focus").first
    focus.hover()
    expect(page.locator(".vg-link-mark").first).to_be_visible()
    assert page.evaluate("() => document.querySelector('[data-vg=code-links]').textContent") == layer_text


def test_a_keystroke_lays_out_only_the_line_it_changed_and_wrapping_still_follows(page):
    """The editor's row map measures a line's wrapping when its text is new: typing into a long program
    lays out one hidden copy (it laid out every line, 47 ms of script a key at 4,000 lines), and a line
    typed past the editor's width still takes its rows, moving the lines below it."""
    program = "x = 1.0\n" + "".join(f"v{i} = x * {i}\n" for i in range(300)) + "w = x * 2  # " + "long " * 60 + "\n"
    page.goto(url_for(program))
    wait_for_graph(page)
    rows = "document.querySelector('[data-valuegraph]').valuegraph.editor.rows"
    assert page.evaluate(f"() => {rows}.count(302)") > 1, "the last line wraps"
    page.evaluate(
        """() => {
      window.__copies = 0;
      new MutationObserver((changes) => { for (const c of changes) window.__copies += c.addedNodes.length; })
        .observe(document.querySelector('.vg-row-probe'), { childList: true });
    }"""
    )
    editor(page).focus()
    page.evaluate("() => document.querySelector('[data-vg=program]').setSelectionRange(18, 18)")  # line 2's end
    page.keyboard.type("1")
    assert page.evaluate("() => window.__copies") == 1, "only the changed line was laid out again"
    top = page.evaluate(f"() => {rows}.top(4)")
    page.keyboard.type(" + x" * 40)  # line 2 now wraps
    assert page.evaluate(f"() => {rows}.count(2)") > 1
    assert page.evaluate(f"() => {rows}.top(4)") == top + page.evaluate(f"() => {rows}.count(2)") - 1


# A chain down 60 lines: stage 2 walks it back up, a line or so a step.
CHAIN_OF_LINES = "v0 = 1.0\n" + "".join(f"v{i} = v{i - 1} * 1.01\n" for i in range(1, 60)) + "L = v59 * 2.0\n"
# In the page: is the walk's banded line inside the editor's visible rows, with the bands' layer scrolled with it?
WALK_LINE_IN_VIEW = """() => {
  const t = document.querySelector('[data-vg=program]');
  const band = document.querySelector('.vg-link-walk');
  if (!band) return false;
  const rows = document.querySelector('[data-valuegraph]').valuegraph.editor.rows;
  const line = Number(band.dataset.line);
  const height = parseFloat(getComputedStyle(t).lineHeight);
  const top = rows.top(line) * height;
  const bottom = top + rows.count(line) * height;
  const layer = document.querySelector('[data-vg=code-links]');
  return top >= t.scrollTop && bottom <= t.scrollTop + t.clientHeight && layer.scrollTop === t.scrollTop;
}"""


def step_to_another_line(page):
    """Step forward until the walk's band is on another line; that line."""
    band = page.locator(".vg-link-walk").first
    before = band.get_attribute("data-line")
    for _ in range(10):
        page.get_by_role("button", name="Step forward", exact=True).click()
        if band.get_attribute("data-line") != before:
            return int(band.get_attribute("data-line"))
    raise AssertionError(f"the walk stayed on line {before}")


def test_the_editor_keeps_the_walks_line_in_view_after_the_learner_scrolls_or_resizes_it(page):
    page.goto(url_for(CHAIN_OF_LINES))
    wait_for_graph(page)
    textarea = editor(page)
    assert textarea.evaluate("(t) => t.scrollHeight > 3 * t.clientHeight"), "the program is taller than the editor"
    page.get_by_role("button", name="Start of stage 2").click()
    page.wait_for_function(WALK_LINE_IN_VIEW)  # the last line: the editor scrolled down to it
    assert textarea.evaluate("(t) => t.scrollTop") > 0

    # The learner scrolls the editor back to the top: the next step brings the walk's line back.
    textarea.evaluate("(t) => { t.scrollTop = 0; }")
    page.wait_for_function("() => document.querySelector('[data-vg=code-links]').scrollTop === 0")
    assert not page.evaluate(WALK_LINE_IN_VIEW)
    step_to_another_line(page)
    page.wait_for_function(WALK_LINE_IN_VIEW)

    # The learner makes the editor shorter and scrolls it so that the walk's line sits just below
    # its last row (in view at the height it had): the next step scrolls it into view.
    textarea.evaluate("(t) => { t.style.height = '90px'; }")
    next_frames(page)
    line = int(page.locator(".vg-link-walk").first.get_attribute("data-line"))
    textarea.evaluate(
        """(t, line) => {
            const rows = document.querySelector('[data-valuegraph]').valuegraph.editor.rows;
            const height = parseFloat(getComputedStyle(t).lineHeight);
            t.scrollTop = (rows.top(line) - 1) * height - t.clientHeight;
        }""",
        line,
    )
    page.wait_for_function(
        "() => { const t = document.querySelector('[data-vg=program]');"
        " return document.querySelector('[data-vg=code-links]').scrollTop === t.scrollTop; }"
    )
    assert not page.evaluate(WALK_LINE_IN_VIEW)
    step_to_another_line(page)
    page.wait_for_function(WALK_LINE_IN_VIEW)


@pytest.mark.allow_console(ANSWERED_400)
def test_the_editor_indents_python(page):
    open_example(page, "py-neuron")
    box = editor(page)
    box.press("Control+a")
    box.press("Delete")
    box.press_sequentially("for i in range(3):")
    box.press("Enter")  # one level deeper after ':'
    box.press_sequentially("x = i")
    box.press("Enter")  # the same level
    box.press_sequentially("if x:")
    box.press("Enter")
    box.press_sequentially("pass")
    box.press("Enter")  # one level out after pass
    assert box.input_value() == "for i in range(3):\n    x = i\n    if x:\n        pass\n    "
    box.press("Shift+Tab")
    box.press_sequentially("y = 2")
    assert box.input_value().endswith("\n        pass\ny = 2")
    box.press("Home")
    box.press("Tab")
    assert box.input_value().endswith("\n    y = 2")
    box.press("Control+z")  # the edits are in the undo history
    assert box.input_value().endswith("\ny = 2")
    # A selection of lines moves together.
    box.press("Control+a")
    box.press("Tab")
    assert box.input_value().startswith("    for i in range(3):\n        x = i")
    box.press("Shift+Tab")
    assert box.input_value().startswith("for i in range(3):\n    x = i")
    # Escape, then Tab leaves the editor: keyboard users are never trapped.
    box.press("Escape")
    box.press("Tab")
    assert page.evaluate("document.activeElement.dataset.vg") != "program"


@pytest.mark.allow_console(ANSWERED_400)
def test_a_python_error_is_marked_at_its_line_and_column(page):
    page.goto(url_for("x = Value(2.0)\ny = x ^ 2\ny.backward()"))
    message = page.locator('[data-vg="error-message"]')
    expect(message).to_have_text(re.compile("`\\^` is bitwise xor in Python"))
    expect(page.locator("mark.vg-error-mark")).to_have_text("^")
    assert page.locator(".vg-gutter-error").text_content() == "2"
    assert page.locator('[data-vg="error-goto"]').text_content() == "Go to line 2, column 7"


# ---- scopes ----


def test_an_mlp_forward_pass_opens_collapsed_to_layers_and_reads_at_1280x720(page):
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(url_for(MLP_FORWARD))
    wait_for_graph(page)
    boxes = page.locator(".vg-scope-box")
    expect(boxes).to_have_count(3)
    assert boxes.locator(".vg-scope-title").all_text_contents() == ["⊞ Layer[0]", "⊞ Layer[1]", "⊞ Layer[2]"]
    assert "125 nodes" in page.locator('[data-vg="graph-summary"]').text_content()
    # The camera may be following the walk (zoomed on the output); the whole folded graph fits too.
    page.get_by_role("button", name="Fit to screen").click()
    wait_until_still(page)
    graph = page.locator('[data-vg="graph"]').bounding_box()
    for title in boxes.locator(".vg-scope-title").all() + [node(page, "y").locator(".vg-label")]:
        box = title.bounding_box()
        assert box["height"] >= 11, "text a learner can read"
        assert graph["x"] <= box["x"] and box["x"] + box["width"] <= graph["x"] + graph["width"]
        assert graph["y"] <= box["y"] and box["y"] + box["height"] <= graph["y"] + graph["height"]
    # Each box says what goes in and what comes out; pointing at it marks the code that made it.
    layer1 = boxes.nth(1)
    layer1.hover()
    expect(page.locator("mark.vg-link-mark")).to_have_text(["MLP(3, [4, 4, 1])", "n(x)"])  # its weights, its sums
    story = page.locator('[data-vg="story"]')
    expect(story.locator("h3")).to_have_text("MLP.__call__ › Layer[1]: collapsed")
    assert "In (4):" in story.text_content() and "Out (4):" in story.text_content()
    assert story.locator("li").count() == 8 and "grad not reached yet" in story.text_content()
    assert "4 in → 4 out" in layer1.locator(".vg-scope-sub").text_content()
    assert re.search(r"4 in \(.*\); 4 out \(", layer1.get_attribute("aria-label"))


def fit(page):
    """The whole graph in view (the camera may be following the walk); following pauses."""
    page.get_by_role("button", name=re.compile("^Fit")).click()
    wait_until_still(page)


def test_a_collapsed_scope_expands_on_click_and_collapses_again(page):
    page.goto(url_for(MLP_FORWARD))
    wait_for_graph(page)
    fit(page)
    drawn = page.locator("[data-node-id]")
    assert drawn.count() == 1  # only the output is not in a layer
    made_in_layer_1 = model(page, "m.nodes.filter((n) => n.scope.includes('Layer[1]')).map((n) => n.id)")
    page.locator('.vg-scope-box[data-scope^="MLP.__call__ › Layer[1]"]').click()
    expect(page.locator('.vg-scope-box[data-scope^="MLP.__call__ › Layer[1]"]')).to_have_count(0)
    wait_for_graph(page)
    shown = {int(i) for i in drawn.evaluate_all("els => els.map((e) => e.dataset.nodeId)")}
    assert set(made_in_layer_1) <= shown
    # Its weights are drawn again, as the parameters' scope (made in __init__), still collapsed.
    titles = page.locator(".vg-scope-title").all_text_contents()
    assert titles == ["⊞ Layer.__init__", "⊞ Layer[0]", "⊞ Layer[2]"]
    # A frame around the expanded layer has a button that folds it again.
    page.locator('.vg-scope-fold[data-scope="MLP.__call__ › Layer[1]#0"]').click()
    expect(page.locator(".vg-scope-title")).to_have_text(["⊞ Layer[0]", "⊞ Layer[1]", "⊞ Layer[2]"])
    expect(page.locator(".vg-scope-fold")).to_have_count(0)
    # So does the scopes list; the keyboard expands a box too.
    page.locator('[data-vg="scopes"] summary').click()
    layer1 = page.locator('[data-vg="scope-list"] input[data-scope="MLP.__call__ › Layer[1]#0"]')
    expect(layer1).to_be_checked()
    layer1.uncheck()
    expect(page.locator('.vg-scope-box[data-scope^="MLP.__call__ › Layer[1]"]')).to_have_count(0)
    layer1.check()
    expect(page.locator(".vg-scope-box")).to_have_count(3)
    page.locator('.vg-scope-box[data-scope^="MLP.__call__ › Layer[0]"]').focus()
    page.keyboard.press("Enter")
    expect(page.locator('.vg-scope-box[data-scope^="MLP.__call__ › Layer[0]"]')).to_have_count(0)
    page.get_by_role("button", name="Expand all").click()
    expect(page.locator(".vg-scope-box")).to_have_count(0)
    wait_for_graph(page, nodes=125)


def test_the_walk_lights_the_box_of_a_collapsed_node(page):
    page.goto(url_for(MLP_FORWARD))
    wait_for_graph(page)
    page.get_by_role("button", name="Start of stage 2").click()
    page.get_by_role("button", name="Step forward", exact=True).click()
    page.get_by_role("button", name="Step forward", exact=True).click()  # past y, into Layer[2]
    expect(page.locator(".vg-scope-box.is-focus")).to_have_attribute("data-scope", re.compile(r"Layer\[2\]"))


def test_a_programs_own_mlp_folds_into_its_layers_by_the_same_names(page):
    """The page's MLP example defines its own Neuron, Layer and MLP: the interpreter names their
    calls as it names micrograd.nn's (Layer[i], Neuron[j]), so the graph opens folded into its
    layers, three for each of the four rows (and the weights the rows share), and a layer expands
    and folds again."""
    open_example(page, "py-mlp-training")
    boxes = page.locator(".vg-scope-box")
    layers = ["⊞ Layer[0]", "⊞ Layer[1]", "⊞ Layer[2]"] * 4
    expect(boxes.locator(".vg-scope-title")).to_have_text(["⊞ Layer.__init__", *layers])  # and the weights
    neurons = model(
        page, "[...new Set(m.nodes.filter((n) => n.scope[2] === 'Layer[1]').map((n) => n.scope.join(' › ')))]"
    )
    assert sorted(neurons) == [f"for step = 19 › MLP.__call__ › Layer[1] › Neuron[{j}]" for j in range(4)]
    fit(page)
    layer1 = page.locator('.vg-scope-box[data-scope="for step = 19 › MLP.__call__ › Layer[1]#0"]')
    layer1.click()
    expect(layer1).to_have_count(0)
    fold = page.locator('.vg-scope-fold[data-scope="for step = 19 › MLP.__call__ › Layer[1]#0"]')
    expect(fold).to_have_count(1)
    fold.click()
    expect(boxes.locator(".vg-scope-title")).to_have_text(["⊞ Layer.__init__", *layers])


# ---- files ----


def test_the_files_panel_gives_the_program_its_input_txt(page):
    program = (
        "import os\nprint(os.path.exists('input.txt'))\n"
        "if os.path.exists('input.txt'):\n"
        "    names = [line.strip() for line in open('input.txt') if line.strip()]\n"
        "    print(f'names: {len(names)}, letters: {len(set(\"\".join(names)))}')\nx = Value(1.0)"
    )
    page.goto(url_for(program))
    wait_for_graph(page)
    printed = page.locator('[data-vg="printed"]')
    expect(printed).to_have_text("False")
    page.get_by_text("Files", exact=True).click()
    page.get_by_role("button", name="Use the bundled names").click()
    expect(printed).to_have_text(re.compile(r"^True\nnames: 200, letters: \d+$"))
    expect(page.locator('[data-vg="files-summary"]')).to_have_text("(input.txt: 200 lines)")
    page.get_by_label("input.txt", exact=True).fill("ann\nbo\n")
    expect(printed).to_have_text("True\nnames: 2, letters: 4")
    page.get_by_label("Load input.txt from a file").set_input_files(
        files=[{"name": "mine.txt", "mimeType": "text/plain", "buffer": b"cara\ndee\nemma\n"}]
    )
    expect(printed).to_have_text("True\nnames: 3, letters: 6")
    # the self-contained file is made from the same request, files included: it holds that answer
    page.locator('[data-vg="export-menu"] summary').click()
    expect(page.locator('[data-vg="export-html"]')).to_have_text(re.compile(r"Self-contained HTML \(\d+ kB\)"))
    with page.expect_download() as download:
        page.locator('[data-vg="export-html"]').click()
    assert "names: 3, letters: 6" in open(download.value.path(), encoding="utf-8").read()


# ---- the loss curve ----


def test_a_progress_line_rewritten_with_a_carriage_return_shows_its_last_state(page):
    program = (
        "x = Value(2.0)\nfor step in range(3):\n"
        "    print(f'step {step + 1:4d} | loss {x.data * (3 - step):.4f}', end='\\r')\n"
        "print()\nprint('done', end='\\r')\nprint('D')"
    )
    page.goto(url_for(program))
    wait_for_graph(page)
    expect(page.locator('[data-vg="printed"]')).to_have_text("step    3 | loss 2.0000\nDone")


def test_the_loss_curve_says_when_the_call_shown_began_with_grads_earlier_calls_left(page):
    # The picture is the call's walk from 0 (a's grad 4); the program printed 11, what two calls added up.
    program = "a = Value(2.0)\nb = Value(3.0)\nL = a * b + a\nL.backward()\nL.backward()\nprint(a.grad)"
    page.goto(url_for(program))
    wait_for_graph(page)
    summary = page.locator('[data-vg="runs-summary"]')
    expect(summary).to_contain_text("the graph is from call 2")
    expect(summary).to_contain_text("starts every grad at 0, but 3 of its values held grads from earlier calls")
    page.locator(".vg-loss-point").first.click()
    expect(summary).to_contain_text("the graph is from call 1")
    expect(summary).not_to_contain_text("held grads from before")


def test_the_loss_curve_opens_an_earlier_runs_walk(page):
    open_example(page, "py-mlp-training")
    points = page.locator(".vg-loss-point")
    expect(points).to_have_count(20)
    expect(page.locator(".vg-loss-point.is-current")).to_have_attribute("data-run", "19")
    runs = model(page, "m.runs")
    assert len(runs) == 20 and runs[0]["data"] > runs[-1]["data"]
    printed = page.locator('[data-vg="printed"]').text_content().splitlines()
    assert len(printed) == 20 and printed[0].startswith("0 ")
    points.nth(2).click()
    page.wait_for_url(re.compile(r"[?&]run=2(&|$)"))
    expect(page.locator(".vg-loss-point.is-current")).to_have_attribute("data-run", "2")
    expect(page.locator('[data-vg="runs-summary"]')).to_contain_text("the graph is from call 3")
    wait_for_graph(page)
    assert model(page, "m.run") == 2
    assert model(page, "m.nodes[m.output].data") == runs[2]["data"]
    # That call's walk: the player goes through it and ends at the loss with grad 1.
    page.get_by_role("button", name="End", exact=True).click()
    assert last_step(page) > 0
    output = page.locator("[data-node-id].vg-output")
    expect(output.locator(".vg-grad")).to_have_text("1")
    # Keyboard: the arrow keys move between points, Enter opens one.
    page.locator(".vg-loss-point.is-current").focus()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"[?&]run=1(&|$)"))
    expect(page.locator(".vg-loss-point.is-current")).to_have_attribute("data-run", "1")
    # Back returns to the earlier choice; a link keeps it.
    page.go_back()
    expect(page.locator(".vg-loss-point.is-current")).to_have_attribute("data-run", "2")
    page.reload()
    expect(page.locator(".vg-loss-point.is-current")).to_have_attribute("data-run", "2")


def test_the_seed_is_in_the_url_and_changes_the_draws(page):
    program = "import random\nx = Value(random.uniform(-1, 1), label='x')\ny = x * 2\ny.backward()\n"
    page.goto(url_for(program))
    wait_for_graph(page)
    first = model(page, "m.nodes[0].data")
    page.get_by_label("Seed").fill("7")
    page.get_by_label("Seed").press("Enter")
    page.wait_for_url(re.compile(r"[?&]seed=7(&|$)"))
    wait_for_graph(page)
    assert model(page, "m.nodes[0].data") != first
    page.reload()
    wait_for_graph(page)
    assert page.get_by_label("Seed").input_value() == "7"


# ---- the examples ----


def test_every_example_on_the_page_runs(page):
    page.goto("/?expression=a%3D1")
    wait_for_graph(page)
    answers = page.evaluate(
        """async () => {
            const { EXAMPLES } = await import('/static/js/examples.js');
            const answers = [];
            for (const e of EXAMPLES) {
                const response = await fetch('/backward', {
                    method: 'POST', headers: { 'Content-Type': 'application/json' },
                    body: JSON.stringify({ expression: e.program, trace: true, layout: true }) });
                answers.push([e.id, response.status]);
            }
            return answers;
        }"""
    )
    assert [status for _, status in answers] == [200] * len(answers), answers
    assert set(PYTHON_EXAMPLES) <= {example_id for example_id, _ in answers}
    # The Python ones through the page itself: a graph, no error.
    programs = examples(page)
    for example_id in PYTHON_EXAMPLES:
        page.goto(url_for(programs[example_id]))
        wait_for_graph(page)
        assert page.locator('[data-vg="error"]').is_hidden(), example_id


@pytest.mark.allow_console(ANSWERED_400)
def test_tabbing_through_the_page_passes_the_editor(page):
    page.goto(url_for("a = 2\nb = a * 3"))
    wait_for_graph(page)
    editor(page).focus()  # as Tab would bring it: Tab goes on to the next control
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.vg") != "program"
    assert editor(page).input_value() == "a = 2\nb = a * 3"
    # Once the learner works in the editor, Tab indents.
    editor(page).click()
    page.keyboard.press("Home")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.vg") == "program"
    assert "    " in editor(page).input_value()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_loss_curve_scopes_and_printed_output_pass_axe(page, scheme):
    from test_page_look import AXE, axe_violations

    page.emulate_media(color_scheme=scheme)
    page.add_init_script(path=str(AXE))
    open_example(page, "py-mlp-training")
    page.locator('[data-vg="scopes"] summary').click()
    page.locator(".vg-scope-box").first.focus()
    assert axe_violations(page) == []


def test_a_folded_graph_opens_on_its_boxes_until_the_walk_moves(page):
    # 398 nodes in 13 boxes: at 1280x720 they do not read whole, so the picture opens on boxes, not on the loss.
    open_example(page, "py-mlp-training", viewport={"width": 1280, "height": 720})
    opened = page.evaluate(GRAPH_IN_VIEW)
    assert len(opened["boxes"]) >= 2 and not opened["output"], opened
    follow = page.get_by_role("button", name="Follow")
    expect(follow).to_have_attribute("aria-pressed", "false")  # the view shows the boxes, not the walk
    # A resize and presenter's text size keep showing the boxes (the walk has not moved) ...
    page.set_viewport_size({"width": 1200, "height": 700})
    next_frames(page, 3)
    resized = page.evaluate(GRAPH_IN_VIEW)
    assert len(resized["boxes"]) >= 2 and not resized["output"], resized
    page.get_by_role("button", name="Presenter").click()
    expect(page.locator(".vg-app.vg-presenter")).to_have_count(1)
    next_frames(page, 3)
    assert len(page.evaluate(GRAPH_IN_VIEW)["boxes"]) >= 1 and not page.evaluate(GRAPH_IN_VIEW)["output"]
    page.keyboard.press("Escape")
    expect(page.locator(".vg-app.vg-presenter")).to_have_count(0)
    # ... until Follow is pressed (one press: it shows the walk's step) or the walk moves: the camera follows the
    # walk to the output, and stays with it back at the start, also when the program runs again as the learner types.
    follow.click()
    expect(follow).to_have_attribute("aria-pressed", "true")
    page.wait_for_function(f"({GRAPH_IN_VIEW})().output")
    page.get_by_role("button", name="Fit to screen").click()
    wait_until_still(page)
    page.get_by_role("button", name="Step forward", exact=True).click()
    next_frames(page, 3)
    assert len(page.evaluate(GRAPH_IN_VIEW)["boxes"]) >= 2, "after Fit the camera is the learner's"
    follow.click()
    page.wait_for_function(f"({GRAPH_IN_VIEW})().output")
    page.get_by_role("button", name="Step back", exact=True).click()
    expect(page.locator('[data-vg="step-label"]')).to_have_text(re.compile(r"^0 / "))
    page.wait_for_function(f"({GRAPH_IN_VIEW})().output")
    with page.expect_response("**/backward"):
        editor(page).press("Control+End")
        editor(page).type("\n# a comment\n")
    wait_for_graph(page)
    next_frames(page, 5)
    assert page.evaluate(GRAPH_IN_VIEW)["output"]


def test_columns_count_characters_not_utf16_units(page):
    # The emoji is one character for the server and two UTF-16 units for the browser.
    program = "a = Value(1.0, label='😀'); b = a * 2; b.label = 'b'\nb.backward()\n"
    page.goto(url_for(program))
    wait_for_graph(page)
    node(page, "b").hover()
    expect(page.locator("mark.vg-link-mark")).to_have_text(["a * 2"])


def test_the_course_shorthand_is_linked_too(page):
    page.goto(url_for("a = 2\nb = 3\nc = a * b\nL = c + a"))
    wait_for_graph(page, nodes=4)
    node(page, "c").hover()
    expect(page.locator("mark.vg-link-mark")).to_have_text(["a * b"])
    page.mouse.move(editor(page).bounding_box()["x"] + 60, line_y(page, 4))
    expect(page.locator("[data-node-id].is-linked .vg-label")).to_have_text(["L"])


def test_every_collapsed_view_is_a_graph_the_layout_takes(page):
    """scopes.js on every example and on the MLP programs, collapsing each scope in turn and the
    default set: every item's inputs come before it, every node is in exactly one item, and a box
    holds its scope's nodes (but never the output)."""
    page.goto("/?expression=a%3D1")
    wait_for_graph(page)
    problems = page.evaluate(
        """async (extra) => {
            const { EXAMPLES } = await import('/static/js/examples.js');
            const { scopeInstances, collapsedGraph, layerScopes } = await import('/static/js/scopes.js');
            const problems = [];
            for (const program of [...EXAMPLES.map((e) => e.program), ...extra]) {
                const model = await (await fetch('/backward', {
                    method: 'POST', headers: { 'Content-Type': 'application/json' },
                    body: JSON.stringify({ expression: program, trace: false }) })).json();
                const instances = scopeInstances(model);
                const sets = [layerScopes(instances), ...instances.map((s) => new Set([s.key]))];
                for (const collapsed of sets) {
                    const { items, itemOf } = collapsedGraph(model, instances, collapsed);
                    const counted = new Array(model.nodes.length).fill(0);
                    for (const item of items) {
                        for (const c of item.children) {
                            const where = `${program.slice(0, 20)}: item ${item.index}`;
                            if (c >= item.index) problems.push(`${where} has input ${c}`);
                        }
                        for (const m of item.box ? item.members : [item.node]) counted[m] += 1;
                        if (item.box && item.members.includes(model.output)) problems.push('the output is in a box');
                    }
                    if (counted.some((n) => n !== 1)) {
                        problems.push(`${program.slice(0, 20)}: a node in ${counted.find((n) => n !== 1)} items`);
                    }
                    if (items[itemOf[model.output]].box) problems.push('the output is hidden');
                }
            }
            return problems;
        }""",
        [MLP_FORWARD],
    )
    assert problems == []


def test_the_embed_links_code_and_graph_and_folds_scopes(page):
    page.goto(f"/embed?expression={quote(MLP_FORWARD)}&seed=3")
    wait_for_graph(page)
    expect(page.locator(".vg-scope-box")).to_have_count(3)
    fit(page)
    layer2 = page.locator('.vg-scope-box[data-scope="MLP.__call__ › Layer[2]#0"]')
    layer2.click()  # expands in the embed too
    expect(layer2).to_have_count(0)
    node(page, "y").hover()
    expect(page.locator("mark.vg-link-mark")).to_have_text(["n(x)"])


def test_what_a_box_shows_is_computed_apart_from_drawing_it(page):
    """scopes.js's pure functions give each collapsed box its inputs, outputs and description (at the
    step shown), and the boxes drawn say exactly that: for the MLP, three layer boxes, each one's
    outputs feeding the next."""
    page.goto(url_for(MLP_FORWARD))
    wait_for_graph(page)
    expect(page.locator(".vg-scope-box")).to_have_count(3)
    computed = page.evaluate(
        """async () => {
            const scopes = await import('/static/js/scopes.js');
            const { boxDescription, boxPorts, collapsedGraph, defaultCollapsed, placeScoped, scopeBoxes, scopeFrames,
                scopeIndex, scopeInstances } = scopes;
            const { fetchLayout } = await import('/static/js/api.js');
            const { gradOf, levelFrameAt } = await import('/static/js/timeline.js');
            const page = document.querySelector('[data-valuegraph]').valuegraph;
            const model = page.model;
            const frame = levelFrameAt(page.timeline, page.levels, page.controls.levelStep); // the step shown
            const instances = scopeInstances(model);
            const collapsed = defaultCollapsed(model, instances);
            const folded = collapsedGraph(model, instances, collapsed);
            folded.layout = await fetchLayout(folded.items.map((item) => item.children));
            const placement = placeScoped(model, folded, 'LR', 400);
            const ports = boxPorts(model, folded.items, folded.itemOf, scopeIndex(model, instances));
            const boxes = scopeBoxes(model, folded, placement, ports).map((b) => ({ key: b.scope.key,
                members: b.item.members, inputs: b.inputs, outputs: b.outputs,
                description: boxDescription(model, b, (id) => gradOf(frame, id)) }));
            const expanded = placeScoped(model, null, 'LR', 400);
            const frames = scopeFrames(instances, new Set(), expanded).map((f) => f.scope.key);
            return { boxes, frames, layers: [...collapsed] };
        }"""
    )
    boxes = computed["boxes"]
    assert [b["key"] for b in boxes] == [f"MLP.__call__ › Layer[{i}]#0" for i in range(3)]
    for box in boxes:  # (the first layer's inputs are plain floats, made into Values inside it)
        assert not set(box["inputs"]) & set(box["members"]), "inputs come from outside"
        assert box["outputs"] and set(box["outputs"]) <= set(box["members"]), "outputs are made inside"
    for before, after in zip(boxes, boxes[1:]):
        assert set(before["outputs"]) == set(after["inputs"]), "a layer's outputs feed the next, and only they"
    drawn = page.locator(".vg-scope-box")
    assert [drawn.nth(i).get_attribute("aria-label") for i in range(3)] == [b["description"] for b in boxes]
    assert sorted(computed["frames"]) == sorted(computed["layers"]), "expanded, each layer gets a frame"
