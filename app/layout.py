"""A layered (Sugiyama-style) left-to-right layout of a traced graph, computed on the server.

The browser only maps (rank, row) to pixels; every choice is made here, in a few passes over the
graph plus its dummy nodes, each linear (or n log n within one rank), so the same graph always
gets the same picture and a few thousand nodes take tens of milliseconds in pure Python.

1. Ranks (columns). A node's rank is its longest-path distance from the output, counted from
   the right: rank = max_depth - depth, so the output has the highest rank and every edge goes
   from a lower rank (child) to a higher rank (parent). Each node sits exactly one rank left of
   its leftmost consumer, so a leaf (a named variable or a constant) is drawn right next to the
   operation that first uses it instead of in a far-left column of leaves with long edges; only
   the edges to later consumers of a reused node are long.
2. Dummy nodes. An edge spanning k > 1 ranks becomes a chain through k - 1 dummy nodes, one per
   intermediate rank; their positions are the edge's bends. The long edges out of one node to
   different parents share one chain as far as they run together, a line that branches off at
   each parent (dot's edge concentration): a parameter table that every position of a model uses
   is one line, not one per position (the collapsed view of a 100,000-node microgpt step went from
   86 rows to 21). A second edge to the same parent (`a + a`) gets a chain of its own. A graph
   that reuses a node across very many ranks could need millions of bends (a parameter used by
   every step of a 10,000-step chain, or x in a 500-term sum of x*k), and every pass below costs
   time per bend; so past a budget of bends (by default BENDS_PER_NODE per real node, counted per
   edge) the longest edges get no dummies: their bends are [] and the browser draws them straight.
   Measured: a 500-term sum laid out in 2.2 s with 124,000 bends, in 80 ms with the budget.
3. Order within a rank (crossing reduction). A depth-first walk from the output, children in slot
   order, gives the first order: crossing-free for any tree, with a * b drawn a above b. Then
   rounds of barycenter sweeps (left to right by children, then right to left by parents)
   reorder each rank; nodes with no neighbour on the swept side keep their places, ties keep the
   previous order, and the order with the fewest crossings counted after each round is kept, so
   the sweeps never make it worse than the walk's order.
4. Rows (vertical positions). Each vertex prefers the median row of its neighbours (dot's
   heuristic; weighted, with segments between dummies weighing most, so long edges come out
   straight). Each rank then takes the rows nearest to its vertices' preferences (weighted least
   squares) that keep the order and a spacing of at least 1: the pool-adjacent-violators
   algorithm solves that exactly in linear time. Passes sweep the ranks alternately left and
   right. Rows are then rounded to integers monotonically, which keeps the order and the spacing.

Graphs with more than LARGE vertices (nodes plus bends) get one round of sweeps and two passes of
rows instead of two and three: beyond that size the page shows an overview, and the lighter effort
measured 0-14% more crossings in about 70% of the time on random DAGs, MLPs, chains and sums.

Node ids are positions in trace.nodes, which is creation order: a Value's children exist before
it, so every child's id is smaller than its parent's, and walking ids upwards is a topological order.
"""

from collections.abc import Sequence
from itertools import compress, islice
from math import ceil
from operator import add, le, not_, sub

BENDS_PER_NODE = 3
MIN_BENDS = 2_000
# Effort: rounds of crossing reduction (a sweep left to right, then one right to left) and
# passes of row placement. Past LARGE vertices (nodes and bends) the picture is only seen as an
# overview, so fewer passes keep the time linear with a smaller factor.
ORDER_ROUNDS, ROW_PASSES = 2, 3
LARGE, LARGE_ORDER_ROUNDS, LARGE_ROW_PASSES = 20_000, 1, 2
# How hard an edge segment pulls its ends into line: real-real, one end a dummy, both dummies.
REAL_WEIGHT, MIXED_WEIGHT, DUMMY_WEIGHT = 1, 2, 8


