"""Issue 22 in the page: a 100,000-node transformer step opens at the model's level (a box for each
position, one for each of its parameter tables, the loss drawn), every box says what it is, how many values
it holds and its grads at the step; a head opens in place, one level at a time, by Enter (off
screen a box cannot be clicked; test_code_graph clicks them), and folds back by its ⊟ button and
by the Scopes list; a phone shows the same boxes.

The graph is read from the program's own `names` list rather than input.txt, so a plain URL opens it.

The graph is one training step of benchmarks/programs/char_transformer.py on the name
"christopher" (102,715 nodes). Its program is longer than a request may run by default, so this
module serves the app with a bigger statement, collection and time budget, and a response cache
that keeps the answer: it is computed once per module, then every page load is answered from it."""

import re
import threading
import time
from pathlib import Path

import pytest
import uvicorn
from pagehelpers import GRAPH_IN_VIEW, url_for, wait_for_graph
from playwright.sync_api import expect

from app.config import Settings
from app.main import create_app

PROGRAM_FILE = Path(__file__).resolve().parents[2] / "benchmarks" / "programs" / "char_transformer.py"
NAME = "christopher"
POSITIONS = len(NAME) + 1  # the name's letters and the end token, each predicted from the one before
LOAD_MS = 600_000  # a loaded machine computes and parses the answer slowly; no speed is asserted
WAIT_MS = 120_000  # opening a box asks the server for a layout and redraws
# Its nine calls of table(), each from a place of its own, are nine scopes, named by their keys; the positions'
# table is no box: each position's box alone uses one of its rows, and takes it in.
TABLES = [f"{key} = table" for key in ("tokens", "out", "query", "key", "value", "mix", "up", "down")]
OPENING_BOXES = {f"{name}#0" for name in TABLES} | {f"for step = 0 › for position = {p}#0" for p in range(POSITIONS)}


def program():
    """One step on the name, read from the program's own `names` (no input.txt needed)."""
    text = re.sub(r"^steps = \d+", "steps = 1", PROGRAM_FILE.read_text(encoding="utf-8"), flags=re.M)
    text, count = re.subn(r'with open\("input.txt"\) as names_file:\n    names = .*\n', f'names = ["{NAME}"]\n', text)
    assert count == 1, "the program reads its names as it did"
    return text


@pytest.fixture(scope="module")
def big_server():
    settings = Settings(
        max_statements=100_000_000,
        max_collection_length=10_000_000,
        time_budget=600.0,
        response_cache_bytes=1_000_000_000,  # one answer may take an eighth: the ~95 MB one is kept
    )
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the test server did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def press(page, selector):
    """Enter on a box or fold button (the keyboard's way; it need not be in view, as a click must)."""
    page.locator(selector).focus()
    page.keyboard.press("Enter")


def open_big(page, big_server):
    page.goto(big_server + url_for(program()), timeout=LOAD_MS)
    page.wait_for_function(
        """() => {
            const svg = document.querySelector('[data-vg="graph"] svg');
            return svg?.dataset.nodeCount && document.querySelector('.vg-scope-box')
                && document.querySelectorAll('[data-node-id]').length === Number(svg.dataset.nodeCount)
                && document.querySelector('[data-vg="caption"]').textContent !== '';
        }""",
        timeout=LOAD_MS,
    )


