"""The server-side layered layout: structural invariants on several graphs, chapter 2's
picture, duplicate edges, crossings and determinism. Speed lives in benchmarks/."""

import itertools
import random

import pytest

import app.layout as layout_module
from app.layout import BENDS_PER_NODE, MIN_BENDS, compute_layout, layout_graph
from engine import Limits, evaluate, parse, trace

CHAPTER_2 = "a = 2; b = 3; c = a * b; L = c + a"
NEURON = "u1 = 0.5; u2 = -1.5; v1 = 1.2; v2 = 0.4; bias = 0.3\nz = u1*v1 + u2*v2 + bias\ny = tanh(z)"
REUSE = "a = 1; b = a + a; c = b + b"
CHAIN = "x = 1\n" + "x = x * 1.0001 + 0.5\n" * 300
WIDE_SUM = " + ".join(f"w{i} * x{i}" for i in range(200))
WIDE_VARIABLES = {f"{p}{i}": 0.5 for i in range(200) for p in "wx"}


def traced(source, variables=None):
    return trace(evaluate(parse(source, Limits(max_source_length=10**6)), variables))


def random_program(rng, size):
    """Autograd-like programs with reuse: each new value combines the previous one with any
    earlier one, so the output reaches them all."""
    lines = [f"v{i} = {rng.uniform(0.5, 2):.3f}" for i in range(4)]
    for i in range(4, size):
        a, b = i - 1, rng.randrange(i)
        op = rng.choice(["+", "*", "-"])
        lines.append(f"v{i} = v{a} {op} v{b}" if rng.random() < 0.8 else f"v{i} = tanh(v{a})")
    return "\n".join(lines)


def by_id(layout):
    return {node["id"]: (node["rank"], node["row"]) for node in layout["nodes"]}


GRAPHS = [CHAPTER_2, NEURON, REUSE, CHAIN, random_program(random.Random(1), 60), random_program(random.Random(2), 400)]


@pytest.mark.parametrize("lighter", [False, True], ids=["full-effort", "large-graph-effort"])
@pytest.mark.parametrize("source", GRAPHS, ids=["chapter2", "neuron", "reuse", "chain", "random60", "random400"])
def test_layout_invariants(source, lighter, monkeypatch):
    if lighter:  # the fewer passes used for large graphs keep every invariant
        monkeypatch.setattr(layout_module, "LARGE", 0)
    t = traced(source)
    layout = compute_layout(t)
    place = by_id(layout)
    assert [n["id"] for n in layout["nodes"]] == list(range(len(t.nodes)))
    # one edge per (parent, slot), duplicates kept
    assert len(layout["edges"]) == sum(len(node._children) for node in t.nodes)
    ids = {node: i for i, node in enumerate(t.nodes)}
    for edge in layout["edges"]:
        assert ids[t.nodes[edge["parent"]]._children[edge["slot"]]] == edge["child"]
        child_rank, parent_rank = place[edge["child"]][0], place[edge["parent"]][0]
        assert child_rank < parent_rank, "every edge runs left to right"
        # a bend on each intermediate rank, in order, unless the bend budget drew it straight
        if edge["bends"]:
            assert [rank for rank, _ in edge["bends"]] == list(range(child_rank + 1, parent_rank))
    assert sum(len(e["bends"]) for e in layout["edges"]) <= max(MIN_BENDS, BENDS_PER_NODE * len(t.nodes))
    # no two real nodes in one place, nor a bend on a node or on another bend; integer rows >= 0
    assert len(set(place.values())) == len(place)
    bends = {}  # each bend's place -> the edges through it
    for e in layout["edges"]:
        for bend in e["bends"]:
            bends.setdefault(tuple(bend), []).append(e)
    points = list(place.values()) + list(bends)
    assert len(set(points)) == len(points), "every vertex of a rank has a row of its own"
    for point, through in bends.items():  # a bend is shared only by edges out of one child, and all the way to it
        assert len({e["child"] for e in through}) == 1
        assert len({e["parent"] for e in through}) == len(through), "a second edge to one parent bends apart"
        assert len({tuple(map(tuple, e["bends"][: e["bends"].index(list(point))])) for e in through}) == 1
    assert all(isinstance(row, int) and row >= 0 for _, row in points)
    assert place[t.output][0] == layout["ranks"] - 1 == max(rank for rank, _ in place.values())
    rows = [row for _, row in place.values()] + [row for e in layout["edges"] for _, row in e["bends"]]
    assert layout["rows"] == max(rows) + 1, "rows is the extent of nodes and bends"
    assert min(rows) == 0


