"""Issue 22, the picture at the model's level, as static/js/scopes.js computes it (run by node on real
answers): which scopes a big graph opens collapsed, how many items each depth leaves, opening a box
one level down and folding it back, what a box is called and what its grads line says."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from app import schemas, service
from engine import Limits

REPO = Path(__file__).resolve().parent.parent
SCOPES_JS = REPO / "static" / "js" / "scopes.js"
TRANSFORMER = REPO / "benchmarks" / "programs" / "char_transformer.py"
MLP_FORWARD = "from micrograd.nn import MLP\n\nn = MLP(3, [4, 4, 1])\nx = [2.0, 3.0, -1.0]\ny = n(x)\ny.backward()\n"


def answer_file(tmp_path, name, expression, files=None):
    """The server's answer for a program, as the page gets it (JSON), in a file node can read."""
    request = schemas.BackwardRequest(expression=expression, files=files or {})
    response = service.answer(request, Limits(max_statements=10**8, max_collection_length=10**7))
    path = tmp_path / f"{name}.json"
    path.write_text(
        json.dumps(response, allow_nan=False), encoding="utf-8"
    )  # (these programs make finite numbers only)
    return path


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    """A one-step transformer on the name "alma" (5 positions, the microgpt shape) and an MLP forward pass."""
    tmp = tmp_path_factory.mktemp("level")
    program = re.sub(r"^steps = \d+", "steps = 1", TRANSFORMER.read_text(encoding="utf-8"), flags=re.M)
    return {
        "transformer": answer_file(tmp, "transformer", program, {"input.txt": "alma\nbo\n"}),
        "mlp": answer_file(tmp, "mlp", MLP_FORWARD),
        "small": answer_file(tmp, "small", "a = 2.0\nb = a * 3 + a\nL = b * b"),
    }


