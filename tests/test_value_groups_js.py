"""Groups of values (static/js/scopes.js), run by node: a level still too big to read after its line
boxes (a transformer's parameter table of 1,024 values, a loss line's 677 values) cuts each long run
of the values it made itself into groups of GROUP_FAN, in tiers, so that every box opens in at most
GROUP_FAN items down to single values; and separate calls from different places are separate boxes
(the server names them by the key each result is given: `positions = table`)."""

import json

import pytest
from test_line_boxes_js import DEMO
from test_model_level_js import CHECK, MLP_FORWARD, answer_file, run_js

# The scopes of its nine calls of table(): each place names its result, and the scope says so.
TABLE_NAMES = [f"{key} = table" for key in ("tokens", "positions", "out", "query", "key", "value", "mix", "up", "down")]
# A parameter table as the transformer makes it (nine back-to-back calls of `table`, the biggest of
# 64 × 16 values), used by a small forward pass: our own, the shape of char_transformer.py's.
TABLES = """import random

from micrograd.engine import Value

random.seed(3)


def table(rows, cols):
    return [[Value(random.gauss(0, 0.08)) for _ in range(cols)] for _ in range(rows)]


w = {"tokens": table(27, 16), "positions": table(16, 16), "out": table(27, 16)}
layer = {"query": table(16, 16), "key": table(16, 16), "value": table(16, 16), "mix": table(16, 16),
         "up": table(64, 16), "down": table(16, 64)}


def forward(x):
    for name in ["query", "key", "value"]:
        x = [sum(a * b for a, b in zip(row, x)) for row in layer[name]]
    return sum(v * v for v in x)


def every(tables):
    return [p for t in tables for matrix in t.values() for row in matrix for p in row]


def penalty(params):
    return sum(p * p for p in params) * 1e-4


def total(params):
    return sum(params) * 1e-3


params = every([w, layer])
loss = forward(w["tokens"][3]) + penalty(params) + total(params)  # each parameter used by two calls
loss.backward()
"""


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("groups")
    return {
        "tables": answer_file(tmp, "tables", TABLES),
        "demo": answer_file(tmp, "demo", DEMO),
        "mlp": answer_file(tmp, "mlp", MLP_FORWARD),
    }


# Opens `start` (a key) and then, one at a time, every box inside it, down to single values: each
# view checked (every node in one item, edges up) and the items of each opened box counted.
OPEN_DOWN = """
const openDown = (model, instances, collapsed, start) => {
  const scope = instances.find((s) => s.key === start);
  const views = [];
  const countInside = (set, s) => S.collapsedGraph(model, instances, set).items.filter((item) =>
    item.box ? item.box.first >= s.first && item.box.last <= s.last && item.box !== s
             : item.node >= s.first && item.node <= s.last).length;
  let next = scope;
  while (next) {
    collapsed = S.openedSet(model, instances, collapsed, next.key);
    views.push({ key: next.key, items: check(model, instances, collapsed), inside: countInside(collapsed, next) });
    next = instances.find((s) => collapsed.has(s.key) && s.first >= scope.first && s.last <= scope.last);
  }
  const shown = S.collapsedGraph(model, instances, collapsed).items
    .filter((item) => !item.box && item.node >= scope.first && item.node <= scope.last).length;
  return { views, shown, size: scope.last - scope.first + 1 };
};
"""