def test_small_graphs_get_every_bend():
    t = traced(random_program(random.Random(1), 60))
    layout = compute_layout(t)
    place = by_id(layout)
    for edge in layout["edges"]:
        assert len(edge["bends"]) == place[edge["parent"]][0] - place[edge["child"]][0] - 1


def test_chapter_2_picture():
    t = traced(CHAPTER_2)
    layout = compute_layout(t)
    a, b, c, L = (by_id(layout)[i] for i in range(4))
    assert a[0] < c[0] and b[0] < c[0] and c[0] < L[0]
    assert a[1] != b[1], "a and b stack in one column, not on top of each other"
    a_to_L = next(e for e in layout["edges"] if e["parent"] == 3 and e["child"] == 0)
    assert len(a_to_L["bends"]) == L[0] - a[0] - 1 == 1, "the reused a reaches L through one bend"


def test_a_plus_a_has_two_edges():
    layout = compute_layout(traced("a = 2; b = a + a"))
    edges = [(e["parent"], e["slot"], e["child"]) for e in layout["edges"]]
    assert edges == [(1, 0, 0), (1, 1, 0)]


def test_long_edges_out_of_one_node_share_their_bends():
    # x feeds a chain at every step: its edges to b, c and d run together and branch off at each.
    layout = compute_layout(traced("x = 2; a = x * 3; b = a * x; c = b * x; d = c * x"))
    place = by_id(layout)
    from_x = sorted((e for e in layout["edges"] if e["child"] == 0), key=lambda e: place[e["parent"]][0])
    assert [len(e["bends"]) for e in from_x] == [0, 1, 2, 3]
    assert from_x[1]["bends"] == from_x[2]["bends"][:1] == from_x[3]["bends"][:1]
    assert from_x[2]["bends"] == from_x[3]["bends"][:2]
    assert len({tuple(bend) for e in from_x for bend in e["bends"]}) == 3, "one line, not three"


def test_a_second_long_edge_to_one_parent_bends_apart():
    # node 4 is 0 + 0 three ranks right of 0 (0 is also used by 1, right beside it)
    layout = layout_graph([[], [0], [1], [2], [0, 0], [3, 4]], 5)
    first, second = (e for e in layout["edges"] if e["parent"] == 4)
    assert len(first["bends"]) == len(second["bends"]) == 2
    assert not {tuple(b) for b in first["bends"]} & {tuple(b) for b in second["bends"]}


def crossings(layout):
    """Crossings between edges of adjacent ranks, counting each edge by its segments."""
    place = by_id(layout)
    segments = []
    for edge in layout["edges"]:
        points = [place[edge["child"]], *map(tuple, edge["bends"]), place[edge["parent"]]]
        segments += list(zip(points, points[1:]))
    count = 0
    for (p1, q1), (p2, q2) in itertools.combinations(segments, 2):
        if p1[0] == p2[0] and q1[0] == q2[0] and (p1[1] - p2[1]) * (q1[1] - q2[1]) < 0:
            count += 1
    return count


@pytest.mark.parametrize("source", [CHAPTER_2, NEURON, "a = 1; b = 2; c = 3; d = 4\nL = (a * b) + (c * d)"])
def test_tree_like_graphs_draw_without_crossings(source):
    assert crossings(compute_layout(traced(source))) == 0


def test_wide_sum_keeps_leaves_beside_their_products():
    t = traced(WIDE_SUM, WIDE_VARIABLES)
    layout = compute_layout(t)
    place = by_id(layout)
    for edge in layout["edges"]:
        if t.nodes[edge["parent"]].op == "*":
            assert place[edge["parent"]][0] - place[edge["child"]][0] == 1


def test_same_graph_same_picture():
    source = random_program(random.Random(7), 300)
    assert compute_layout(traced(source)) == compute_layout(traced(source))


