"""Issue 11's fixes and controls in the browser: the camera follows the walk (and stops for the
learner's own pan and zoom), the broken walks' records agree with the graph, caption and table
(item 9), the nudge test says where it cannot measure (item 10), the Examples menu loads only on
a click or Enter and can give the program back (item 11), gradient flow and presenter mode."""

import pytest
from pagehelpers import node, open_program, url_for, wait_for_graph, wait_until_still
from playwright.sync_api import expect

SOFTMAX = (
    "# three scores; the right answer is class 1\nz1 = 2; z2 = 1; z3 = 0.1\ne1 = exp(z1); e2 = exp(z2); e3 = exp(z3)\n"
    "s = e1 + e2 + e3\np1 = e1 / s\nL = -log(p1)"
)
CHAPTER_2 = "a = 2\nb = 3\nc = a * b\nL = c + a"
VARIANTS = ["correct", "no-visited-check", "assign", "no-topological-order"]


def app_eval(page, body, arg=None):
    return page.evaluate(
        f"(arg) => {{ const app = document.querySelector('[data-valuegraph]').valuegraph; {body} }}", arg
    )


TRANSFORM = "d3.zoomTransform(document.querySelector('[data-vg=graph] svg')).toString()"


def transform(page):
    return page.evaluate(TRANSFORM)


def focus_in_view(page):
    return page.evaluate(
        """() => {
            const app = document.querySelector('[data-valuegraph]').valuegraph;
            const id = app.timeline.steps[app.controls.step].node;
            const r = document.querySelector(`[data-node-id="${id}"] .vg-box`).getBoundingClientRect();
            const p = document.querySelector('[data-vg="graph"]').getBoundingClientRect();
            return r.left >= p.left && r.right <= p.right && r.top >= p.top && r.bottom <= p.bottom;
        }"""
    )


def wait_until_the_view_rests(page, frames=10):
    """Until the zoom transform has stayed the same for `frames` painted frames."""
    page.wait_for_function(
        """(frames) => {
            const t = d3.zoomTransform(document.querySelector('[data-vg=graph] svg')).toString();
            window.__restingFrames = window.__lastTransform === t ? (window.__restingFrames || 0) + 1 : 0;
            window.__lastTransform = t;
            return window.__restingFrames >= frames;
        }""",
        arg=frames,
        polling="raf",
    )


def test_the_camera_follows_until_the_learner_moves_the_view_and_again_after_follow(page):
    page.set_viewport_size({"width": 1280, "height": 720})
    open_program(page, SOFTMAX, step=0)
    follow = page.get_by_role("button", name="Follow")
    assert follow.get_attribute("aria-pressed") == "true"
    last = app_eval(page, "return app.timeline.last;")
    for k in (5, 17, 29, last):
        app_eval(page, "app.controls.go(arg, 'step');", k)
        assert focus_in_view(page), f"step {k}: the current node is in view"
    # The learner's wheel zoom pauses following: the next steps leave the view where it is.
    box = page.locator('[data-vg="graph"]').bounding_box()
    page.mouse.move(box["x"] + 40, box["y"] + 40)
    page.mouse.wheel(0, 400)
    expect(follow).to_have_attribute("aria-pressed", "false")
    wait_until_the_view_rests(page)  # Chromium may deliver one wheel of 400 px as several events
    held = transform(page)
    app_eval(page, "app.controls.go(10, 'step');")
    assert transform(page) == held
    follow.click()
    assert follow.get_attribute("aria-pressed") == "true" and focus_in_view(page)
    # Fit shows the whole graph and pauses following too.
    page.get_by_role("button", name="Fit to screen").click()
    assert follow.get_attribute("aria-pressed") == "false"