@pytest.fixture(scope="module")
def big(browser, big_server):
    """One 1280x720 page with the big graph (the tests that read and open its boxes use it) and its console errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 720}, reduced_motion="reduce")
    page = context.new_page()
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
    open_big(page, big_server)
    yield page, errors
    context.close()


# Each box drawn, read from the page, beside what the response's nodes say it should: its members
# (from the folded view), the nodes outside it it uses (inputs), its members used outside it
# (outputs), and the grads of both at the step shown, as the page formats numbers.
BOXES_AND_NODES = """async () => {
    const { formatNumber, grouped } = await import('/static/js/format.js');
    const { gradOf, levelFrameAt } = await import('/static/js/timeline.js');
    const vg = document.querySelector('[data-valuegraph]').valuegraph;
    const model = vg.model;
    const { items, itemOf } = vg.scopes.folded();
    const frame = levelFrameAt(vg.timeline, vg.levels, vg.controls.levelStep); // the step shown
    const inputs = new Map(), outputs = new Map();
    for (const node of model.nodes) {
        for (const c of node.children) {
            if (itemOf[c] === itemOf[node.id]) continue;
            if (!inputs.has(itemOf[node.id])) inputs.set(itemOf[node.id], new Set());
            if (!outputs.has(itemOf[c])) outputs.set(itemOf[c], new Set());
            inputs.get(itemOf[node.id]).add(c);
            outputs.get(itemOf[c]).add(c);
        }
    }
    const sum = (ids) => {
        const reached = [...ids].filter((id) => gradOf(frame, id) !== null);
        return reached.length ? formatNumber(reached.reduce((total, id) => total + gradOf(frame, id), 0)) : null;
    };
    return [...document.querySelectorAll('.vg-scope-box')].map((el) => {
        const item = items.find((i) => i.box && i.box.key === el.dataset.scope);
        const ins = inputs.get(item.index) ?? new Set(), outs = outputs.get(item.index) ?? new Set();
        return {
            key: el.dataset.scope, name: item.box.name,
            title: el.querySelector('.vg-scope-title').textContent,
            sub: el.querySelector('.vg-scope-sub').textContent,
            grads: el.querySelector('.vg-scope-grads').textContent,
            label: el.getAttribute('aria-label'),
            members: grouped(item.members.length), ins: grouped(ins.size), outs: grouped(outs.size),
            arrived: sum(outs), passed: sum(ins),
        };
    });
}"""


def check_boxes(page):
    boxes = page.evaluate(BOXES_AND_NODES)
    assert {b["key"] for b in boxes} == OPENING_BOXES
    for box in boxes:
        position = re.match(r"for step = 0 › (for position = \d+)#0$", box["key"])
        assert box["title"] == f"⊞ {box['name']}", "a loop iteration is its own name"
        assert box["title"] == (f"⊞ {box['name']}" if not position else f"⊞ {position[1]}")
        assert position or box["name"] in TABLES
        assert box["sub"] == f"{box['members']} values · {box['ins']} in → {box['outs']} out"
        if box["arrived"] is None:
            assert box["grads"] == "grad not reached yet"
        elif box["ins"] == "0":  # a parameter table: nothing to pass its gradient on to
            assert box["grads"] == f"grad out Σ {box['arrived']}"
        else:
            passed = box["passed"] if box["passed"] is not None else "not yet"
            assert box["grads"] == f"grad out Σ {box['arrived']} → in Σ {passed}"
        assert box["label"].startswith(f"{box['title']} {box['sub']} {box['grads']}. "), (
            "the name starts with the text shown"
        )
    return boxes


def test_a_100000_node_step_opens_at_the_model_level_and_every_box_says_what_it_is(big):
    page, errors = big
    svg = page.locator('[data-vg="graph"] svg')
    assert page.evaluate("document.querySelector('[data-valuegraph]').valuegraph.model.nodes.length") > 100_000
    folded = page.evaluate("document.querySelector('[data-valuegraph]').valuegraph.scopes.folded().items.length")
    readable = page.evaluate("async () => (await import('/static/js/scopes.js')).READABLE_ITEMS")
    assert folded <= readable
    expect(page.locator(".vg-scope-box")).to_have_count(len(OPENING_BOXES), timeout=WAIT_MS)
    assert page.locator(".vg-scope-box").count() + page.locator("[data-node-id]").count() == folded
    assert svg.get_attribute("data-renderer") == "svg", "so few items need no canvas"
    expect(page.locator('[data-vg="scopes-summary"]')).to_contain_text(  # and the positions' table, its box empty
        f"{len(OPENING_BOXES) + 1} collapsed", timeout=WAIT_MS
    )

    # The first picture is of the boxes, readable (not of the walk's first node, the loss, far from them) ...
    shown = page.evaluate(GRAPH_IN_VIEW)["boxes"]
    assert len(shown) >= 3 and all(height >= 12 for height in shown.values()), shown
    assert page.evaluate(GRAPH_IN_VIEW)["output"] is False
    # ... and the camera follows the walk from its first step on.
    page.get_by_role("button", name="Step forward").click()
    expect(page.locator('[data-vg="caption"]')).to_contain_text("Pop", timeout=WAIT_MS)
    page.wait_for_function(f"({GRAPH_IN_VIEW})().output", timeout=WAIT_MS)
    page.get_by_role("button", name="Reset").click()

    # At the first step no gradient has arrived anywhere; at the end every box has its grads.
    boxes = check_boxes(page)
    assert all(b["grads"] == "grad not reached yet" for b in boxes)
    page.get_by_role("button", name="End", exact=True).click()
    expect(page.locator(".vg-scope-grads").first).not_to_have_text("grad not reached yet", timeout=WAIT_MS)
    boxes = check_boxes(page)
    assert all(b["arrived"] is not None for b in boxes)
    assert errors == []


def test_a_head_opens_in_place_by_enter_one_level_at_a_time_and_folds_back(big):
    page, errors = big
    head = "for step = 0 › for position = 11 › forward › for layer, keys, values [0] › for head = 2"
    path = head.split(" › ")
    for depth in range(2, len(path) + 1):  # the last position, its forward, its layer, the head
        key = " › ".join(path[:depth]) + "#0"
        box = page.locator(f'.vg-scope-box[data-scope="{key}"]')
        press(page, f'.vg-scope-box[data-scope="{key}"]')
        expect(box).to_have_count(0, timeout=WAIT_MS)
        expect(page.locator(f'.vg-scope-fold[data-scope="{key}"]')).to_have_count(
            1, timeout=WAIT_MS
        )  # a frame to fold it by
    # Inside the head: its softmax, its four weighted sums (for j) and its scores (the values their line
    # made, 12 keys' worth: more than READABLE_ITEMS items drawn loose) as boxes.
    inside = page.evaluate(
        """(head) => {
            const model = document.querySelector('[data-valuegraph]').valuegraph.model;
            const own = model.nodes.filter((n) => n.scope.join(' › ') === head).map((n) => n.id);
            const scopes = [...new Set(model.nodes.filter((n) => n.scope.join(' › ').startsWith(head + ' › '))
                .map((n) => n.scope.slice(0, head.split(' › ').length + 1).join(' › ')))];
            return { own, scopes };
        }""",
        head,
    )
    assert sorted(s.split(" › ")[-1] for s in inside["scopes"]) == [
        "for j = 0",
        "for j = 1",
        "for j = 2",
        "for j = 3",
        "softmax",
    ]
    for scope in inside["scopes"]:
        expect(page.locator(f'.vg-scope-box[data-scope="{scope}#0"]')).to_have_count(1, timeout=WAIT_MS)
    softmax = page.locator(f'.vg-scope-box[data-scope="{head} › softmax#0"]')
    expect(softmax.locator(".vg-scope-title")).to_have_text("⊞ softmax", timeout=WAIT_MS)
    line = next(n for n, text in enumerate(program().splitlines(), 1) if text.strip().startswith("scores = "))
    scores_key = f"{head} › line {line}#0"
    scores = page.locator(f'.vg-scope-box[data-scope="{scores_key}"]')
    expect(scores.locator(".vg-scope-title")).to_have_text(
        f"⊞ line {line}: scores = [sum(q[lo + j] * key…", timeout=WAIT_MS
    )  # the program's own line, as the editor has it
    members = page.evaluate(
        "(key) => document.querySelector('[data-valuegraph]').valuegraph.scopes.folded().items"
        ".find((item) => item.box?.key === key).members",
        scores_key,
    )
    assert members == inside["own"], "the head's own values, its keys' scores, are the line's box"
    press(page, f'.vg-scope-box[data-scope="{scores_key}"]')
    expect(scores).to_have_count(0, timeout=WAIT_MS)
    # Its 132 values are more than READABLE_ITEMS: they open in groups of 32 (test_value_groups), the first by Enter.
    groups = page.locator(f'.vg-scope-box[data-scope^="{head} › line {line} › values "]')
    expect(groups).to_have_count(-(-len(inside["own"]) // 32), timeout=WAIT_MS)
    group_key = f"{head} › line {line} › values 1–32#0"
    first_group = page.locator(f'.vg-scope-box[data-scope="{group_key}"]')
    expect(first_group.locator(".vg-scope-title")).to_have_text("⊞ values 1–32", timeout=WAIT_MS)
    first_scores = page.evaluate(
        "(key) => document.querySelector('[data-valuegraph]').valuegraph.scopes.folded().items"
        ".find((item) => item.box?.key === key).members",
        group_key,
    )
    assert set(first_scores) <= set(inside["own"][:32]) and len(first_scores) >= 24, "its first keys' scores"
    expect(first_group.locator(".vg-scope-sub")).to_contain_text(f"{len(first_scores)} values", timeout=WAIT_MS)
    press(page, f'.vg-scope-box[data-scope="{group_key}"]')
    expect(first_group).to_have_count(0, timeout=WAIT_MS)
    wait_for_graph(page)  # the box goes when the redraw starts; its values come a chunk a frame
    drawn = {int(i) for i in page.locator("[data-node-id]").evaluate_all("els => els.map((e) => e.dataset.nodeId)")}
    assert set(first_scores) <= drawn, "opened, the group's values are drawn"

    # The camera shows the scores opened, readably: their numbers are on screen and big enough.
    page.wait_for_function("() => document.querySelector('[data-vg=\"graph\"] svg')?.dataset.motion === 'still'")
    graph = page.locator('[data-vg="graph"]').bounding_box()
    seen = 0
    for node_id in first_scores:
        text = page.locator(f'[data-node-id="{node_id}"] .vg-data').bounding_box()
        if text and graph["x"] <= text["x"] and text["x"] + text["width"] <= graph["x"] + graph["width"]:
            if graph["y"] <= text["y"] and text["y"] + text["height"] <= graph["y"] + graph["height"]:
                seen += 1
                assert text["height"] >= 11, "readable at 1280x720"
    # (The graph panel is 898x242 px at 1280x720: at a readable zoom it holds three rows of records.)
    assert seen >= 1, "the opened scores are in view"
    press(page, f'.vg-scope-fold[data-scope="{scores_key}"]')  # its ⊟ button folds it back, its groups too
    expect(scores).to_have_count(1, timeout=WAIT_MS)
    expect(groups).to_have_count(0, timeout=WAIT_MS)

    # Down to single scalars: the softmax opens whole (it is small), then folds back.
    press(page, f'.vg-scope-box[data-scope="{head} › softmax#0"]')
    expect(softmax).to_have_count(0, timeout=WAIT_MS)
    press(page, f'.vg-scope-fold[data-scope="{head} › softmax#0"]')
    expect(softmax).to_have_count(1, timeout=WAIT_MS)

    # Folding the head (its ⊟ button) returns its box; folding the position returns the opening picture.
    press(page, f'.vg-scope-fold[data-scope="{head}#0"]')
    expect(page.locator(f'.vg-scope-box[data-scope="{head}#0"]')).to_have_count(1, timeout=WAIT_MS)
    expect(softmax).to_have_count(0, timeout=WAIT_MS)
    press(page, '.vg-scope-fold[data-scope="for step = 0 › for position = 11#0"]')
    expect(page.locator(".vg-scope-box")).to_have_count(len(OPENING_BOXES), timeout=WAIT_MS)
    expect(page.locator(".vg-scope-fold")).to_have_count(0, timeout=WAIT_MS)
    check_boxes(page)
    assert errors == []


def test_the_scopes_list_opens_and_folds_the_same_boxes(big):
    page, errors = big
    page.locator('[data-vg="scopes"] summary').click()
    position = page.locator('[data-vg="scope-list"] input[data-scope="for step = 0 › for position = 5#0"]')
    expect(position).to_be_checked(timeout=WAIT_MS)
    position.uncheck()
    expect(page.locator('.vg-scope-box[data-scope="for step = 0 › for position = 5#0"]')).to_have_count(
        0, timeout=WAIT_MS
    )
    expect(page.locator('.vg-scope-box[data-scope="for step = 0 › for position = 5 › forward#0"]')).to_have_count(
        1, timeout=WAIT_MS
    )
    forward = page.locator('[data-vg="scope-list"] input[data-scope="for step = 0 › for position = 5 › forward#0"]')
    expect(forward).to_be_checked(timeout=WAIT_MS)  # opened one level down: its sub-scopes are boxes, and listed so
    position.check()
    expect(page.locator(".vg-scope-box")).to_have_count(len(OPENING_BOXES), timeout=WAIT_MS)
    expect(forward).not_to_be_checked(timeout=WAIT_MS)  # folded with everything inside it
    page.locator('[data-vg="scopes"] summary').click()
    assert errors == []


def test_a_phone_shows_the_same_boxes(page, big_server):
    page.set_viewport_size({"width": 390, "height": 844})
    open_big(page, big_server)
    boxes = page.locator(".vg-scope-box")
    expect(boxes).to_have_count(len(OPENING_BOXES), timeout=WAIT_MS)
    assert set(boxes.evaluate_all("els => els.map((e) => e.dataset.scope)")) == OPENING_BOXES
    check_boxes(page)