def test_nine_table_calls_are_nine_boxes_and_the_biggest_opens_in_groups_of_32(answers):
    got = run_js(
        answers,
        CHECK
        + OPEN_DOWN
        + """
        const model = models.tables;
        const instances = S.scopeInstances(model);
        const tables = instances.filter((s) => s.name.endsWith(' = table'));
        const home = S.defaultCollapsed(model, instances);
        const up = tables.find((s) => s.last - s.first + 1 === 64 * 16);
        const opened = S.openedSet(model, instances, home, up.key);
        const { items, itemOf } = S.collapsedGraph(model, instances, opened);
        const boxes = items.filter((item) => item.box?.parent === up);
        const ports = S.boxPorts(model, items, itemOf, S.scopeIndex(model, instances));
        const second = boxes[1];
        const title = '⊞ ' + S.boxTitles([second.box])[0];
        const shown = { title, sub: '', scope: second.box, ...ports.get(second.index) };
        const described = S.boxDescription(model, shown, null);
        console.log(JSON.stringify({
          tables: tables.map((s) => [s.key, s.last - s.first + 1, s.parent === null]),
          home: [...home].sort(), homeItems: check(model, instances, home),
          groups: boxes.map((item) => [item.box.name, item.members.length, item.box.group === true]),
          titles: S.boxTitles(boxes.map((item) => item.box)), described,
          loose: items.filter((item) => !item.box && item.node >= up.first && item.node <= up.last).length,
          down: openDown(model, instances, home, up.key),
          folded: [...S.closedSet(model, instances, opened, up.key)].sort().join('|') === [...home].sort().join('|'),
          layers: [...S.layerScopes(instances)],
          frontier1: [...S.frontier(instances, 1)].filter((k) => k.includes('values')),
        }));
        """,
    )
    sizes = [27 * 16, 16 * 16, 27 * 16] + [16 * 16] * 4 + [64 * 16, 16 * 64]
    names = TABLE_NAMES
    assert got["tables"] == [[f"{name}#0", size, True] for name, size in zip(names, sizes)], "one box per call"
    assert {f"{name}#0" for name in names} <= set(got["home"]), "each table is a box of the opening picture"
    assert isinstance(got["homeItems"], int) and got["homeItems"] <= 60
    assert got["groups"] == [[f"values {32 * k + 1:,}–{32 * k + 32:,}", 32, True] for k in range(32)]
    assert got["titles"][:2] == ["values 1–32", "values 33–64"] and got["loose"] == 0
    assert got["described"].startswith("⊞ values 33–64")
    assert "values 33–64 of those up = table made itself, in up = table, collapsed" in got["described"]
    assert "32 out" in got["described"]  # each of the 32 parameters is used by the loss
    down = got["down"]
    assert all(isinstance(view["items"], int) for view in down["views"]), down["views"]
    assert max(view["inside"] for view in down["views"]) <= 32, "every box opens in at most 32 items"
    assert down["shown"] == down["size"] == 1024, "down to single values"
    assert got["folded"], "folding the table folds its groups back"
    assert got["frontier1"] == [] and not [key for key in got["layers"] if "values" in key], "groups are no scopes"


def test_a_level_of_thousands_of_values_is_cut_in_tiers(answers):
    """A generated level of 2,112 values made in one run, on alternate lines (so no line box), beside
    20 of its own calls: groups of 1,024 values, each of 32 groups of 32; every box
    opens in at most 32 items, down to the values."""
    got = run_js(
        answers,
        CHECK
        + OPEN_DOWN
        + """
        const nodes = [];
        const make = (scope, children = [], line = 5) => nodes.push({ id: nodes.length, scope, children, data: 1,
          label: null, expr: 'x', op: children.length ? '+' : null,
          span: { line, column: 1, end_line: line, end_column: 5 } }) - 1;
        let total = make([]);
        for (let k = 0; k < 20; k++) { make(['linear', 'f']); total = make(['linear', 'f'], [total]); }
        for (let k = 0; k < 2112; k++) total = make(['linear'], [total], 5 + (k % 2));
        const model = { nodes, output: make([], [total]) };
        const instances = S.scopeInstances(model);
        const home = S.defaultCollapsed(model, instances);
        const top = instances.filter((s) => s.group && !s.parent.group);
        const second = top[1];
        console.log(JSON.stringify({
          home: [...home], top: top.map((s) => [s.name, s.last - s.first + 1, s.children.length]),
          inner: second.children.slice(0, 2).map((s) => [s.key, s.last - s.first + 1]),
          lines: instances.filter((s) => s.line).length,
          down: openDown(model, instances, home, 'linear#0'),
        }));
        """,
    )
    assert got["home"] == ["linear#0"] and got["lines"] == 0
    assert got["top"] == [["values 1–1,024", 1024, 32], ["values 1,025–2,048", 1024, 32], ["values 2,049–2,112", 64, 2]]
    assert got["inner"] == [
        ["linear › values 1,025–2,048 › values 1,025–1,056#0", 32],
        ["linear › values 1,025–2,048 › values 1,057–1,088#0", 32],
    ], "places are counted among the values the level made itself"
    down = got["down"]
    assert all(isinstance(view["items"], int) for view in down["views"]), down["views"]
    groups = [view for view in down["views"] if "values" in view["key"]]
    assert len(groups) == 3 + 32 + 32 + 2 and max(view["inside"] for view in groups) <= 32, "each group in ≤ 32"
    assert down["views"][0]["inside"] == 4, "linear opens as its calls of f (one run, one scope) and three groups"
    assert down["shown"] == down["size"]


