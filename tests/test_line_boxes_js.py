"""Line boxes (static/js/scopes.js), run by node on real answers: at a level of more than
READABLE_ITEMS items, the long runs of values made on one source line outside any scope of their own
are boxes too. A graph shaped as micrograd's demo loss (its loss computed at the program's top
level) opens as its model and a box per line of the loss; an attention head opens as its softmax,
its weighted sums and a box for its scores; readable graphs open as before."""

import json
import re

import pytest
from test_model_level_js import CHECK, MLP_FORWARD, answer_file, run_js

# micrograd's demo loss, on 8 points of our own (the benchmark's program has 100): the model's calls,
# then the loss's lines at the top level.
DEMO = """import random

from micrograd.engine import Value
from micrograd.nn import MLP

random.seed(7)
points = [[Value(random.uniform(-1, 1)), Value(random.uniform(-1, 1))] for _ in range(8)]
labels = [1 if k % 2 else -1 for k in range(8)]
model = MLP(2, [16, 16, 1])

scores = [model(point) for point in points]
losses = [(1 + -label * score).relu() for label, score in zip(labels, scores)]
data_loss = sum(losses) * (1.0 / len(losses))
alpha = 1e-4
reg_loss = alpha * sum(p * p for p in model.parameters())
loss = data_loss + reg_loss
loss.backward()
"""
DEMO_LINES = {12: "losses = [", 13: "data_loss = ", 15: "reg_loss = "}  # the loss's lines -> how their code starts

# One attention step over 16 keys, two heads (our own, the shape of benchmarks/programs/char_transformer.py's).
HEAD = """from micrograd.engine import Value


def softmax(scores):
    top = max(s.data for s in scores)
    raised = [(s - top).exp() for s in scores]
    total = sum(raised)
    return [r / total for r in raised]


q = [Value(0.1 * i - 0.3) for i in range(8)]
keys = [[Value(0.01 * (t * 8 + i) - 0.5) for i in range(8)] for t in range(16)]
values = [[Value(0.02 * (t - i)) for i in range(8)] for t in range(16)]
out = []
for head in range(2):
    lo = head * 4
    scores = [sum(q[lo + j] * key[lo + j] for j in range(4)) / 2.0 for key in keys]
    attention = softmax(scores)
    for j in range(4):
        out.append(sum(attention[t] * values[t][lo + j] for t in range(16)))
loss = sum(o * o for o in out)
loss.backward()
"""


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lines")
    return {
        "demo": answer_file(tmp, "demo", DEMO),
        "head": answer_file(tmp, "head", HEAD),
        "mlp": answer_file(tmp, "mlp", MLP_FORWARD),
        "small": answer_file(tmp, "small", "a = 2.0\nb = a * 3 + a\nL = b * b"),
    }


