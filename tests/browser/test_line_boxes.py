"""Line boxes in the page (issue 22, the model's level): a graph shaped as micrograd's demo loss, its
loss computed at the program's top level, opens as its model, its parameters and a box for each
line of its loss, each titled by its line of the program; a line box opens in place and folds back
(by its ⊟ button, and by the Scopes list); a step of the walk at the box level says what arrived
at a line box and what left it, with the numbers the graph gives; the self-contained file opens
with the same boxes."""

import re

from pagehelpers import open_program, wait_for_graph
from playwright.sync_api import expect

# The demo's shape on 5 points of our own (the benchmark's has 100): 4,258 values.
DEMO = """from micrograd.engine import Value
from micrograd.nn import MLP

points = []
labels = []
for i in range(5):
    points.append([Value(0.4 * i - 0.8), Value(0.8 - 0.3 * i)])
    labels.append(1 if i % 2 else -1)

model = MLP(2, [16, 16, 1])
scores = [model(point) for point in points]
losses = [(1 + -label * score).relu() for label, score in zip(labels, scores)]
data_loss = sum(losses) * (1.0 / len(losses))
alpha = 1e-4
reg_loss = alpha * sum(p * p for p in model.parameters())
loss = data_loss + reg_loss
loss.backward()
"""
LINES = (12, 13, 15)  # losses, data_loss, reg_loss
OPENING_BOXES = ["MLP.__init__#0", "MLP.__call__#0", *(f"line {n}#0" for n in LINES)]
APP = "document.querySelector('[data-valuegraph]').valuegraph"


def box(page, key):
    return page.locator(f'.vg-scope-box[data-scope="{key}"]')


def press(locator):
    """Enter on a box or a fold button (the keyboard's way: the camera, which follows the walk at a
    readable zoom, may have it out of view, where it cannot be clicked)."""
    locator.focus()
    locator.press("Enter")


def boxes_shown(page):
    """Each box drawn: its key, title, subtitle, grads line, accessible name and its members as the folded view
    has them."""
    return page.evaluate(
        f"""() => {{
            const {{ items }} = {APP}.scopes.folded();
            return [...document.querySelectorAll('.vg-scope-box')].map((el) => ({{
                key: el.dataset.scope,
                title: el.querySelector('.vg-scope-title').textContent,
                sub: el.querySelector('.vg-scope-sub').textContent,
                grads: el.querySelector('.vg-scope-grads').textContent,
                label: el.getAttribute('aria-label'),
                members: items.find((item) => item.box?.key === el.dataset.scope).members,
            }}));
        }}"""
    )


def open_demo(page):
    page.set_viewport_size({"width": 1280, "height": 720})
    open_program(page, DEMO)
    expect(page.locator(".vg-scope-box")).to_have_count(len(OPENING_BOXES))


def test_a_demo_shaped_loss_opens_at_the_model_level_with_a_box_for_each_line_of_its_loss(page):
    open_demo(page)
    shown = boxes_shown(page)
    assert [b["key"] for b in shown] == OPENING_BOXES
    items = page.evaluate(f"{APP}.scopes.folded().items.length")
    readable = page.evaluate("async () => (await import('/static/js/scopes.js')).READABLE_ITEMS")
    assert items == 6 <= readable, "five boxes and the loss"
    assert page.locator("[data-node-id]").count() == 1, "the loss, always drawn"
    model = page.evaluate(f"{APP}.model.nodes.map((n) => ({{ line: n.span?.line, scope: n.scope.length }}))")
    program = DEMO.splitlines()
    for b in shown[2:]:
        line = int(re.match(r"line (\d+)#0", b["key"])[1])
        code = program[line - 1].strip()
        assert b["title"] == f"⊞ line {line}: {code[:29]}…", "its line of the program, as the editor has it"
        assert all(model[m] == {"line": line, "scope": 0} for m in b["members"]), "values made on that line"
        assert b["members"] == list(range(b["members"][0], b["members"][-1] + 1)), "a run of consecutive ids"
        assert re.fullmatch(rf"{len(b['members']):,} values · \d+ in → \d+ out", b["sub"])
        assert b["grads"] == "grad not reached yet"


