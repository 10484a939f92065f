"""Issue 22: the walk plays at the level shown. An MLP forward pass opens folded into its layers;
the player then steps box to box (the caption naming the box and the gradient that arrived and
left, as sums), the counter and the scrubber count those steps, the URL keeps the node step, opening
a box keeps the step and then walks its nodes one by one, and the embed's goto works at box level."""

import re
from urllib.parse import parse_qs, quote, urlparse

from pagehelpers import served_elsewhere, url_for, wait_for_graph
from playwright.sync_api import expect

MLP_FORWARD = "from micrograd.nn import MLP\n\nn = MLP(3, [4, 4, 1])\nx = [2.0, 3.0, -1.0]\ny = n(x)\ny.backward()\n"
APP = "document.querySelector('[data-valuegraph]').valuegraph"


def app_eval(page, body, arg=None):
    return page.evaluate(f"(arg) => {{ const app = {APP}; {body} }}", arg)


def open_mlp(page):
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(url_for(MLP_FORWARD))
    wait_for_graph(page)
    expect(page.locator(".vg-scope-box")).to_have_count(3)


def shown(page):
    """(level step, node step, counter text, scrubber value and max, caption) as the page shows them."""
    scrubber = page.locator('[data-vg="scrubber"]')
    return {
        "level": app_eval(page, "return app.controls.levelStep;"),
        "node": app_eval(page, "return app.controls.step;"),
        "counter": page.locator('[data-vg="step-label"]').text_content(),
        "scrubber": (int(scrubber.input_value()), int(scrubber.get_attribute("max"))),
        "caption": page.locator('[data-vg="caption"]').text_content(),
    }


def url_step(page):
    return int(parse_qs(urlparse(page.url).query)["step"][0])


def node_caption(page, k):
    """What node step k says today, from timeline.js (a drawn node's step says the same at any level)."""
    return page.evaluate(
        f"async (k) => (await import('/static/js/timeline.js')).caption({APP}.timeline, k)",
        k,
    )


def forward(page):
    page.get_by_role("button", name="Step forward", exact=True).click()


def test_stage_2_steps_box_to_box_with_what_arrived_and_left(page):
    open_mlp(page)
    levels = app_eval(page, "return { last: app.levels.last, nodeLast: app.timeline.last };")
    assert levels["last"] * 5 < levels["nodeLast"], "388 node steps are a few dozen at the layers' level"
    page.get_by_role("button", name="Start of stage 2").click()
    forward(page)  # y's own step: it is drawn, so it says what it says today
    now = shown(page)
    assert now["caption"] == node_caption(page, now["node"])
    forward(page)
    now = shown(page)
    caption = page.locator('[data-vg="caption"]')
    assert now["caption"].startswith(
        "Stage 2 · Gradient arrives at ⊞ Layer[2] (Σ 1 over 1 edge) and leaves it to ⊞ Layer[1] (Σ "
    )
    # The counter and the scrubber count level steps; the node step is further on.
    assert now["counter"] == f"{now['level']} / {levels['last']}"
    assert now["scrubber"] == (now["level"], levels["last"])
    assert now["node"] > now["level"]
    expect(page.locator(".vg-scope-box.is-focus")).to_have_attribute("data-scope", re.compile(r"Layer\[2\]"))
    expect(page.locator(".vg-scope-box.is-receiving")).to_have_attribute("data-scope", re.compile(r"Layer\[1\]"))
    left = re.search(r"leaves it to ⊞ Layer\[1\] \(Σ (\S+) over", now["caption"]).group(1)
    # What left Layer[2] is what arrives at Layer[1], one step later.
    forward(page)
    expect(caption).to_contain_text(f"Gradient arrives at ⊞ Layer[1] (Σ {left} over 1 edge)")
    expect(page.locator(".vg-scope-box.is-focus")).to_have_attribute("data-scope", re.compile(r"Layer\[1\]"))
    # To the end: every step of stage 2 from here is a layer's, the focused box the one named.
    while shown(page)["level"] < levels["last"]:
        forward(page)
        now = shown(page)
        name = re.match(r"Stage 2 · Gradient (?:arrives at|moves on inside) ⊞ (Layer\[\d\])", now["caption"]).group(1)
        focused = page.locator(".vg-scope-box.is-focus").get_attribute("data-scope")
        assert f"› {name}#" in focused
    assert now["node"] == levels["nodeLast"] and " Done: " in now["caption"]
    # The stage 2 table lists the same steps, one row each.
    rows = page.locator('[data-vg="propagate-table"] tbody tr[data-step]')
    assert rows.count() == levels["last"] - app_eval(page, "return app.levels.propagateStart;") + 1
    expect(rows.last).to_have_class(re.compile("is-current"))
    assert rows.last.locator("td").nth(1).text_content().startswith("⊞ Layer[")