def run_js(answers, body):
    """`body` run as a module with scopes.js's exports as S and each answer's model as models[name];
    what it prints, as JSON."""
    node = shutil.which("node")
    assert node, "node is not installed"
    load = "".join(
        f"models[{json.dumps(name)}] = JSON.parse(readFileSync({json.dumps(str(path))}, 'utf8'));\n"
        for name, path in answers.items()
    )
    imports = f"import * as S from {json.dumps(SCOPES_JS.as_uri())};\nimport {{ readFileSync }} from 'node:fs';\n"
    script = f"{imports}const models = {{}};\n{load}{body}"
    done = subprocess.run([node, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_each_depth_is_counted_as_collapsed_graph_makes_it_and_the_deepest_readable_one_is_chosen(answers):
    got = run_js(
        answers,
        """
        const model = models.transformer;
        const instances = S.scopeInstances(model);
        const sizes = S.frontierSizes(model, instances);
        const made = sizes.map((_, d) => S.collapsedGraph(model, instances, S.frontier(instances, d)).items.length);
        const layers = S.collapsedGraph(model, instances, S.layerScopes(instances)).items.length;
        const counted = S.itemCount(model, instances, S.layerScopes(instances));
        const chosen = [...S.defaultCollapsed(model, instances)].sort();
        const depths = sizes.map((_, d) => [...S.frontier(instances, d)].sort());
        const keys = ['tokens', 'positions', 'out', 'query', 'key', 'value', 'mix', 'up', 'down'];
        const tables = keys.map((key) => `${key} = table#0`);
        const table = tables.every((key) => S.frontier(instances, 0).has(key));
        const [n, readable] = [model.nodes.length, S.READABLE_ITEMS];
        console.log(JSON.stringify({ sizes, made, layers, counted, chosen, depths, readable, n, table, tables }));
        """,
    )
    assert got["n"] > 10_000
    assert got["sizes"] == got["made"], "the fast count is collapsedGraph's"
    assert got["layers"] > got["readable"], "the heads alone leave thousands of loose nodes"
    assert got["counted"] == got["layers"], "itemCount counts what collapsedGraph makes"
    depth = got["depths"].index(got["chosen"])
    assert got["sizes"][depth] <= got["readable"]
    assert all(size > got["readable"] for size in got["sizes"][depth + 1 :]), "the deepest that reads"
    assert got["table"], "each of the nine parameter tables, made back to back, is a scope: a box at every depth"
    assert all(set(got["tables"]) <= set(keys) for keys in got["depths"][1:])


def test_an_mlp_opens_as_its_layers_and_a_small_graph_whole(answers):
    got = run_js(
        answers,
        """
        const out = {};
        for (const name of ['mlp', 'small']) {
          const instances = S.scopeInstances(models[name]);
          const chosen = S.defaultCollapsed(models[name], instances);
          out[name] = {
            layers: [...chosen].sort().join('|') === [...S.layerScopes(instances)].sort().join('|'),
            boxes: S.collapsedGraph(models[name], instances, chosen).items.filter((item) => item.box)
              .map((item) => item.box.key),
          };
        }
        console.log(JSON.stringify(out));
        """,
    )
    assert got["mlp"]["layers"], "today's picture: the layer scopes"
    assert got["mlp"]["boxes"] == [f"MLP.__call__ › Layer[{i}]#0" for i in range(3)]
    assert got["small"]["boxes"] == []


# Checks a collapsed set as the page draws it: every node in one item, every edge going up.
CHECK = """
const check = (model, instances, collapsed) => {
  const { items } = S.collapsedGraph(model, instances, collapsed);
  const counted = new Uint8Array(model.nodes.length);
  for (const item of items) {
    if (item.children.some((c) => c >= item.index)) return 'an edge goes down';
    for (const m of item.box ? item.members : [item.node]) counted[m] += 1;
  }
  return counted.every((c) => c === 1) ? items.length : 'a node in no item or two';
};
"""


def test_a_box_opens_one_level_down_to_single_scalars_and_folds_back(answers):
    """Opening the first attention head of the last position, then each box inside it, down to the
    end: every view is a graph whose edges go up, every node in one item; folding the head returns
    the set it opened from, and folding the first box opened returns the opening picture."""
    got = run_js(
        answers,
        CHECK
        + """
        const model = models.transformer;
        const instances = S.scopeInstances(model);
        const home = S.defaultCollapsed(model, instances);
        const heads = instances.filter((s) => s.name === 'for head = 0');
        const head = heads[heads.length - 1];
        const path = [];
        for (let s = head; s; s = s.parent) path.unshift(s);
        // Open down to the head: each step shows the next scope on the path as a box.
        let collapsed = new Set(home);
        const opened = [];
        let headAsBox = null;
        for (const s of path) {
          if (!collapsed.has(s.key)) continue;
          if (s === head) headAsBox = new Set(collapsed);
          collapsed = S.openedSet(model, instances, collapsed, s.key);
          const children = s.children.filter((c) => collapsed.has(c.key)).map((c) => c.key);
          opened.push({ key: s.key, items: check(model, instances, collapsed), children });
        }
        // And on inside the head, down to single scalars.
        const inside = [];
        let next;
        while ((next = instances.find((s) => collapsed.has(s.key) && s.first >= head.first && s.last <= head.last))) {
          collapsed = S.openedSet(model, instances, collapsed, next.key);
          inside.push({ key: next.key, items: check(model, instances, collapsed) });
        }
        const all = S.collapsedGraph(model, instances, collapsed);
        const inHead = (item) => !item.box && item.node >= head.first && item.node <= head.last;
        const headNodesShown = all.items.filter(inHead).length;
        const folded = S.closedSet(model, instances, collapsed, head.key);
        const first = path.find((s) => s.key === opened[0].key); // the box of the opening picture
        const foldedFirst = S.closedSet(model, instances, collapsed, first.key);
        console.log(JSON.stringify({
          opened, inside, headNodesShown, headSize: head.last - head.first + 1,
          foldedBack: [...folded].sort().join('|') === [...headAsBox].sort().join('|'),
          homeBack: [...foldedFirst].sort().join('|') === [...home].sort().join('|'),
          path: path.map((s) => s.key),
        }));
        """,
    )
    assert got["opened"], "the head is inside a box the graph opened with"
    for step in got["opened"]:
        assert isinstance(step["items"], int), step
        if step["key"] != got["path"][-1]:
            assert step["children"], f"{step['key']} opened one level down, its sub-scopes as boxes"
    assert got["opened"][-1]["key"] == got["path"][-1], "the last one opened is the head"
    assert got["inside"] and all(isinstance(step["items"], int) for step in got["inside"])
    assert got["headNodesShown"] == got["headSize"], "down to single scalars"
    assert got["foldedBack"], "folding the head returns the view it was opened from"
    assert got["homeBack"], "folding the first box opened folds everything opened inside it: the opening picture"


def test_a_box_is_named_by_the_iterations_that_tell_it_apart_and_says_its_grads(answers):
    got = run_js(
        answers,
        """
        const model = models.transformer;
        const instances = S.scopeInstances(model);
        const forwards = instances.filter((s) => s.name === 'forward');
        const layer = S.scopeInstances(models.mlp).filter((s) => s.name === 'Layer[1]');
        const grads = new Array(model.nodes.length).fill(null);
        const box = { inputs: [0, 1, 2], outputs: [3, 4] };
        const gradOf = (id) => grads[id];
        const none = S.boxGrads(box.inputs, box.outputs, gradOf);
        grads[3] = 0.5; grads[4] = 0.25;
        const arrived = S.boxGrads(box.inputs, box.outputs, gradOf);
        grads[0] = -1; grads[2] = 3;
        const passed = S.boxGrads(box.inputs, box.outputs, gradOf);
        const noInputs = S.boxGrads([], box.outputs, gradOf);
        const noStep = S.boxGrads(box.inputs, box.outputs, null);
        console.log(JSON.stringify({
          forwards: S.boxTitles(forwards), layer: S.boxTitles(layer),
          none, arrived, passed, noInputs, noStep,
        }));
        """,
    )
    assert got["forwards"] == [f"for position = {p} › forward" for p in range(len(got["forwards"]))]
    assert got["layer"] == ["Layer[1]"], "a call made once needs no loop to tell it apart"
    assert got["none"]["text"] == "grad not reached yet" and got["none"]["arrived"] is None
    assert got["arrived"]["arrived"] == 0.75 and got["arrived"]["passed"] is None
    assert got["arrived"]["text"] == "grad out Σ 0.75 → in Σ not yet"
    assert got["passed"]["passed"] == 2 and got["passed"]["text"] == "grad out Σ 0.75 → in Σ 2"
    assert got["noInputs"]["text"] == "grad out Σ 0.75", "a box fed no values has nothing to pass on"
    assert got["noStep"]["text"] == "grad not reached yet", "no step shown: no grads"


def test_a_one_node_call_stays_a_node_at_every_depth(answers):
    """A graph made in code whose loop iterations each call a one-node function (`f`) beside a bigger
    one (`g`, which calls `h`): f's calls are never boxes, and the fast count still equals
    collapsedGraph's at every depth."""
    got = run_js(
        answers,
        """
        const nodes = [];
        const make = (scope, children = []) =>
          nodes.push({ id: nodes.length, scope, children, data: 1, label: null }) - 1;
        let total = make([]);
        for (let k = 0; k < 40; k++) {
          const loop = `for i = ${k}`;
          const a = make([loop, 'f']);
          const c = make([loop, 'g', 'h']);
          const b = make([loop, 'g', 'h'], [a, c]);
          const d = make([loop, 'g'], [b, b]);
          total = make([loop], [d, total]);
        }
        const model = { nodes, output: total };
        const instances = S.scopeInstances(model);
        const sizes = S.frontierSizes(model, instances);
        const made = sizes.map((_, d) => S.collapsedGraph(model, instances, S.frontier(instances, d)).items.length);
        const single = sizes.map((_, d) => S.collapsedGraph(model, instances, S.frontier(instances, d)).items
          .filter((item) => item.box && item.members.length === 1).map((item) => item.box.key));
        const inFrontier = [...new Set(sizes.flatMap((_, d) => [...S.frontier(instances, d)]))]
          .filter((k) => k.includes('› f#'));
        console.log(JSON.stringify({ sizes, made, single, inFrontier, n: nodes.length }));
        """,
    )
    assert got["n"] > 100
    assert got["sizes"] == got["made"]
    assert got["inFrontier"] == [], "a one-node call is never a box of its own"
    assert all(keys == [] for keys in got["single"])


def test_a_graph_no_depth_folds_readably_is_folded_only_where_that_draws_a_quarter_of_its_values(tmp_path):
    """Past READABLE_ITEMS at every depth: a loop of one-line steps stays unfolded (a box per
    iteration would hide its values and read no better); many values made at the top level beside
    a few big calls are folded into those calls, and the values, all made on one line, into a line box."""
    chain = "x = Value(1.5)\nfor k in range(300):\n    x = x * 1.01 + k\nx.backward()\n"
    calls = (
        "def block(v):\n    for _ in range(150):\n        v = v * 1.01 + 1\n    return v\n"
        "outs = [block(Value(float(i))) for i in range(4)]\n"
        "loss = sum(o * o + o for o in outs) + sum(Value(float(i)) * i for i in range(90))\nloss.backward()\n"
    )
    answers = {"chain": answer_file(tmp_path, "chain", chain), "calls": answer_file(tmp_path, "calls", calls)}
    got = run_js(
        answers,
        """
        const out = {};
        for (const [name, model] of Object.entries(models)) {
          const instances = S.scopeInstances(model);
          const sizes = S.frontierSizes(model, instances);
          const chosen = S.defaultCollapsed(model, instances);
          const items = chosen.size ? S.collapsedGraph(model, instances, chosen).items.length : model.nodes.length;
          const fewestAt = [...S.frontier(instances, sizes.indexOf(Math.min(...sizes)))].sort();
          const scopes = [...chosen].filter((k) => !k.startsWith('line ')).sort();
          const lines = [...chosen].filter((k) => k.startsWith('line '));
          const fewest = Math.min(...sizes);
          out[name] = { n: model.nodes.length, fewest, chosen: chosen.size, items, fewestAt, scopes, lines };
        }
        console.log(JSON.stringify({ ...out, readable: S.READABLE_ITEMS }));
        """,
    )
    chain, calls = got["chain"], got["calls"]
    assert chain["fewest"] > got["readable"] and chain["fewest"] * 4 > chain["n"]
    assert chain["chosen"] == 0 and chain["items"] == chain["n"], "left unfolded, every value drawn"
    assert calls["fewest"] > got["readable"] and calls["fewest"] * 4 <= calls["n"]
    assert calls["scopes"] == calls["fewestAt"] == [f"block#{i}" for i in range(4)], "folded at its fewest items"
    assert calls["lines"] == ["line 6#0"], "its 374 values made at the top level on line 6 are a line box"
    assert calls["items"] == 6, "four calls, the line box and the loss (the output, always drawn)"