def compute_layout(trace, max_bends: int | None = None) -> dict:
    """The wire format's "layout" object for an engine.Trace."""
    return layout_graph(trace.children, trace.output, max_bends)


def layout_graph(children: Sequence[Sequence[int]], output: int, max_bends: int | None = None) -> dict:
    """The same for a graph given as children lists: every child's id is below its parent's and
    every node reaches `output`, the last one (the page's collapsed views are such graphs)."""
    if max_bends is None:
        max_bends = max(MIN_BENDS, BENDS_PER_NODE * len(children))

    rank = _ranks(children, output)
    long_edges = _edges_with_dummies(children, rank, max_bends)
    rank, left, right, chains = _expand(children, rank, long_edges)
    layers = _initial_order(output, left, rank)
    large = len(left) > LARGE
    _reduce_crossings(layers, left, right, LARGE_ORDER_ROUNDS if large else ORDER_ROUNDS)
    row = _assign_rows(layers, left, right, len(children), LARGE_ROW_PASSES if large else ROW_PASSES)

    edges = []
    for parent, kids in enumerate(children):
        for slot, child in enumerate(kids):
            chain = chains.get((parent, slot))
            bends = [[rank[d], row[d]] for d in chain] if chain else []
            edges.append({"parent": parent, "slot": slot, "child": child, "bends": bends})
    return {
        "ranks": rank[output] + 1,
        "rows": max(row) + 1,
        "nodes": [{"id": i, "rank": rank[i], "row": row[i]} for i in range(len(children))],
        "edges": edges,
    }


def _ranks(children, output):
    """Longest path from the output, mirrored so that the output is rightmost."""
    depth = [0] * len(children)
    for parent in range(output, -1, -1):  # parents before children: ids fall towards the leaves
        below = depth[parent] + 1
        for child in children[parent]:
            if depth[child] < below:
                depth[child] = below
    deepest = max(depth)
    return [deepest - d for d in depth]


def _edges_with_dummies(children, rank, max_bends):
    """The (parent, slot) of every edge that gets dummies: all that span several ranks, unless
    their bends would exceed max_bends, in which case the longest go without (ties: lowest id)."""
    spans = [
        (rank[parent] - rank[child] - 1, parent, slot)
        for parent, kids in enumerate(children)
        for slot, child in enumerate(kids)
        if rank[parent] - rank[child] > 1
    ]
    total = sum(s[0] for s in spans)
    if total > max_bends:
        kept = []
        for bends, parent, slot in sorted(spans, key=lambda s: (-s[0], s[1], s[2])):
            if total > max_bends:
                total -= bends
            else:
                kept.append((bends, parent, slot))
        spans = kept
    return {(parent, slot) for _, parent, slot in spans}


def _expand(children, rank, long_edges):
    """Adjacency of the layered graph: real nodes keep their ids, dummies follow them.

    left[v] lists v's neighbours one rank to the left (for a real node: its children in slot
    order, or the last dummy of each long edge), right[v] those one rank to the right.
    An edge left without dummies is left out of the adjacency: it does not take part in ordering.
    The long edges from one child to different parents share their dummies as far as they run
    together (one line that branches off at each parent); a second edge to the same parent
    (a + a) takes a chain of its own."""
    rank = list(rank)
    left = [[] for _ in children]
    right = [[] for _ in children]
    chains = {}
    shared = {}  # (child, k) -> the dummies of the k-th chain out of child, by rank
    for parent, kids in enumerate(children):
        to_parent = {}
        for slot, child in enumerate(kids):
            span = rank[parent] - rank[child]
            if span == 1:
                left[parent].append(child)
                right[child].append(parent)
            elif (parent, slot) in long_edges:
                k = to_parent[child] = to_parent.get(child, -1) + 1
                chain = shared.setdefault((child, k), [])
                while len(chain) < span - 1:
                    dummy = len(rank)
                    rank.append(rank[child] + 1 + len(chain))
                    before = chain[-1] if chain else child
                    left.append([before])
                    right.append([])
                    right[before].append(dummy)
                    chain.append(dummy)
                last = chain[span - 2]
                right[last].append(parent)
                left[parent].append(last)
                chains[parent, slot] = chain[: span - 1]
    return rank, left, right, chains