def at_layer_1(page):
    """The MLP opened folded, three steps into stage 2 (Layer[1]'s box step): what the page shows."""
    open_mlp(page)
    page.get_by_role("button", name="Start of stage 2").click()
    for _ in range(3):
        forward(page)
    return shown(page)


def test_the_url_keeps_the_node_step_and_a_reload_shows_the_same_box_step(page):
    before = at_layer_1(page)
    assert "⊞ Layer[1]" in before["caption"]
    page.wait_for_function("(k) => new URL(location.href).searchParams.get('step') === String(k)", arg=before["node"])
    assert url_step(page) == before["node"] != before["level"]
    page.goto(page.url)
    wait_for_graph(page)
    expect(page.locator('[data-vg="caption"]')).to_have_text(before["caption"])
    assert shown(page) == before
    # A URL step inside a box's run shows the step that holds it (and its frame, at the run's end).
    start = app_eval(page, "return app.levels.from[app.controls.levelStep];")
    assert start < before["node"]
    page.goto(url_for(MLP_FORWARD, step=start + 1))
    wait_for_graph(page)
    expect(page.locator('[data-vg="caption"]')).to_have_text(before["caption"])
    assert shown(page)["level"] == before["level"] and shown(page)["node"] == before["node"]


def test_opening_a_box_keeps_the_node_step_and_then_walks_its_nodes_one_by_one(page):
    before = at_layer_1(page)
    start = app_eval(page, "return app.levels.from[app.controls.levelStep];")
    page.get_by_role("button", name=re.compile("^Fit")).click()  # the box whole on screen, following paused
    layer1 = page.locator('.vg-scope-box[data-scope="MLP.__call__ › Layer[1]#0"]')
    layer1.click()
    expect(layer1).to_have_count(0)
    wait_for_graph(page)
    page.wait_for_function(f"() => {APP}.levels.last > {before['scrubber'][1]}")
    # Where a box opens one level down (into its neurons), open the boxes inside it that this run walks too.
    while inner := app_eval(
        page,
        """const { folded } = app.levels;
        for (let k = arg[0]; k <= arg[1]; k++) {
            const item = folded.items[folded.itemOf[app.timeline.steps[k].node]];
            if (item.box && item.box.key.startsWith('MLP.__call__ › Layer[1] › ')) return item.box.key;
        }
        return null;""",
        [start, before["node"]],
    ):
        shown_levels = app_eval(page, "return app.levels.last;")
        page.locator(f'.vg-scope-box[data-scope="{inner}"]').click()
        page.wait_for_function(f"() => {APP}.levels.last > {shown_levels}")
        wait_for_graph(page)
    now = shown(page)
    assert now["node"] == before["node"], "the same node step, now one of the opened box's own"
    assert now["level"] > before["level"] and now["scrubber"] == (
        now["level"],
        app_eval(page, "return app.levels.last;"),
    )
    # The steps' URL is written once they pause (main.js's writeUrl later): wait for it.
    page.wait_for_function("(k) => new URL(location.href).searchParams.get('step') === String(k)", arg=before["node"])
    # Back through the box's run: each of its nodes, drawn now, is a step of its own that says what
    # it says today (its weights are the parameters' box, Layer.__init__, still folded).
    own = app_eval(
        page,
        """const { folded } = app.levels;
        const steps = [];
        for (let k = arg[0]; k <= arg[1]; k++) {
            const id = app.timeline.steps[k].node;
            if (!folded.items[folded.itemOf[id]].box) steps.push(k);
        }
        return steps;""",
        [start, before["node"]],
    )
    assert len(own) >= 4  # a neuron: its relu, its sums and its products
    walked = []
    while True:
        now = shown(page)
        if now["node"] < start:
            break
        if app_eval(page, "return app.levels.item[app.controls.levelStep];") < 0:
            assert now["caption"] == node_caption(page, now["node"])
            walked.append(now["node"])
        page.get_by_role("button", name="Step back", exact=True).click()
    assert sorted(walked) == own


