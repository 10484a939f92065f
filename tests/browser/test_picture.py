"""A picture you can read at every size (issue 11): at 1280×720 and 1440×900, for chapter 2, the
softmax example and the tanh neuron, at every step the current node's numbers are at least 12 CSS px
and inside the graph panel, no two labels or records overlap, and Play and the scrubber are in view."""

import pytest
from pagehelpers import open_program
from playwright.sync_api import expect

CHAPTER_2 = "a = 2\nb = 3\nc = a * b\nL = c + a"
NEURON = "u1 = 0.5; u2 = -1.5\nv1 = 1.2; v2 = 0.4\nbias = 0.3\nz = u1*v1 + u2*v2 + bias\ny = tanh(z)"
SOFTMAX = (
    "# three scores; the right answer is class 1\nz1 = 2; z2 = 1; z3 = 0.1\ne1 = exp(z1); e2 = exp(z2); e3 = exp(z3)\n"
    "s = e1 + e2 + e3\np1 = e1 / s\nL = -log(p1)"
)
REUSE = "a = 1\nb = a + a\nc = b + b"  # two updates to the same child at one step: both must read
CROSSING = "a = 2\nb = 3\ns = a + b\np = a * b\nL = s + p"  # a → p crosses b → s: their middles meet
PROGRAMS = {
    "chapter2": (CHAPTER_2, 4),
    "softmax": (SOFTMAX, None),
    "neuron": (NEURON, None),
    "reuse": (REUSE, 3),
    "crossing": (CROSSING, 5),
}

# Everything measured in one evaluate per step: the current node's text, the panel, every box.
MEASURE = """() => {
    const app = document.querySelector('[data-valuegraph]').valuegraph;
    const panel = document.querySelector('[data-vg="graph"]').getBoundingClientRect();
    const step = app.timeline.steps[app.controls.step];
    const node = document.querySelector(`[data-node-id="${step.node}"]`);
    const px = (el) => parseFloat(getComputedStyle(el).fontSize) * el.getScreenCTM().a;
    const rect = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const labels = [...document.querySelectorAll('.vg-edge-label rect, .vg-update-label rect, .vg-box')]
        .map((el) => ({
            kind: el.closest('.vg-update-label') ? 'update' : el.closest('.vg-edge-label') ? 'local' : 'record',
            key: el.closest('[data-edge], [data-node-id]').getAttribute('data-edge')
                ?? el.closest('[data-node-id]').dataset.nodeId,
            box: rect(el) }));
    return {
        dataPx: px(node.querySelector('.vg-data')), gradPx: px(node.querySelector('.vg-grad')),
        cell: rect(node.querySelector('.vg-box')), panel: [panel.left, panel.top, panel.right, panel.bottom], labels,
    };
}"""


def go(page, k):
    page.evaluate("(k) => document.querySelector('[data-valuegraph]').valuegraph.controls.go(k, 'step')", k)


def overlap(a, b, slack=0.5):
    return a[0] < b[2] - slack and b[0] < a[2] - slack and a[1] < b[3] - slack and b[1] < a[3] - slack


def in_viewport(page, name):
    box = page.locator(f'[data-vg="{name}"]').bounding_box()
    view = page.viewport_size
    return (
        box
        and box["y"] >= 0
        and box["y"] + box["height"] <= view["height"]
        and box["x"] >= 0
        and box["x"] + box["width"] <= view["width"]
    )


