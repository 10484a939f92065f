"""The walk at the level shown (static/js/timeline.js's levelTimeline, levelFrameAt and levelTableRow,
run by node on answers of the real app): with a scope folded into a box, the box's run of node steps
is one step, told as the gradient arriving at the box and leaving it; a leaf on the way does not cut
the run; with nothing folded the steps, captions and table rows are exactly the node steps'."""

import json
import pathlib
import shutil
import subprocess

import pytest
from fastapi.testclient import TestClient

from app.main import create_app

STATIC = pathlib.Path(__file__).resolve().parent.parent / "static" / "js"

# c is used inside the function and outside it, so it stays drawn: its steps (appended in the sort,
# walked with nothing to pass on) fall inside the function's runs. a, w and b are used only inside
# the function: the box takes them in.
FOLDED_PROGRAM = """c = Value(0.5, label='c')

def neuron(x):
    w = Value(-3.0, label='w')
    b = Value(1.0, label='b')
    return (w * x + b * c).tanh()

a = Value(2.0, label='a')
h = neuron(a)
L = h * c
L.backward()
"""
MLP = "from micrograd.nn import MLP\n\nn = MLP(3, [4, 4, 1])\nx = [2.0, 3.0, -1.0]\ny = n(x)\ny.backward()\n"
CHAPTER_2 = "a = 2; b = 3; c = a * b; L = c + a"