def _initial_order(output, left, rank):
    """Ranks as lists of vertices, in depth-first preorder from the output, children in slot order."""
    layers = [[] for _ in range(rank[output] + 1)]
    seen = bytearray(len(left))
    seen[output] = 1
    stack = [output]
    while stack:
        vertex = stack.pop()
        layers[rank[vertex]].append(vertex)
        for neighbour in reversed(left[vertex]):
            if not seen[neighbour]:
                seen[neighbour] = 1
                stack.append(neighbour)
    for vertex in compress(range(len(left)), map(not_, seen)):  # cut off by edges drawn straight
        layers[rank[vertex]].append(vertex)
    return layers


def _reduce_crossings(layers, left, right, rounds):
    """Rounds of barycenter sweeps, in place; the order with the fewest crossings seen is kept."""
    position = [0] * len(left)
    for layer in layers:
        _place(position, layer)
    best = _crossings(layers, right, position)
    best_layers = [list(layer) for layer in layers]
    for _ in range(rounds):
        if best == 0:
            break
        for r in range(1, len(layers)):  # left to right, by children
            _barycenter_order(layers[r], left, position)
        for r in range(len(layers) - 2, -1, -1):  # right to left, by parents
            _barycenter_order(layers[r], right, position)
        crossings = _crossings(layers, right, position)
        if crossings < best:
            best = crossings
            best_layers = [list(layer) for layer in layers]
    layers[:] = best_layers


def _place(position, layer):
    """position[v] = index of v in its layer, for the whole layer (a loop in C)."""
    for _ in map(position.__setitem__, layer, range(len(layer))):
        pass


def _barycenter_order(layer, neighbours, position):
    """Reorder one rank by the mean position of each vertex's neighbours on the swept side.

    A stable sort keeps ties in their previous order; vertices with no neighbour on that side
    keep their places and the others fill the remaining places."""
    if len(layer) < 2:
        return
    at = position.__getitem__
    means = [sum(map(at, around)) / len(around) if around else None for around in map(neighbours.__getitem__, layer)]
    if None in means:
        places = [i for i, mean in enumerate(means) if mean is not None]
        movable = [layer[i] for i in places]
        means = [means[i] for i in places]
    else:
        places, movable = None, layer
    order = sorted(range(len(movable)), key=means.__getitem__)
    if order == list(range(len(movable))):
        return
    moved = [movable[j] for j in order]
    if places is None:
        layer[:] = moved
    else:
        for i, vertex in zip(places, moved):
            layer[i] = vertex
    _place(position, layer)


def _crossings(layers, right, position):
    """Edge crossings between each pair of neighbouring ranks: inversions among the right ends
    of the segments taken in left-end order."""
    total = 0
    at = position.__getitem__
    for layer in layers:
        ends = []
        for around in map(right.__getitem__, layer):
            if len(around) == 1:
                ends.append(at(around[0]))
            else:
                ends.extend(sorted(map(at, around)))
        if ends != sorted(ends):
            total += _inversions(ends)
    return total


def _inversions(values):
    """Pairs i < j with values[i] > values[j], for non-negative ints (positions in a rank).

    A Fenwick tree counts, for each value, the earlier ones at most it: O(n log max), where
    inserting into a sorted list took quadratic time on a rank of many thousand segments."""
    size = max(values) + 2
    tree = [0] * size  # tree[i] counts the values from i - (i & -i) to i - 1
    total = 0
    for count, value in enumerate(values):
        i = value + 1
        at_most = 0
        while i:
            at_most += tree[i]
            i &= i - 1
        total += count - at_most
        i = value + 1
        while i < size:
            tree[i] += 1
            i += i & -i
    return total