def test_the_demos_regularisation_line_opens_in_groups(answers):
    """micrograd's demo loss: its line boxes as before; the regularisation's (677 values) opens as
    22 groups, the data loss's (under 100 values on 8 points) whole; the opening picture is unchanged."""
    got = run_js(
        answers,
        CHECK
        + OPEN_DOWN
        + """
        const model = models.demo;
        const instances = S.scopeInstances(model);
        const home = S.defaultCollapsed(model, instances);
        const line = (n) => instances.find((s) => s.line === n);
        const reg = line(15);
        const opened = S.openedSet(model, instances, home, reg.key);
        const { items } = S.collapsedGraph(model, instances, opened);
        const inside = items.filter((item) => item.box?.parent === reg);
        console.log(JSON.stringify({
          home: [...home].sort(), items: check(model, instances, home),
          regSize: reg.last - reg.first + 1, inside: inside.map((item) => item.box.name),
          loose: items.filter((item) => !item.box && item.node >= reg.first && item.node <= reg.last).length,
          dataGroups: line(13).children.length,
          down: openDown(model, instances, home, reg.key),
        }));
        """,
    )
    assert got["home"] == ["MLP.__call__#0", "MLP.__init__#0", "line 12#0", "line 13#0", "line 15#0"]
    assert got["items"] == 6
    count = got["regSize"]
    assert count > 600
    assert got["inside"] == [f"values {k + 1}–{min(k + 32, count)}" for k in range(0, count, 32)]
    assert got["dataGroups"] == 0
    down = got["down"]
    assert max(view["inside"] for view in down["views"]) <= 32 and down["shown"] == down["size"] == count


def test_a_top_level_of_loose_values_opens_grouped(answers):
    """A generated graph whose top level makes 300 values in one run, each on a line of its own (so no
    line box), after a call of 1,001 values: it opens as the call, ten groups and the output; readable
    graphs have no groups, and neither has the same 300 values' graph without the call."""
    got = run_js(
        answers,
        CHECK
        + """
        const nodes = [];
        const make = (scope, line, children = []) => nodes.push({ id: nodes.length, scope, children, data: 1,
          label: null, expr: 'x', op: children.length ? '+' : null,
          span: { line, column: 1, end_line: line, end_column: 5 } }) - 1;
        let total = make(['f'], 1);
        for (let k = 0; k < 1000; k++) total = make(['f'], 1, [total]);
        for (let k = 0; k < 300; k++) total = make([], 10 + k, [total]);
        const model = { nodes, output: make([], 400, [total]) };
        const instances = S.scopeInstances(model);
        const home = S.defaultCollapsed(model, instances);
        const out = { home: [...home], items: check(model, instances, home) };
        for (const name of ['mlp', 'tables']) {
          out[name] = S.scopeInstances(models[name]).filter((s) => s.group && s.parent === null).length;
        }
        const loose = (node, id) => ({ ...node, id, scope: [], children: id ? [id - 1] : [] });
        const flat = { nodes: nodes.slice(1001).map(loose) };
        flat.output = flat.nodes.length - 1;
        out.flat = S.scopeInstances(flat).length;
        console.log(JSON.stringify(out));
        """,
    )
    assert got["home"] == ["f#0"] + [f"values {k + 1}–{k + 32}#0" for k in range(0, 288, 32)] + ["values 289–300#0"]
    assert got["items"] == 12
    assert got["mlp"] == 0 and got["tables"] == 0, "a readable level has no groups"
    assert got["flat"] == 0, "a graph of loose lines alone (no scope, no line box) is drawn whole, ungrouped"


def test_a_group_is_named_in_the_walk_by_its_level(answers):
    """The walk's name for a group's box says whose values it holds."""
    from test_model_level_js import REPO

    timeline = (REPO / "static" / "js" / "timeline.js").as_uri()
    got = run_js(
        answers,
        f"const T = await import({json.dumps(timeline)});\n"
        + """
        const model = models.tables;
        const instances = S.scopeInstances(model);
        const up = instances.find((s) => s.name === 'up = table');
        const group = up.children[0];
        const folded = S.collapsedGraph(model, instances, new Set([group.key]));
        const index = folded.items.findIndex((item) => item.box === group);
        console.log(JSON.stringify({ name: T.itemName(null, folded, index) }));
        """,
    )
    assert got["name"] == "⊞ values 1–32 · up = table"