def test_the_embed_goes_to_steps_at_the_box_level(page, live_server):
    # A lesson page on an origin of its own, framing the embed.
    lesson = f"""<!doctype html><title>A lesson</title>
        <iframe id="vg" src="{live_server}/embed?expression={quote(MLP_FORWARD)}" width="900" height="560"></iframe>
        <script>
          window.received = [];
          addEventListener("message", (event) => window.received.push(event.data));
          window.tell = (message) => document.getElementById("vg").contentWindow.postMessage(message, "*");
        </script>"""
    with served_elsewhere(lesson) as url:
        page.goto(url)
        check_the_embeds_goto(page)


def check_the_embeds_goto(page):
    page.frame_locator("#vg").locator(".vg-scope-box").first.wait_for(state="attached")
    page.wait_for_function("() => window.received.some((m) => m.type === 'valuegraph:step')")

    def goto(message):
        page.evaluate("window.received.length = 0")
        page.evaluate("(m) => tell({ type: 'valuegraph:goto', ...m })", message)
        page.wait_for_function("() => window.received.some((m) => m.type === 'valuegraph:step')")
        return page.evaluate("window.received.find((m) => m.type === 'valuegraph:step')")

    first = goto({"shownStep": 1})
    box = goto({"shownStep": 2})
    assert first["step"] == first["shownStep"] == 1
    assert box["shownStep"] == 2 and box["step"] > 3, "the box's run: several node steps"
    assert box["caption"].startswith("Stage 1 · Inside ⊞ Layer[2]: ")
    assert box["shownLast"] * 5 < box["last"]
    # A node step inside the run goes to the step holding it, and reports the run's end.
    goto({"shownStep": 1})
    inside = goto({"step": box["step"] - 2})
    assert (inside["step"], inside["shownStep"]) == (box["step"], 2) and inside["caption"] == box["caption"]
    after = goto({"step": box["step"] + 1})
    assert after["shownStep"] == 3
    counter = page.frame_locator("#vg").locator('[data-vg="step-label"]')
    expect(counter).to_have_text(f"3 / {box['shownLast']}")


def test_presenter_mode_shows_the_same_boxes_and_walks_them(page):
    open_mlp(page)
    titles = page.locator(".vg-scope-title").all_text_contents()
    panel = page.locator('[data-vg="graph"]')
    before = panel.bounding_box()
    page.get_by_role("button", name="Presenter").click()
    expect(page.locator(".vg-app.vg-presenter")).to_have_count(1)
    page.wait_for_function(f"() => document.querySelector('[data-vg=\"graph\"]').clientHeight > {before['height']}")
    assert page.locator(".vg-scope-title").all_text_contents() == titles
    page.get_by_role("button", name="Start of stage 2").click()
    forward(page)
    forward(page)
    expect(page.locator('[data-vg="caption"]')).to_contain_text("Gradient arrives at ⊞ Layer[2]")
    expect(page.locator(".vg-scope-box.is-focus")).to_have_attribute("data-scope", re.compile(r"Layer\[2\]"))
    focus = page.locator(".vg-scope-box.is-focus").bounding_box()
    shown_area = panel.bounding_box()
    assert shown_area["x"] <= focus["x"] + focus["width"] / 2 <= shown_area["x"] + shown_area["width"], "followed"
    assert shown_area["y"] <= focus["y"] + focus["height"] / 2 <= shown_area["y"] + shown_area["height"]