def test_moves_are_short_transitions_unless_reduced_motion(browser, base_url):
    for motion, animated in (("no-preference", True), ("reduce", False)):
        context = browser.new_context(base_url=base_url, viewport={"width": 1280, "height": 720}, reduced_motion=motion)
        page = context.new_page()
        page.goto(url_for(SOFTMAX, step=0))
        wait_for_graph(page)
        wait_until_still(page)
        # Read in the same task as the step: a later read could come after a whole transition.
        # the last step walks a leaf, at the other end of the graph from the output the first step shows
        at_once = app_eval(page, f"app.controls.go(app.timeline.last, 'step'); return {TRANSFORM};")
        wait_until_still(page)
        assert (transform(page) != at_once) == animated, motion
        context.close()


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_update_starts_from_the_childs_previous_grad_and_the_views_agree(page, variant):
    """Item 9 on every example: replay the timeline the page builds, as the page shows it."""
    open_program(page, CHAPTER_2, nodes=4)
    problems = page.evaluate(
        """async (variant) => {
            const base = new URL(document.querySelector('script[type=module]').src).pathname
                .replace(/main\\.js.*$/, '');
            const [{ EXAMPLES }, { fetchBackward }, timeline, { formatNumber, nodeName }] = await Promise.all(
                ['examples.js', 'api.js', 'timeline.js', 'format.js'].map((m) => import(base + m)));
            const problems = [];
            for (const example of EXAMPLES) {
                const model = await fetchBackward({ expression: example.program, variant });
                // A program's own value class: its nodes hold the learner's grads, which the
                // learner's own walk ends at; the course's walk ends at what the course gives.
                const own = model.gradient_check !== undefined;
                if (own && variant === "correct") {
                    const course = timeline.buildTimeline(model);
                    for (const node of course.nodes) {
                        const shown = timeline.gradAt(course, node.id, course.last);
                        if (!Object.is(shown, node.expected_grad))
                            problems.push(`${example.id}: the course's walk ends at ${shown}, `
                                + `expected_grad ${node.expected_grad}`);
                    }
                }
                const tl = timeline.buildTimeline(model, { walk: own ? "learner" : "course" });
                const previous = new Map(own ? [] : [[tl.output, 1]]); // the learner's seed is a write of its own
                for (const step of tl.steps) {
                    for (const u of step.updates ?? []) {
                        const before = previous.get(u.child) ?? 0;
                        if (!Object.is(u.before, before)) {
                            const child = nodeName(tl.nodes[u.child]);
                            problems.push(`${example.id}: ${child} before ${u.before}, previous after ${before}`);
                        }
                        previous.set(u.child, u.after);
                    }
                }
                const end = timeline.caption(tl, tl.last);
                for (const node of tl.nodes) {
                    const shown = timeline.gradAt(tl, node.id, tl.last);
                    if (!Object.is(shown, node.grad)) {
                        const ends = `the graph ends at ${nodeName(node)}.grad ${shown}`;
                        problems.push(`${example.id}: ${ends}, the table says ${node.grad}`);
                    }
                    const named = `${nodeName(node)}.grad = `;
                    if (node.op === null && node.label !== null && end.includes(named)
                        && !end.includes(named + formatNumber(node.grad)))
                        problems.push(`${example.id}: the caption disagrees on ${nodeName(node)}: ${end}`);
                }
            }
            return problems;
        }""",
        variant,
    )
    assert problems == []


def test_the_no_topological_order_walk_on_chapter_2_never_shows_0_plus_1_is_4(page):
    open_program(page, CHAPTER_2, nodes=4, variant="no-topological-order")
    captions = []
    last = app_eval(page, "return app.timeline.last;")
    for k in range(last + 1):
        app_eval(page, "app.controls.go(arg, 'step');", k)
        captions.append(page.locator('[data-vg="caption"]').text_content())
    text = " ".join(captions)
    assert "a.grad += 1 × 1, so 3 → 4" in text and "0 → 4" not in text and "4 → 3" not in text
    assert "a.grad = 4" in captions[-1]
    assert page.locator('[data-node-id="0"] .vg-grad').text_content() == "4"


def test_the_nudge_test_says_where_it_cannot_measure(page):
    open_program(page, "a = 0\nL = log(a)", nodes=2)
    panel = page.locator('[data-vg="nudge"]')
    difference = panel.locator('[data-nudge="difference"]')
    difference.filter(has_text="cannot measure").wait_for()
    text = difference.text_content()
    assert "✓" not in text and "✗" not in text
    assert "the output is −∞ here" in text
    panel.get_by_role("button", name="Check every leaf").click()
    row = panel.locator('tr[data-leaf="0"]')
    row.wait_for()
    assert row.get_attribute("data-verdict") == "unmeasurable"
    assert row.locator("td").nth(3).text_content() == "cannot measure"
    summary = panel.locator('[data-nudge="summary"]').text_content()
    assert summary.startswith("None of the 1 leaf can be measured") and "NaN or ∞" in summary
    assert page.locator('[data-vg="graph"] [data-nudge="disagree"]').count() == 0