def run_js(body: str, model: dict):
    """`body` run as a module with `model` (an answer), timeline.js as `tl` and scopes.js as `sc`
    in scope; what it prints, as JSON."""
    node = shutil.which("node")
    assert node, "node is not installed"
    script = (
        f"import * as tlm from {json.dumps((STATIC / 'timeline.js').as_uri())};\n"
        f"import * as sc from {json.dumps((STATIC / 'scopes.js').as_uri())};\n"
        f"import {{ formatNumber }} from {json.dumps((STATIC / 'format.js').as_uri())};\n"
        f"const model = {json.dumps(model)};\n{body}"
    )
    done = subprocess.run([node, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def answers():
    client = TestClient(create_app())

    def answer(expression):
        response = client.post("/backward", json={"expression": expression})
        assert response.status_code == 200, response.text
        return response.json()

    return answer


def by_label(model, label):
    return next(n for n in model["nodes"] if n["label"] == label)


def test_a_folded_function_is_one_step_per_run_and_a_shared_leaf_does_not_cut_it(answers):
    model = answers(FOLDED_PROGRAM)
    c, h = by_label(model, "c"), by_label(model, "h")
    got = run_js(
        """
        const tl = tlm.buildTimeline(model);
        const instances = sc.scopeInstances(model);
        const folded = sc.collapsedGraph(model, instances, new Set(instances.map((s) => s.key)));
        const levels = tlm.levelTimeline(tl, folded);
        const steps = [];
        for (let j = 0; j <= levels.last; j++) {
            const frame = tlm.levelFrameAt(tl, levels, j);
            steps.push({ range: [levels.from[j], levels.to[j]], box: levels.item[j] >= 0, caption: frame.caption,
                         focus: frame.focus, index: frame.index, row: tlm.levelTableRow(tl, levels, j).cells,
                         nodeCaption: tlm.caption(tl, levels.to[j]), nodeRow: tlm.tableRow(tl, levels.to[j]).cells });
        }
        const boxMembers = folded.items.filter((item) => item.box).map((item) => item.members);
        const kinds = tl.steps.map((s) => [s.stage, s.kind, s.node]);
        console.log(JSON.stringify({ steps, boxMembers, kinds, levelOf: [...levels.levelOf],
            sortEnd: levels.sortEnd, propagateStart: levels.propagateStart }));
        """,
        model,
    )
    members = got["boxMembers"]
    assert len(members) == 1 and c["id"] not in members[0] and h["id"] in members[0]
    # The sort: the output's own steps, then the function's whole part of the sort as one step (c,
    # a leaf drawn outside the box, is appended on the way and does not cut it), then the output's.
    # The walk: the seed and L's step, then the function's nodes and c's empty step, as one step.
    ranges = [(s["range"][0], s["range"][1], s["box"]) for s in got["steps"]]
    assert ranges == [
        (0, 0, False),
        (1, 1, False),
        (2, 16, True),
        (17, 17, False),
        (18, 18, False),
        (19, 19, False),
        (20, 20, False),
        (21, 28, True),
    ]
    kinds = got["kinds"]
    assert ["sort", "emit", c["id"]] in kinds[2:17] and ["propagate", "propagate", c["id"]] in kinds[21:29]
    assert got["sortEnd"] == 4 and got["propagateStart"] == 5
    assert got["levelOf"] == [0, 1] + [2] * 15 + [3, 4, 5, 6] + [7] * 8
    for step in got["steps"]:
        assert step["index"] == step["range"][1], "a level step shows the frame at the end of its range"
        if not step["box"]:  # a drawn node's step says what it says today
            assert step["caption"] == step["nodeCaption"]
            assert step["row"][1:] == step["nodeRow"][1:]
    # What the box steps say: the nodes sorted; the gradient that arrived (h's, from L: c.data × 1)
    # and what left the box (to c, through b * c: c's final grad less what L gave it, h.data).
    sort_box, walk_box = got["steps"][2], got["steps"][7]
    assert sort_box["caption"] == "Stage 1 · Inside ⊞ neuron: 8 nodes sorted in 15 steps."
    assert sort_box["row"][:3] == ["2", "⊞ neuron", "Inside ⊞ neuron: 8 nodes sorted in 15 steps."]
    numbers = run_js(
        f"console.log(JSON.stringify([formatNumber({c['data']}), formatNumber({c['grad']} - {h['data']})]));", model
    )
    arrived, left = numbers
    assert walk_box["caption"].startswith(
        f"Stage 2 · Gradient arrives at ⊞ neuron (Σ {arrived} over 1 edge) and leaves it to c (Σ {left} over 1 edge):"
        " 7 nodes walked in 8 steps. Done:"
    )
    assert walk_box["row"][2:4] == ["⊞ neuron", f"Σ {arrived}"] and walk_box["row"][0] == "2"
    assert walk_box["focus"] in members[0], "the camera follows a node of the box, not the leaf walked last"


def test_the_box_step_marks_what_left_the_box(answers):
    model = answers(FOLDED_PROGRAM)
    c = by_label(model, "c")
    got = run_js(
        """
        const tl = tlm.buildTimeline(model);
        const instances = sc.scopeInstances(model);
        const folded = sc.collapsedGraph(model, instances, new Set(instances.map((s) => s.key)));
        const levels = tlm.levelTimeline(tl, folded);
        const frame = tlm.levelFrameAt(tl, levels, levels.last);
        const receiving = [...frame.flags.keys()].filter((id) => frame.flags[id] & tlm.FLAG.RECEIVING);
        const focused = [...frame.flags.keys()].filter((id) => frame.flags[id] & tlm.FLAG.FOCUS);
        const updates = frame.step.updates.map((u) => u.child);
        const receivers = frame.level.box.leaves.map((l) => l.name);
        console.log(JSON.stringify({ receiving, focused, focus: frame.focus, updates, receivers }));
        """,
        model,
    )
    assert got["receiving"] == [c["id"]] and got["updates"] == [c["id"]] and got["receivers"] == ["c"]
    assert got["focused"] == [got["focus"]]


@pytest.mark.parametrize("program", [CHAPTER_2, MLP, FOLDED_PROGRAM])
def test_nothing_folded_gives_exactly_the_node_steps(answers, program):
    got = run_js(
        """
        const tl = tlm.buildTimeline(model);
        const levels = tlm.levelTimeline(tl, null);
        const problems = [];
        if (levels.last !== tl.last || levels.sortEnd !== tl.sortEnd || levels.propagateStart !== tl.propagateStart)
            problems.push("counts");
        for (let k = 0; k <= tl.last; k++) {
            const frame = tlm.levelFrameAt(tl, levels, k);
            const today = tlm.frameAt(tl, k);
            const row = tlm.levelTableRow(tl, levels, k);
            if (levels.levelOf[k] !== k || levels.from[k] !== k || levels.to[k] !== k) problems.push(`range ${k}`);
            if (frame.caption !== today.caption || frame.focus !== today.focus || frame.index !== k)
                problems.push(`frame ${k}`);
            if (JSON.stringify(row) !== JSON.stringify(tlm.tableRow(tl, k))) problems.push(`row ${k}`);
            const sameEdges = JSON.stringify(frame.edges) === JSON.stringify(today.edges);
            if (String(frame.flags) !== String(today.flags) || !sameEdges) problems.push(`flags ${k}`);
        }
        console.log(JSON.stringify({ problems, steps: tl.last + 1 }));
        """,
        answers(program),
    )
    assert got["problems"] == [] and got["steps"] > 10


def test_an_mlp_at_its_layers_steps_box_to_box(answers):
    """The MLP forward pass folded into its three layers: 388 node steps become a few dozen; every
    box step of stage 2 names its layer, and what leaves a layer goes to the layer before it."""
    got = run_js(
        """
        const tl = tlm.buildTimeline(model);
        const instances = sc.scopeInstances(model);
        const folded = sc.collapsedGraph(model, instances, sc.defaultCollapsed(model, instances));
        const levels = tlm.levelTimeline(tl, folded);
        const walk = [];
        for (let j = levels.propagateStart; j <= levels.last; j++) {
            const frame = tlm.levelFrameAt(tl, levels, j);
            const box = frame.level.box;
            if (box) walk.push({ name: box.name, to: box.leaves.map((l) => l.name) });
        }
        console.log(JSON.stringify({ nodeSteps: tl.last + 1, levelSteps: levels.last + 1, walk }));
        """,
        answers(MLP),
    )
    assert got["nodeSteps"] == 388 and got["levelSteps"] < 60
    layers = ["⊞ Layer[0]", "⊞ Layer[1]", "⊞ Layer[2]"]
    assert got["walk"] and all(step["name"] in layers for step in got["walk"])
    for step in got["walk"]:
        assert all(layers.index(to) == layers.index(step["name"]) - 1 for to in step["to"])
    assert got["walk"][0] == {"name": "⊞ Layer[2]", "to": ["⊞ Layer[1]"]}
