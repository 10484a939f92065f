"""Issue 22, opening a big box: a parameter table shaped as the transformer's (nine back-to-back calls
of `table`, the biggest 64 × 16 values) opens as nine boxes, one per call; the 1,024-value table
opens by Enter into 32 groups of 32 values, each saying which values it holds, how many, and its
grads; a group opens by a click into its values and folds back with its table; the Scopes list opens
them too; and a step of the walk at the box level names a group by its level (a loss's line)."""

import re

from pagehelpers import open_program
from playwright.sync_api import expect
from test_line_boxes import APP, DEMO, box, boxes_shown, press
from test_value_groups_js import TABLE_NAMES, TABLES

UP = "up = table#0"  # table(64, 16): 1,024 values
GROUP_KEYS = [f"up = table › values {32 * k + 1:,}–{32 * k + 32:,}#0" for k in range(32)]


def open_tables(page):
    page.set_viewport_size({"width": 1280, "height": 720})
    open_program(page, TABLES)
    expect(box(page, UP)).to_have_count(1)


def test_nine_table_calls_open_as_nine_boxes_and_the_biggest_opens_in_groups(page):
    open_tables(page)
    shown = {b["key"]: b for b in boxes_shown(page)}
    assert {f"{name}#0" for name in TABLE_NAMES} <= set(shown), "a box per call of table()"
    assert shown[UP]["title"] == "⊞ up = table"
    assert shown[UP]["sub"] == "1,024 values · 0 in → 1,024 out"
    items = page.evaluate(f"{APP}.scopes.folded().items.length")
    assert items <= page.evaluate("async () => (await import('/static/js/scopes.js')).READABLE_ITEMS")

    press(box(page, UP))
    expect(box(page, UP)).to_have_count(0)
    expect(page.locator('.vg-scope-fold[data-scope="up = table#0"]')).to_have_count(1)
    groups = [b for b in boxes_shown(page) if b["key"].startswith("up = table › ")]
    assert [b["key"] for b in groups] == GROUP_KEYS
    for k, group in enumerate(groups):
        name = f"values {32 * k + 1:,}–{32 * k + 32:,}"
        assert group["title"] == f"⊞ {name}"
        assert group["sub"] == "32 values · 0 in → 32 out"
        assert group["grads"] == "grad not reached yet"
        assert group["label"].startswith(f"⊞ {name} 32 values · 0 in → 32 out grad not reached yet. ")
        assert f"{name} of those up = table made itself, in up = table, collapsed" in group["label"]
    drawn_inside = page.evaluate(
        f"""() => {{
            const {{ items }} = {APP}.scopes.folded();
            return items.filter((item) => !item.box && item.node >= {groups[0]["members"][0]}
                && item.node <= {groups[-1]["members"][-1]}).length;
        }}"""
    )
    assert drawn_inside == 0, "no value of the table drawn loose"

    # A group opens by a click: its 32 values drawn in place; folding the table folds it back.
    second = box(page, GROUP_KEYS[1])
    second.scroll_into_view_if_needed()
    second.click()
    expect(second).to_have_count(0)
    drawn = {int(i) for i in page.locator("[data-node-id]").evaluate_all("els => els.map((e) => e.dataset.nodeId)")}
    assert set(groups[1]["members"]) <= drawn, "its values drawn"
    expect(page.locator(f'.vg-scope-fold[data-scope="{GROUP_KEYS[1]}"]')).to_have_count(1)
    press(page.locator('.vg-scope-fold[data-scope="up = table#0"]'))
    expect(box(page, UP)).to_have_count(1)
    expect(page.locator('.vg-scope-box[data-scope^="up = table › "]')).to_have_count(0)


def test_the_scopes_list_opens_a_table_and_its_groups(page):
    open_tables(page)
    page.locator('[data-vg="scopes"] summary').click()
    table = page.locator('[data-vg="scope-list"] input[data-scope="down = table#0"]')
    expect(table).to_be_checked()
    table.uncheck()
    expect(box(page, "down = table#0")).to_have_count(0)
    first = "down = table › values 1–32#0"
    expect(box(page, first)).to_have_count(1)
    entry = page.locator(f'[data-vg="scope-list"] input[data-scope="{first}"]')
    expect(entry).to_be_checked()
    label = page.locator('[data-vg="scope-list"] label', has=page.locator(f'input[data-scope="{first}"]'))
    expect(label).to_contain_text("values 1–32 (32 nodes)")
    entry.uncheck()
    expect(box(page, first)).to_have_count(0)
    expect(box(page, "down = table › values 33–64#0")).to_have_count(1)


def test_a_walk_step_at_the_box_level_names_a_group_by_its_line(page):
    """The demo-shaped loss's regularisation line (about 680 values, not leaves: the parameters' squares
    and their running sum) opens by Enter into groups, and the walk steps group by group."""
    page.set_viewport_size({"width": 1280, "height": 720})
    open_program(page, DEMO)
    press(box(page, "line 15#0"))
    first = "line 15 › values 1–32#0"
    expect(box(page, first)).to_have_count(1)
    page.wait_for_function(f"() => {APP}.levels.folded?.items.some((item) => item.box?.group)")
    steps = page.evaluate(
        f"""() => {{
            const {{ levels }} = {APP};
            const {{ items }} = levels.folded;
            const steps = [];
            for (let j = levels.propagateStart; j <= levels.last; j++) {{
                const at = levels.item[j];
                if (at >= 0 && items[at].box.group) steps.push([j, items[at].box.key]);
            }}
            return steps;
        }}"""
    )
    groups = {key for _, key in steps}
    assert len(groups) > 10 and all(key.startswith("line 15 › values ") for key in groups), groups
    step, key = steps[0]
    name = re.match(r"line 15 › (values \S+)#0", key)[1]
    page.locator('[data-vg="scrubber"]').fill(str(step))
    caption = page.locator('[data-vg="caption"]')
    expect(caption).to_contain_text(f"⊞ {name} · line 15")
    text = caption.text_content()
    assert re.match(rf"Stage 2 · Gradient arrives at ⊞ {name} · line 15 \(Σ \S+ over \d+ edges?\)", text), text
    expect(box(page, key)).to_have_class(re.compile(r"\bis-focus\b"))