def test_arrow_keys_on_the_examples_menu_do_not_replace_the_program_and_it_can_be_restored(page):
    mine = "x = 5\ny = x * x"
    open_program(page, mine, nodes=2)
    menu = page.get_by_label("Examples")
    menu.focus()
    menu.evaluate("(m) => { window.__changes = 0; m.addEventListener('change', () => window.__changes++); }")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.wait_for_function("() => window.__changes === 2")  # both moves reached the menu
    assert page.locator('[data-vg="program"]').input_value() == mine, "browsing with the arrows loads nothing"
    page.keyboard.press("Enter")  # the second example, chapter 1's exercise, loads now
    page.wait_for_function("() => document.querySelector('[data-vg=program]').value.endsWith('e = d ** 2')")
    wait_for_graph(page, 5)
    restore = page.get_by_role("button", name="Restore my program")
    assert restore.is_visible()
    restore.click()
    wait_for_graph(page, 2)
    assert page.locator('[data-vg="program"]').input_value() == mine and not restore.is_visible()
    menu.select_option("reuse")  # a click on an option loads at once
    wait_for_graph(page, 3)


def test_gradient_flow_widths_and_colours_and_its_legend(page):
    open_program(page, "x = 2\nw = -3\nL = x * w + x", nodes=None, step=0)
    flow = page.get_by_role("button", name="Gradient flow")
    legend = page.locator('[data-vg="flow-legend"]')
    assert not legend.is_visible()
    flow.click()
    assert legend.is_visible() and "green adds" in legend.text_content()
    app_eval(page, "app.controls.go(app.timeline.last, 'step');")
    edges = page.evaluate(
        """() => [...document.querySelectorAll('path.vg-edge.has-flow')].map((p) => ({
            key: p.dataset.edge, width: parseFloat(getComputedStyle(p).strokeWidth),
            sign: ['positive', 'negative', 'zero'].find((s) => p.classList.contains('is-' + s)) }))"""
    )
    by_key = {e["key"]: e for e in edges}
    assert len(by_key) == 4  # every edge has passed its gradient by the end
    times = page.evaluate(
        "() => { const n = document.querySelector('[data-valuegraph]').valuegraph.model.nodes; return n.find((d) => "
        "d.op === '*').id; }"
    )
    # x*w passes w's data (-3) × 1 to x: negative and the widest; and x's data (2) to w: positive.
    assert by_key[f"{times}:0"]["sign"] == "negative" and by_key[f"{times}:1"]["sign"] == "positive"
    assert by_key[f"{times}:0"]["width"] > by_key[f"{times}:1"]["width"]
    app_eval(page, "app.controls.go(0, 'step');")
    assert page.locator("path.vg-edge.has-flow").count() == 0, "nothing has flowed before stage 2"
    flow.click()
    assert not legend.is_visible()


# x feeds every step of a chain: its edges to b, c and x * 100 (in d) run as one line from x (app/layout.py)
# and branch off at each; the last passes x the most gradient, so it is painted widest.
TRUNK = "x = 2\na = x * 3\nb = a * x\nc = b * x\nd = c + x * 100"
# In the page: x's edges (x is node 0) in the order they are painted, with their flow widths and classes.
EDGES_OUT_OF_X = """() => [...document.querySelectorAll('path.vg-edge')]
    .filter((p) => p.dataset.edge && p.__data__?.child === 0)
    .map((p) => ({ key: p.dataset.edge, width: parseFloat(getComputedStyle(p).strokeWidth),
                   related: p.classList.contains('is-related') }))"""


def test_edges_that_share_a_line_paint_every_flow_and_the_hovered_one_on_top(page):
    open_program(page, TRUNK, nodes=None, step=0)
    page.get_by_role("button", name="Gradient flow").click()
    app_eval(page, "app.controls.go(app.timeline.last, 'step');")
    painted = page.evaluate(EDGES_OUT_OF_X)
    assert len(painted) == 4
    widths = [e["width"] for e in painted]
    assert widths == sorted(widths, reverse=True), "widest first: a narrower flow is never hidden under a wider one"
    c = page.evaluate(
        "() => document.querySelector('[data-valuegraph]').valuegraph.model.nodes.find((n) => n.label === 'c').id"
    )
    page.get_by_role("button", name="Fit to screen").click()
    wait_until_still(page)
    node(page, "c").hover()
    painted = page.evaluate(EDGES_OUT_OF_X)
    assert painted[-1]["key"] == f"{c}:1" and painted[-1]["related"], "the hovered node's edge on top of the line"


