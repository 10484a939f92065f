"""A big graph's first picture (issue 22): the page asks /backward without the layout of every node
(layout_max_nodes), lays out the collapsed view it opens with, and asks for the whole graph's layout
only when the learner expands everything."""

import json

from pagehelpers import url_for

# 270 calls of a function, each in a loop pass of its own (19 nodes a pass): 5,131 nodes, above the
# page's LAYOUT_WITH_ANSWER (5,000); it opens with the loop passes folded into boxes.
PROGRAM = """from micrograd.engine import Value

def cell(x, w):
    a = (x * w + 1).tanh()
    b = (a * a + x).relu()
    return (a * b + w * 2).tanh() * a + b * 0.5

total = Value(0.0)
for i in range(270):
    total = total + cell(Value(i / 270), Value(0.5))
total.backward()
"""
NODES = 5131


def test_a_big_graph_opens_collapsed_without_its_whole_layout_and_expands_with_it(page):
    asked = []  # (path, request body) of each POST
    page.on("request", lambda request: asked.append((request.url.split("/")[-1], request.post_data)))
    page.goto(url_for(PROGRAM))
    page.wait_for_function("() => document.querySelectorAll('.vg-scope-box').length > 0", timeout=30_000)

    sent = [json.loads(body) for path, body in asked if path == "backward"]
    assert len(sent) == 1
    assert sent[0]["layout"] is True and sent[0]["layout_max_nodes"] == 5000
    shown = page.evaluate(
        "() => { const model = document.querySelector('[data-valuegraph]').valuegraph.model;"
        " return {nodes: model.nodes.length, laidOut: 'layout' in model}; }"
    )
    assert shown == {"nodes": NODES, "laidOut": False}  # the answer came without the layout
    layouts = [json.loads(body)["children"] for path, body in asked if path == "layout"]
    assert len(layouts) == 1 and len(layouts[0]) < NODES  # the folded view only

    page.locator('[data-vg="scopes"] summary').click()
    page.get_by_role("button", name="Expand all").click()
    page.wait_for_function(  # every node shown, painted on the canvas (over 5,000 records)
        "(nodes) => { const svg = document.querySelector('[data-vg=\"graph\"] svg.vg-svg');"
        " return svg.dataset.renderer === 'canvas' && Number(svg.dataset.nodeCount) === nodes; }",
        arg=NODES,
        timeout=30_000,
    )
    assert page.locator(".vg-scope-box").count() == 0
    layouts = [json.loads(body)["children"] for path, body in asked if path == "layout"]
    assert len(layouts) == 2 and len(layouts[1]) == NODES  # now the whole graph's, once
    children = page.evaluate(
        "() => document.querySelector('[data-valuegraph]').valuegraph.model.nodes.map((n) => n.children)"
    )
    assert layouts[1] == children