def test_box_ports_kept_from_one_opening_to_the_next_are_every_edge_read_again(answers):
    """boxPorts with `kept` reuses a box's inputs and outputs while its values are the same: through
    openings and closings (down into the biggest table, then folded back), each view's ports are what
    every edge of the graph says, read again: a member used by a node of another item is an output, a
    node of another item one of its members uses is an input, each once and in id order."""
    got = run_js(
        answers,
        """
        const fromEdges = (model, items, itemOf) => {
          const boxes = items.filter((item) => item.box);
          const ports = new Map(boxes.map((item) => [item.index, { inputs: new Set(), outputs: new Set() }]));
          for (const node of model.nodes) {
            for (const c of node.children) {
              if (itemOf[c] === itemOf[node.id]) continue;
              ports.get(itemOf[node.id])?.inputs.add(c);
              ports.get(itemOf[c])?.outputs.add(c);
            }
          }
          const sorted = (set) => [...set].sort((x, y) => x - y);
          return new Map([...ports].map(([i, p]) => [i, { inputs: sorted(p.inputs), outputs: sorted(p.outputs) }]));
        };
        const result = {};
        for (const name of ['tables', 'demo', 'mlp']) {
          const model = models[name];
          const instances = S.scopeInstances(model);
          const index = S.scopeIndex(model, instances);
          const kept = {};
          let collapsed = S.defaultCollapsed(model, instances);
          const views = [collapsed];
          const size = (s) => s.last - s.first;
          const biggest = instances.filter((s) => collapsed.has(s.key)).sort((a, b) => size(b) - size(a))[0];
          collapsed = S.openedSet(model, instances, collapsed, biggest.key);
          views.push(collapsed);
          const inside = (s) => s.first >= biggest.first && s.last <= biggest.last;
          const inner = instances.find((s) => collapsed.has(s.key) && inside(s));
          if (inner) views.push(S.openedSet(model, instances, collapsed, inner.key));
          views.push(views[0]);
          let same = 0, reused = 0, boxes = 0, previous = new Map();
          for (const set of views) {
            const { items, itemOf } = S.collapsedGraph(model, instances, set);
            const ports = S.boxPorts(model, items, itemOf, index, kept);
            const expected = fromEdges(model, items, itemOf);
            same += JSON.stringify([...ports]) === JSON.stringify([...expected]) ? 1 : 0;
            for (const item of items.filter((item) => item.box)) {
              boxes += 1;
              if (previous.get(item.box.key) === ports.get(item.index)) reused += 1;
            }
            previous = new Map(items.filter((item) => item.box).map((item) => [item.box.key, ports.get(item.index)]));
          }
          result[name] = { views: views.length, same, reused, boxes };
        }
        console.log(JSON.stringify(result));
        """,
    )
    for name, result in got.items():
        assert result["same"] == result["views"] >= 3, (name, result)
        assert 0 < result["reused"] < result["boxes"], (name, result)  # boxes left as they were keep theirs


def test_a_set_of_collapsed_scopes_is_one_cache_key_whatever_its_names_hold(answers):
    """Box and layout caches are keyed by the collapsed set: a name holding the character a joined key
    would use ("|", a line break) must not make two different sets one key and draw one with the other's boxes."""
    got = run_js(
        answers,
        """
        const model = models.tables;
        const names = ['out = table', 'tokens = table']; // as a sorted set joins them
        const crafted = names.join('#0\\n');  // what the two keys joined by a line break read
        const renamed = { ...model, nodes: model.nodes.map((node) => ({ ...node,
          scope: node.scope.map((name) => (name === 'positions = table' ? crafted : name)) })) };
        const instances = S.scopeInstances(renamed);
        const boxes = (set) =>
          S.collapsedGraph(renamed, instances, set).items.filter((i) => i.box).map((i) => i.box.key);
        const two = new Set(names.map((name) => `${name}#0`));
        const one = new Set([`${crafted}#0`]);
        const alone = boxes(one);
        boxes(two);
        console.log(JSON.stringify({
          alone, after: boxes(one), keys: [S.collapsedKey(two), S.collapsedKey(one), S.collapsedKey(new Set(['a|b']))],
          bar: S.collapsedKey(new Set(['a', 'b'])),
        }));
        """,
    )
    assert got["alone"] == got["after"] == ["out = table#0\ntokens = table#0"]
    assert len(set(got["keys"] + [got["bar"]])) == 4