def test_presenter_mode_fills_the_screen_and_its_text_size_is_what_the_camera_keeps(page):
    page.set_viewport_size({"width": 1280, "height": 720})
    open_program(page, SOFTMAX, step=30)
    page.get_by_role("button", name="Presenter").click()
    graph = page.locator('[data-vg="graph"]').bounding_box()
    assert graph["height"] > 360, "the graph takes the screen"
    for name in ("play", "scrubber"):
        box = page.locator(f'[data-vg="{name}"]').bounding_box()
        assert box["y"] + box["height"] <= 720
    page.locator('[data-vg="text-size"]').select_option("24")
    app_eval(page, "app.controls.go(31, 'step');")
    px = page.evaluate(
        """() => { const app = document.querySelector('[data-valuegraph]').valuegraph;
            const t = document.querySelector(`[data-node-id="${app.timeline.steps[app.controls.step].node}"] .vg-data`);
            return parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a; }"""
    )
    assert px >= 24
    page.get_by_role("button", name="Leave presenter").click()
    page.get_by_role("button", name="Presenter").click()
    page.keyboard.press("Space")  # plays: it does not press the button that leaves presenter mode
    expect(page.get_by_role("button", name="Pause")).to_be_visible()
    assert page.get_by_role("button", name="Leave presenter").get_attribute("aria-pressed") == "true"
    page.keyboard.press("Escape")
    assert page.get_by_role("button", name="Presenter").get_attribute("aria-pressed") == "false"


def test_the_walk_panel_shows_the_walk_order_and_the_current_node_in_stage_2(page):
    open_program(page, SOFTMAX, step=30)
    panel = page.locator(".vg-walk-panel")
    assert panel.locator(".vg-stack-box h3").text_content() == "Now"
    assert panel.locator(".vg-sorted-box h3").text_content() == "Walk order"
    current = panel.locator('[data-vg="sorted"] li.is-current')
    assert current.count() == 1
    # The list scrolls with the current row, in the frame after the step is shown (walkpanel.js).
    page.wait_for_function(
        """() => { const list = document.querySelector('[data-vg="sorted"]'), row = list.querySelector('.is-current');
            const a = list.getBoundingClientRect(), b = row.getBoundingClientRect();
            return b.top >= a.top && b.bottom <= a.bottom; }"""
    )
    now = panel.locator('[data-vg="stack"] li').all_text_contents()
    assert now[0].endswith(f"· grad {app_eval(page, 'return String(app.timeline.steps[app.controls.step].grad);')}")
    assert "empty" not in " ".join(now)


def test_a_long_thin_big_graph_is_folded_to_use_the_panel(page):
    program = "x = 0.3\nh0 = x\n" + "".join(f"h{i} = tanh(h{i - 1} * 1.01)\n" for i in range(1, 1001)) + "L = h1000"
    page.goto(url_for(program))
    wait_for_graph(page, 3001)
    shape = page.evaluate(
        """async () => {
            const app = document.querySelector('[data-valuegraph]').valuegraph;
            const base = new URL(document.querySelector('script[type=module]').src).pathname
                .replace(/main\\.js.*$/, '');
            const { placeGraph } = await import(base + 'layout.js');
            const svg = document.querySelector('[data-vg=graph] svg');
            const unfolded = placeGraph(app.model, { direction: 'LR', compact: true });
            const box = svg.getBoundingClientRect();
            return { folded: app.camera.fitScale(),
                     unfolded: Math.min(box.width / unfolded.width, box.height / unfolded.height), height: box.height };
        }"""
    )
    # One row of 3,001 records was a hairline at Fit; in bands it takes the panel's shape.
    assert shape["folded"] > 8 * shape["unfolded"], shape


def test_presenter_mode_keeps_the_lesson_beside_the_graph_and_tab_out_of_what_it_covers(page):
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto("/?lesson=propagate")
    page.wait_for_url(lambda url: "step=11" in url)
    page.get_by_role("button", name="Presenter").click()
    caption = page.locator('[data-lesson="caption"]')
    expect(caption).to_be_visible()
    expect(page.get_by_role("button", name="Next lesson")).to_be_visible()
    expect(page.locator('[data-vg="program"]')).to_be_hidden()  # the rest of the editor's panel is not shown
    lesson, graph = (page.locator(s).bounding_box() for s in ('[data-vg="lessons"]', '[data-vg="graph"]'))
    assert lesson["x"] >= graph["x"] + graph["width"] and lesson["y"] + lesson["height"] <= 720, (lesson, graph)
    # Tab goes round what the presenter's screen shows, never to the header or footer behind it
    covered = []
    for _ in range(40):
        page.keyboard.press("Tab")
        place = page.evaluate(
            """() => { const e = document.activeElement, app = document.querySelector('.vg-app');
                return [e.tagName, e.textContent.trim().slice(0, 20), e === document.body || app.contains(e)]; }"""
        )
        if not place[2]:
            covered.append(place[:2])
    assert covered == [], f"focus went behind the presenter's screen: {covered}"
    page.keyboard.press("Escape")
    expect(page.get_by_role("link", name="API")).not_to_have_attribute("inert", "")
    expect(page.locator('[data-vg="program"]')).to_be_visible()