def test_five_thousand_nodes_complete():
    t = traced(random_program(random.Random(3), 5000))
    layout = compute_layout(t)
    assert len(layout["nodes"]) == len(t.nodes) >= 5000


def test_bend_budget_drops_the_longest_edges_first():
    # one parameter used by every step of a chain: its edges span ever more ranks
    source = "w = 0.5; x = 1\n" + "x = x * w\n" * 200
    t = traced(source)
    full = compute_layout(t)
    capped = compute_layout(t, max_bends=500)
    assert sum(len(e["bends"]) for e in full["edges"]) > 500
    assert sum(len(e["bends"]) for e in capped["edges"]) <= 500
    dropped = [
        e
        for e in capped["edges"]
        if not e["bends"] and by_id(capped)[e["parent"]][0] - by_id(capped)[e["child"]][0] > 1
    ]
    kept = [e for e in capped["edges"] if e["bends"]]
    span = lambda e: by_id(capped)[e["parent"]][0] - by_id(capped)[e["child"]][0]
    assert dropped and min(map(span, dropped)) >= max(map(span, kept), default=0)


def test_a_single_node_is_one_rank_and_one_row():
    layout = compute_layout(traced("L = 3"))
    assert layout == {"ranks": 1, "rows": 1, "nodes": [{"id": 0, "rank": 0, "row": 0}], "edges": []}


def test_leaves_sit_just_left_of_their_first_consumer():
    # a chain: each step's constants are leaves next to the operation that uses them
    t = traced("x = 1\n" + "x = x * 1.0001 + 0.5\n" * 50)
    layout = compute_layout(t)
    place = by_id(layout)
    for edge in layout["edges"]:
        if not t.nodes[edge["child"]]._children:
            assert place[edge["parent"]][0] - place[edge["child"]][0] == 1
    # and the chain itself is one straight row
    chain_rows = {place[i][1] for i, node in enumerate(t.nodes) if node.op == "+"}
    assert len(chain_rows) == 1


def test_sweeps_undo_the_first_orders_crossing():
    # depth-first from L visits c, a, b and then the bend of a -> L, which crosses b -> c;
    # the sweeps must find the crossing-free order (the bend above c)
    layout = compute_layout(traced(CHAPTER_2))
    place = by_id(layout)
    a_to_L = next(e for e in layout["edges"] if e["parent"] == 3 and e["child"] == 0)
    assert a_to_L["bends"][0][1] < place[2][1]
    assert crossings(layout) == 0


def test_crossings_are_the_pairs_of_segments_that_cross():
    rng = random.Random(6)
    for _ in range(300):
        widths = [rng.randint(1, 40 if rng.random() < 0.2 else 6) for _ in range(rng.randint(2, 5))]
        firsts = list(itertools.accumulate([0, *widths]))
        layers = [rng.sample(range(first, first + width), width) for first, width in zip(firsts, widths)]
        right = [[] for _ in range(firsts[-1])]
        for r in range(len(layers) - 1):  # segments to the next rank, a repeated one sometimes (a + a)
            for vertex in layers[r]:
                right[vertex] = [rng.choice(layers[r + 1]) for _ in range(rng.choice([0, 1, 1, 2, 3]))]
        position = [0] * len(right)
        for layer in layers:
            layout_module._place(position, layer)
        segments = [(position[u], position[v], r) for r, layer in enumerate(layers) for u in layer for v in right[u]]
        crossing = sum(
            r1 == r2 and (u1 - u2) * (v1 - v2) < 0 for (u1, v1, r1), (u2, v2, r2) in itertools.combinations(segments, 2)
        )
        assert layout_module._crossings(layers, right, position) == crossing


def test_a_rank_of_many_segments_all_crossing_counts_them_all():
    # each vertex to its mirror image on the next rank: every pair crosses (once quadratic to count)
    n = 100_000
    layers = [list(range(n)), list(range(n, 2 * n))]
    right = [[2 * n - 1 - vertex] for vertex in range(n)] + [[] for _ in range(n)]
    position = [vertex % n for vertex in range(2 * n)]
    assert layout_module._crossings(layers, right, position) == n * (n - 1) // 2