def _assign_rows(layers, left, right, real_count, passes):
    """Integer rows, each vertex near the median of its neighbours, in order, spaced at least 1.

    A segment weighs more by repeating its far end in the vertex's neighbour list; a vertex's
    weight in its rank (how hard it resists being pushed) is the sum of its segments' weights."""
    neighbours = list(map(add, left, right))
    weights = [REAL_WEIGHT * len(around) or 1 for around in neighbours[:real_count]]
    weights += [2 * DUMMY_WEIGHT] * (len(left) - real_count)  # between two dummies, the common case
    ends = set()  # the dummies next to a real node: a chain's ends, and where a shared chain branches off
    for vertex in range(real_count):
        around = neighbours[vertex]
        if around and max(around) >= real_count:
            ends.update(u for u in around if u >= real_count)
            around = [u for u in around for _ in range(MIXED_WEIGHT if u >= real_count else REAL_WEIGHT)]
            neighbours[vertex] = around
            weights[vertex] = len(around)
    for end in ends:
        around = neighbours[end]
        dummies = [u for u in around if u >= real_count]
        if dummies:
            around = [u for u in around if u < real_count] * MIXED_WEIGHT + dummies * DUMMY_WEIGHT
            neighbours[end] = around
            weights[end] = len(around)
        else:  # a chain of one dummy
            weights[end] = MIXED_WEIGHT * len(around)
    for vertex in compress(range(real_count), map(not_, neighbours[:real_count])):
        neighbours[vertex] = [vertex]  # no neighbours: it stays where it is

    # A vertex's preferred row is the (weighted) median of its neighbours' rows. For an even count
    # a real node takes the upper middle one, so it lines up with its first operand and a chain
    # stays one straight row to its end; a dummy takes the point halfway, so long edges run evenly.
    middles = [((len(around) - 1) // 2,) * 2 for around in neighbours[:real_count]]
    middles += [((len(around) - 1) // 2, len(around) // 2) for around in neighbours[real_count:]]

    row = [0.0] * len(left)
    for layer in layers:
        for _ in map(row.__setitem__, layer, map(float, range(len(layer)))):
            pass
    at = row.__getitem__
    for sweep in range(passes):
        for layer in layers if sweep % 2 == 0 else reversed(layers):
            wanted = []
            for vertex in layer:
                ordered = sorted(map(at, neighbours[vertex]))
                low, high = middles[vertex]
                wanted.append((ordered[low] + ordered[high]) * 0.5)
            if len(layer) == 1:
                row[layer[0]] = max(wanted[0], 0.0)
                continue
            # Row i shifted by -i turns "spacing >= 1" into "nondecreasing": isotonic regression.
            shifted = list(map(sub, wanted, range(len(layer))))
            if shifted[0] < 0.0 or not all(map(le, shifted, islice(shifted, 1, None))):
                wanted = _isotonic(shifted, list(map(weights.__getitem__, layer)))
            for _ in map(row.__setitem__, layer, wanted):
                pass

    rounded = [0] * len(left)
    for layer in layers:
        previous = -1
        for vertex in layer:
            # Halves round up the page (towards row 0), like the upper median above; the max
            # keeps the spacing whatever a float's last bit does.
            previous = max(previous + 1, ceil(row[vertex] - 0.5 - 1e-9))
            rounded[vertex] = previous
    return rounded


def _isotonic(shifted, weights):
    """Pool adjacent violators: the nondecreasing, nonnegative sequence nearest to `shifted` in
    weighted squared distance, shifted back (+i) to rows."""
    sums, totals, sizes = [], [], []
    for w, t in zip(weights, shifted):
        s, size = w * t, 1
        while totals and sums[-1] * w > s * totals[-1]:  # the previous block's mean is larger
            w += totals.pop()
            s += sums.pop()
            size += sizes.pop()
        sums.append(s)
        totals.append(w)
        sizes.append(size)
    shifts = []
    for s, w, size in zip(sums, totals, sizes):
        shifts += [s / w if s > 0.0 else 0.0] * size
    return list(map(add, shifts, range(len(shifts))))