def test_the_demo_opens_as_its_model_and_a_line_box_for_each_line_of_its_loss(answers):
    got = run_js(
        answers,
        CHECK
        + f"const source = {json.dumps(DEMO)};\n"
        + """
        const model = models.demo;
        const instances = S.scopeInstances(model);
        const lines = instances.filter((s) => s.line);
        const home = S.defaultCollapsed(model, instances);
        const { items } = S.collapsedGraph(model, instances, home);
        const boxes = items.filter((item) => item.box).map((item) => item.box);
        // Each line box: a run of consecutive ids, all made on its line, at the top level.
        const runs = lines.map((s) => {
          const ids = [];
          for (let id = s.first; id <= s.last; id++) ids.push(id);
          return {
            key: s.key, line: s.line, size: ids.length, parent: s.parent,
            onLine: ids.every((id) => model.nodes[id].span.line === s.line && model.nodes[id].scope.length === 0),
            // every top-level value of that line but the output is in it
            all: model.nodes.filter((n) => n.scope.length === 0 && n.span?.line === s.line && n.id !== model.output)
              .length,
          };
        });
        const sizes = S.frontierSizes(model, instances);
        const made = sizes.map((_, d) => S.collapsedGraph(model, instances, S.frontier(instances, d)).items.length);
        const withSource = S.scopeInstances(model, source).filter((s) => s.line);
        const box = lines.find((s) => s.line === 12);
        const opened = S.openedSet(model, instances, home, box.key);
        const shownOpen = S.collapsedGraph(model, instances, opened).items
          .filter((i) => !i.box && i.node >= box.first && i.node <= box.last).length;
        const foldedBack = [...S.closedSet(model, instances, opened, box.key)].sort().join('|');
        console.log(JSON.stringify({
          n: model.nodes.length, readable: S.READABLE_ITEMS, home: [...home].sort(),
          items: check(model, instances, home),
          runs, sizes, made, titles: S.boxTitles(boxes), sourceTitles: S.boxTitles(withSource),
          opened: check(model, instances, opened), shownOpen, boxSize: box.last - box.first + 1,
          foldedBack: foldedBack === [...home].sort().join('|'),
          output: items.some((item) => !item.box && item.node === model.output),
        }));
        """,
    )
    assert got["n"] > 4_000
    assert got["sizes"] == got["made"], "the depths are counted as before, without the line boxes"
    assert min(got["sizes"]) > got["readable"], "no depth of scopes reads: its loss's values stay loose"
    # (line 7's points are a run too, but the model's box, which alone uses them, takes them in)
    assert sorted(r["line"] for r in got["runs"]) == [7, *DEMO_LINES]
    for run in got["runs"]:
        assert run["parent"] is None and run["onLine"] and run["size"] == run["all"] >= 8, run
    assert got["home"] == ["MLP.__call__#0", "MLP.__init__#0", "line 12#0", "line 13#0", "line 15#0"]
    assert got["items"] == 6, "the model, its parameters, three lines of the loss and the loss itself"
    assert got["output"], "the output is always drawn"
    assert got["titles"] == [
        "MLP.__init__",
        "MLP.__call__",
        "line 12: (1 + -label * score).relu()",
        "line 13: data_loss = sum(losses) * (1.…",
        "line 15: reg_loss = alpha * sum(p * p …",
    ], "without the program, a line box shows its widest expression's code, after its name"
    with_source = {int(re.match(r"line (\d+)", title)[1]): title for title in got["sourceTitles"]}
    for line, start in {7: "points = [", **DEMO_LINES}.items():
        code = DEMO.splitlines()[line - 1].strip()
        assert code.startswith(start) and with_source[line] == f"line {line}: {code[:29]}…", "the program's own line"
    assert isinstance(got["opened"], int) and got["shownOpen"] == got["boxSize"], "a line box opens whole"
    assert got["foldedBack"], "and folds back into the opening picture"


def test_an_attention_head_opens_as_its_softmax_its_weighted_sums_and_its_scores(answers):
    got = run_js(
        answers,
        CHECK
        + """
        const model = models.head;
        const instances = S.scopeInstances(model);
        const home = S.defaultCollapsed(model, instances);
        const head = instances.find((s) => s.name === 'for head = 1');
        const opened = S.openedSet(model, instances, home, head.key);
        const { items } = S.collapsedGraph(model, instances, opened);
        const inside = items.filter((item) => item.box && item.box.parent === head).map((item) => item.box);
        const loose = items.filter((item) => !item.box && item.node >= head.first && item.node <= head.last).length;
        const scores = inside.find((s) => s.line);
        console.log(JSON.stringify({
          home: [...home].sort(), items: check(model, instances, opened), inside: inside.map((s) => s.name),
          loose, titles: S.boxTitles(inside), scoresSize: scores.last - scores.first + 1,
          sizeOwn: model.nodes.filter((n) => n.scope.join(' › ') === head.path).length,
        }));
        """,
    )
    assert got["home"] == ["for head = 0#0", "for head = 1#0"], "as before: the two heads"
    assert isinstance(got["items"], int)
    assert got["inside"] == ["line 17", "softmax", "for j = 0", "for j = 1", "for j = 2", "for j = 3"]
    assert got["loose"] == 0, "every score of the 16 keys is in the line box"
    assert got["scoresSize"] == got["sizeOwn"] > 16 * 8
    assert got["titles"][0] == "line 17: sum(q[lo + j] * key[lo + j] f…", "its widest expression: the scaled sum"