@pytest.mark.parametrize("size", [(1280, 720), (1440, 900)], ids=["1280x720", "1440x900"])
@pytest.mark.parametrize("example", list(PROGRAMS))
def test_every_step_is_readable_and_nothing_overlaps(page, size, example):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    program, nodes = PROGRAMS[example]
    open_program(page, program, nodes=nodes, step=0)
    assert in_viewport(page, "play") and in_viewport(page, "scrubber"), (
        "Play and the scrubber are in view without scrolling"
    )
    last = page.evaluate("document.querySelector('[data-valuegraph]').valuegraph.timeline.last")
    for k in range(last + 1):
        go(page, k)
        m = page.evaluate(MEASURE)
        assert m["dataPx"] >= 12 and m["gradPx"] >= 12, f"step {k}: the current node's numbers are {m['dataPx']:.1f} px"
        cell, panel = m["cell"], m["panel"]
        assert cell[0] >= panel[0] and cell[1] >= panel[1] and cell[2] <= panel[2] and cell[3] <= panel[3], (
            f"step {k}: the current node is outside the panel"
        )
        labels = m["labels"]
        for i, a in enumerate(labels):
            for b in labels[i + 1 :]:
                if a["kind"] == "record" and b["kind"] == "record":
                    continue  # the layout keeps records apart; tested in test_layout
                assert not overlap(a["box"], b["box"]), (
                    f"step {k}: {a['kind']} {a['key']} overlaps {b['kind']} {b['key']}"
                )
    assert in_viewport(page, "play") and in_viewport(page, "scrubber")


def test_two_updates_to_the_same_child_are_both_readable(page):
    open_program(page, REUSE, nodes=3)
    steps = page.evaluate(
        "document.querySelector('[data-valuegraph]').valuegraph.timeline.steps.map((s) => (s.updates ?? []).length)"
    )
    k = max(i for i, n in enumerate(steps) if n == 2)  # b passes 1 × 2 to a along both edges of a + a
    go(page, k)
    callouts = page.locator("g.vg-update-label")
    assert callouts.count() == 2
    assert callouts.locator(".vg-edge-text").all_text_contents() == ["a.grad +=1 × 2", "a.grad +=1 × 2"]
    boxes = [callouts.nth(i).locator("rect").bounding_box() for i in range(2)]
    a, b = ([r["x"], r["y"], r["x"] + r["width"], r["y"] + r["height"]] for r in boxes)
    assert not overlap(a, b)
    assert sorted(callouts.evaluate_all("(gs) => gs.map((g) => g.dataset.edge)")) == ["1:0", "1:1"]


def test_callouts_find_points_along_an_edge_as_the_browser_measures_them(page):
    """Callouts are placed at shares of an edge's length worked out from its path's numbers (layout.js's
    pathPointAt), not by asking the element (which lays the page out): the same points as the browser's own."""
    open_program(page, PROGRAMS["neuron"][0])
    worst = page.evaluate(
        """async () => {
            const { pathPointAt } = await import('/static/js/layout.js');
            let worst = 0;
            const paths = [...document.querySelectorAll('path.vg-edge')].filter((p) => p.getAttribute('d'));
            for (const path of paths) {
                const pointAt = pathPointAt(path.getAttribute('d'));
                const length = path.getTotalLength();
                for (const t of [0, 0.15, 0.26, 0.38, 0.5, 0.62, 0.74, 0.85, 1]) {
                    const { x, y } = path.getPointAtLength(t * length);
                    const [px, py] = pointAt(t);
                    worst = Math.max(worst, Math.hypot(px - x, py - y));
                }
            }
            return { worst, paths: paths.length };
        }"""
    )
    assert worst["paths"] >= 5
    assert worst["worst"] < 1.5, f"{worst['worst']:.2f} px from the browser's point"


def test_a_training_run_keeps_the_player_in_view_at_1280x720(page):
    """Its loss curve sits under the program, not between the graph and the player."""
    page.set_viewport_size({"width": 1280, "height": 720})
    open_program(page, "a = 1")
    program = page.evaluate(
        "async () => (await import('/static/js/examples.js')).EXAMPLES.find((e) => e.id === 'py-mlp-training').program"
    )
    open_program(page, program)
    expect(page.locator(".vg-loss-point")).to_have_count(20)
    assert in_viewport(page, "play") and in_viewport(page, "scrubber"), (
        "Play and the scrubber are in view without scrolling"
    )
    axis_px = page.locator(".vg-loss-axes text").first.evaluate(
        "(t) => parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a"
    )
    assert axis_px >= 9, f"the loss curve's axis labels are {axis_px:.1f} px"