def test_a_line_box_opens_in_place_and_folds_back(page):
    open_demo(page)
    losses = next(b for b in boxes_shown(page) if b["key"] == "line 12#0")
    reg_size = len(next(b for b in boxes_shown(page) if b["key"] == "line 15#0")["members"])
    press(box(page, "line 12#0"))
    expect(box(page, "line 12#0")).to_have_count(0)
    fold = page.locator('.vg-scope-fold[data-scope="line 12#0"]')
    expect(fold).to_have_count(1)
    expect(fold).to_have_attribute("aria-label", "⊟ line 12: collapse line 12 into one box")
    drawn = {int(i) for i in page.locator("[data-node-id]").evaluate_all("els => els.map((e) => e.dataset.nodeId)")}
    assert set(losses["members"]) <= drawn, "its values drawn in place"
    assert [b["key"] for b in boxes_shown(page)] == [k for k in OPENING_BOXES if k != "line 12#0"]
    press(fold)
    expect(box(page, "line 12#0")).to_have_count(1)
    assert [b["key"] for b in boxes_shown(page)] == OPENING_BOXES

    # The Scopes list names it by its line and code too, and opens and folds it.
    page.locator('[data-vg="scopes"] summary').click()
    entry = page.locator('[data-vg="scope-list"] input[data-scope="line 15#0"]')
    expect(entry).to_be_checked()
    label = page.locator('[data-vg="scope-list"] label', has=page.locator('input[data-scope="line 15#0"]'))
    expect(label).to_contain_text("line 15: reg_loss = alpha * sum(p * p …")
    entry.uncheck()
    expect(box(page, "line 15#0")).to_have_count(0)
    # Its 677 values are too many to draw loose: it opens as groups of 32 (test_value_groups)
    groups = page.locator('.vg-scope-box[data-scope^="line 15 › values "]')
    expect(groups.first).to_be_attached()
    assert groups.count() == -(-reg_size // 32)
    expect(page.locator(".vg-scope-box")).to_have_count(len(OPENING_BOXES) - 1 + groups.count())
    entry.check()
    expect(box(page, "line 15#0")).to_have_count(1)
    expect(page.locator(".vg-scope-box")).to_have_count(len(OPENING_BOXES))


def test_a_walk_step_at_the_box_level_reads_what_arrived_at_a_line_box_and_what_left_it(page):
    open_demo(page)
    page.get_by_role("button", name="Start of stage 2").click()
    caption = page.locator('[data-vg="caption"]')
    for _ in range(10):  # the loss's own step, then the regularisation's box
        page.get_by_role("button", name="Step forward", exact=True).click()
        if "⊞ line 15" in (caption.text_content() or ""):
            break
    text = caption.text_content()
    found = re.fullmatch(
        r"Stage 2 · Gradient arrives at ⊞ line 15 \(Σ 1 over 1 edge\) and leaves it to ⊞ MLP\.__init__ "
        r"\(Σ (\S+) over 674 edges\): [\d,]+ nodes walked in [\d,]+ steps\.",
        text,
    )
    assert found, text
    # What left it: each parameter p, taken twice by p * p, gets alpha * p from each edge.
    expected = page.evaluate(
        f"""() => {{
            const model = {APP}.model;
            const {{ items, itemOf }} = {APP}.scopes.folded();
            const at = items.findIndex((item) => item.box?.key === 'line 15#0');
            let sum = 0;
            for (const id of items[at].members) {{
                model.nodes[id].children.forEach((c, slot) => {{
                    if (itemOf[c] !== at) sum += model.nodes[id].local_grads[slot] * 1e-4;
                }});
            }}
            return sum;
        }}"""
    )
    left = float(found[1].replace("\u2212", "-"))
    assert abs(left - expected) <= 1e-4 * abs(expected)
    expect(page.locator(".vg-scope-box.is-focus")).to_have_attribute("data-scope", "line 15#0")
    expect(page.locator(".vg-scope-box.is-receiving")).to_have_attribute("data-scope", "MLP.__init__#0")
    # Its box says the same: what arrived (the loss's 1) and what it passed on (the parameters' grads so far).
    grads = next(b for b in boxes_shown(page) if b["key"] == "line 15#0")["grads"]
    passed = re.fullmatch(r"grad out Σ 1 → in Σ (\S+)", grads)
    assert passed, grads
    assert abs(float(passed[1].replace("\u2212", "-")) - expected) <= 1e-4 * abs(expected)


def test_the_self_contained_file_opens_with_the_same_line_boxes(page, tmp_path):
    open_demo(page)
    titles = page.locator(".vg-scope-title")
    shown = titles.all_text_contents()
    assert len(shown) == len(OPENING_BOXES)
    page.locator('[data-vg="export-menu"] summary').click()
    lesson = tmp_path / "lesson.html"
    with page.expect_download() as info:
        page.locator('[data-vg="export-html"]').click()
    info.value.save_as(lesson)
    page.goto(lesson.as_uri())
    wait_for_graph(page)
    expect(titles).to_have_text(shown)
    assert page.locator(".vg-scope-box").evaluate_all("els => els.map((e) => e.dataset.scope)") == OPENING_BOXES