def test_readable_and_small_graphs_have_no_line_boxes_and_open_as_before(answers):
    """An MLP (125 nodes, read at its layers), a 5-node graph, and a generated graph whose top level
    holds a run of 40 values on one line beside one big call (41 items, readable): no line boxes."""
    got = run_js(
        answers,
        """
        const nodes = [];
        const make = (scope, line, children = []) =>
          nodes.push({ id: nodes.length, scope, children, data: 1, label: null, expr: 'x',
            op: children.length ? '+' : null, span: { line, column: 1, end_line: line, end_column: 5 } }) - 1;
        let total = make([], 1);
        for (let k = 0; k < 150; k++) total = make(['f'], 10, [total]);
        for (let k = 0; k < 40; k++) total = make([], 2, [total]);
        const generated = { nodes, output: make([], 3, [total]) };
        const out = {};
        for (const [name, model] of [...Object.entries(models), ['generated', generated]]) {
          const instances = S.scopeInstances(model);
          out[name] = {
            lines: instances.filter((s) => s.line).length,
            home: [...S.defaultCollapsed(model, instances)].sort(),
            layers: [...S.layerScopes(instances)].sort(),
          };
        }
        console.log(JSON.stringify(out));
        """,
    )
    assert got["mlp"]["lines"] == 0 and got["mlp"]["home"] == got["mlp"]["layers"]
    assert got["small"] == {"lines": 0, "home": [], "layers": []}
    assert got["generated"]["lines"] == 0 and got["generated"]["home"] == ["f#0"]


def test_a_line_box_is_set_as_text_and_says_its_line(answers):
    """A line box's accessible name has its whole line of code (the title shows its start)."""
    got = run_js(
        answers,
        f"const source = {json.dumps(DEMO)};\n"
        + """
        const model = models.demo;
        const instances = S.scopeInstances(model, source);
        const line = instances.find((s) => s.line === 15);
        const box = { title: `⊞ ${S.scopeLabel(line)}`, sub: '', scope: line, inputs: [], outputs: [model.output] };
        console.log(JSON.stringify({ said: S.boxDescription(model, box, null), label: S.scopeLabel(line) }));
        """,
    )
    whole = DEMO.splitlines()[14].strip()
    assert f"line 15, the values line 15 made ({whole}), collapsed" in got["said"]
    assert got["label"] == f"line 15: {whole[:29]}…"
    assert re.match(r"^⊞ line 15: ", got["said"])


def test_a_list_of_300_scopes_has_every_scope_at_the_top_first(tmp_path):
    """The demo on 30 points has more than 300 scopes worth a box (its model's calls hold 30 × 36 layers and
    neurons): the Scopes list, 300 long, lists the outermost first, so the line boxes of its loss are in it."""
    program = DEMO.replace("range(8)", "range(30)")
    got = run_js(
        {"demo": answer_file(tmp_path, "demo30", program)},
        """
        const model = models.demo;
        const instances = S.scopeInstances(model);
        const named = new Set(instances.filter((s) => s.last > s.first || s.children.length));
        const outermost = [...named].filter((s) => s.parent === null || !named.has(s.parent));
        const listed = S.listedScopes(outermost, named, 300);
        const depth = (s) => s.depth;
        const deepestListed = Math.max(...[...listed].map(depth));
        const shallowestLeft = Math.min(...[...named].filter((s) => !listed.has(s)).map(depth));
        const home = [...S.defaultCollapsed(model, instances)];
        const { byKey } = S.scopeIndex(model, instances);
        console.log(JSON.stringify({
          named: named.size, listed: listed.size, top: outermost.map((s) => s.key),
          home: home.filter((k) => listed.has(byKey.get(k))).length, homeSize: home.length,
          parentsListed: [...listed].every((s) => s.parent === null || listed.has(s.parent)),
          deepestListed, shallowestLeft,
        }));
        """,
    )
    assert got["named"] > 300 and got["listed"] == 300
    assert {"line 12#0", "line 13#0", "line 15#0", "MLP.__init__#0", "MLP.__call__#0"} <= set(got["top"])
    assert got["home"] == got["homeSize"] == 5, "every box the graph opens with is listed"
    assert got["parentsListed"], "a tree: every listed scope's parent is listed"
    assert got["deepestListed"] <= got["shallowestLeft"], "level by level"