# Every option's text measured in the select's own font, against the room the closed select has.
CUT_OPTIONS = """() => {
    const context = document.createElement('canvas').getContext('2d');
    const cut = [];
    for (const select of document.querySelectorAll('[data-vg="examples"], [data-vg="lessons"] select')) {
        const style = getComputedStyle(select);
        context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
        const arrow = 20;
        const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - arrow;
        for (const option of select.options) if (context.measureText(option.text).width > room) cut.push(option.text);
    }
    return cut;
}"""


@pytest.mark.parametrize("size", [(1280, 720), (390, 844)], ids=["1280x720", "390x844"])
def test_the_examples_and_lessons_menus_show_whole_titles(page, size):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    open_program(page, CHAPTER_2, nodes=4)
    assert (
        page.locator('[data-vg="examples"] option').count() > 10
        and page.locator('[data-vg="lessons"] select option').count() > 10
    )
    assert page.evaluate(CUT_OPTIONS) == []


def test_a_one_line_program_wraps_whole_in_the_narrow_editor_at_1280x720(page):
    """Item 8: long lines wrap instead of being cut; the gutter numbers and the code-link band follow the rows."""
    page.set_viewport_size({"width": 1280, "height": 720})
    one_line = "a = 2; b = 3; c = a * b; L = c + a"
    open_program(page, one_line + "\nM = L * 2")
    editor = page.locator('[data-vg="program"]')
    assert editor.evaluate("(t) => t.scrollWidth <= t.clientWidth"), "nothing hidden to the right"
    rows = page.evaluate("document.querySelector('[data-valuegraph]').valuegraph.editor.rows.count(1)")
    assert rows >= 2, "the one-line program takes more than one row of the narrow editor"
    gutter = page.locator('[data-vg="gutter"] div').first.text_content()
    assert gutter == "1" + "\n" * rows + "2\n", "line 2's number sits beside line 2's first row"
    # Pointing at the second line's row marks its nodes and bands that line only.
    metrics = editor.evaluate(
        "(t) => [t.getBoundingClientRect().x, t.getBoundingClientRect().y, "
        "parseFloat(getComputedStyle(t).lineHeight), parseFloat(getComputedStyle(t).paddingTop)]"
    )
    x, y, height, padding = metrics
    page.mouse.move(x + 40, y + padding + (rows + 0.5) * height)
    band = page.locator(".vg-link-hover")
    expect(band).to_have_attribute("data-line", "2")
    page.mouse.move(x + 40, y + padding + 0.5 * height)
    expect(band).to_have_attribute("data-line", "1")
    assert band.evaluate("(b) => b.getBoundingClientRect().height") == pytest.approx(rows * height, abs=1)


def test_following_a_node_at_the_graphs_edge_shows_its_neighbours_not_empty_space(page):
    """At 1024×768 chapter 2 is too wide to read whole: step 0 follows L, at the graph's right edge. The view
    stops at that edge, so c (and L's edge from a) are in view beside it, not the empty space past L."""
    page.set_viewport_size({"width": 1024, "height": 768})
    open_program(page, CHAPTER_2, nodes=4, step=0)
    page.wait_for_function("() => document.querySelector('[data-vg=\"graph\"] svg')?.dataset.motion === 'still'")
    boxes = page.evaluate(
        """() => {
            const panel = document.querySelector('[data-vg="graph"] svg').getBoundingClientRect();
            const box = (label) => { const node = [...document.querySelectorAll('[data-node-id]')]
                .find((n) => n.querySelector('.vg-label')?.textContent === label);
                const r = node.getBoundingClientRect(); return [r.left, r.right]; };
            return { panel: [panel.left, panel.right], L: box('L'), c: box('c'), a: box('a') };
        }"""
    )
    panel, right_of_l, c = boxes["panel"], boxes["L"][1], boxes["c"]
    assert boxes["a"][0] < panel[0], f"the graph does not fit whole here (else this tests nothing): {boxes}"
    assert panel[0] <= c[0] and c[1] <= panel[1], f"c is in view: {boxes}"
    assert panel[1] - right_of_l < 0.1 * (panel[1] - panel[0]), f"no empty tenth of the panel past L: {boxes}"
