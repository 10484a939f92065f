"""A layered (Sugiyama-style) left-to-right layout of a traced graph, computed on the server.

The browser only maps (rank, row) to pixels; every choice is made here, in four linear passes
over the graph plus dummy nodes, so thousands of nodes take milliseconds and the same graph
always gets the same picture.

1. Ranks (columns). A node's rank is its longest-path distance from the output, counted from
   the right: rank = max_depth - depth, so the output has the highest rank and every edge goes
   from a lower rank (child) to a higher rank (parent). Each node sits exactly one rank left of
   its leftmost consumer, so a leaf (a named variable or a constant) is drawn right next to the
   operation that first uses it instead of in a far-left column of leaves with long edges; only
   the edges to later consumers of a reused node are long.
2. Dummy nodes. An edge spanning k > 1 ranks becomes a chain through k - 1 dummy nodes, one per
   intermediate rank; their positions are the edge's bends. Each edge gets its own chain, so the
   two edges of `a + a` stay separate. A graph that reuses a node across very many ranks could need
   millions of bends (a parameter used by every step of a 10,000-step chain, or x in a 500-term
   sum of x*k), and every pass below costs time per bend; so past a budget of bends (by default
   BENDS_PER_NODE per real node) the longest edges get no dummies: their bends are [] and the
   browser draws them straight. Measured: a 500-term sum laid out in 2.2 s with 124,000 bends,
   in 80 ms with the budget.
3. Order within a rank (crossing reduction). A depth-first walk from the output, children in slot
   order, gives the first order: crossing-free for any tree, with a * b drawn a above b. Then a
   few barycenter sweeps (left to right by children, right to left by parents) reorder each rank;
   nodes with no neighbour on the swept side keep their places, ties keep the previous order, and
   the order with the fewest crossings seen so far is kept, so a sweep can never make it worse.
4. Rows (vertical positions). Rows minimise the sum of weighted squared edge slopes, keeping the
   order and a spacing of at least 1 within each rank. Each pass solves one rank exactly with the
   pool-adjacent-violators algorithm (linear time), sweeping the ranks alternately left and right.
   Segments between dummies weigh most, so long edges come out straight. Rows are then rounded to
   integers monotonically, which keeps the order and the spacing.

Node ids are positions in trace.nodes, which is creation order: a Value's children exist before
it, so every child's id is smaller than its parent's, and walking ids upwards is a topological order.
"""

from bisect import bisect_right, insort
from operator import mul

BENDS_PER_NODE = 3
MIN_BENDS = 2_000
ORDER_SWEEPS = 4
ROW_PASSES = 6
# Weights of an edge segment's squared slope: real-real, one end a dummy, both ends dummies.
REAL_WEIGHT, MIXED_WEIGHT, DUMMY_WEIGHT = 1.0, 2.0, 8.0
ANCHOR_WEIGHT = 1e-3  # a faint pull to the previous row, so a node without neighbours stays put


def compute_layout(trace, max_bends: int | None = None) -> dict:
    """The wire format's "layout" object for an engine.Trace."""
    nodes = trace.nodes
    if max_bends is None:
        max_bends = max(MIN_BENDS, BENDS_PER_NODE * len(nodes))
    ids = {node: i for i, node in enumerate(nodes)}
    children = [[ids[child] for child in node._children] for node in nodes]

    rank = _ranks(children, trace.output)
    long_edges = _edges_with_dummies(children, rank, max_bends)
    rank, left, right, chains = _expand(children, rank, long_edges)
    layers = _initial_order(trace.output, left, rank)
    _reduce_crossings(layers, left, right)
    row = _assign_rows(layers, left, right, len(nodes))

    edges = []
    for parent, kids in enumerate(children):
        for slot, child in enumerate(kids):
            chain = chains.get((parent, slot), ())
            edges.append({"parent": parent, "slot": slot, "child": child, "bends": [[rank[d], row[d]] for d in chain]})
    return {
        "ranks": rank[trace.output] + 1,
        "rows": max(row) + 1,
        "nodes": [{"id": i, "rank": rank[i], "row": row[i]} for i in range(len(nodes))],
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
    An edge left without dummies is left out of the adjacency: it does not take part in ordering."""
    rank = list(rank)
    count = len(children)
    left = [[] for _ in range(count)]
    right = [[] for _ in range(count)]
    chains = {}
    for parent, kids in enumerate(children):
        for slot, child in enumerate(kids):
            span = rank[parent] - rank[child]
            if span == 1:
                left[parent].append(child)
                right[child].append(parent)
            elif (parent, slot) in long_edges:
                chain = list(range(len(rank), len(rank) + span - 1))
                rank.extend(range(rank[child] + 1, rank[parent]))
                left.extend([previous] for previous in [child] + chain[:-1])
                right.extend([following] for following in chain[1:] + [parent])
                right[child].append(chain[0])
                left[parent].append(chain[-1])
                chains[parent, slot] = chain
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
    for vertex in range(len(left)):  # cut off from the output only by edges drawn without dummies
        if not seen[vertex]:
            layers[rank[vertex]].append(vertex)
    return layers


def _reduce_crossings(layers, left, right):
    """Barycenter sweeps in place; the best order seen is the one left in `layers`."""
    position = [0] * len(left)
    for layer in layers:
        for i, vertex in enumerate(layer):
            position[vertex] = i
    best = _crossings(layers, right, position)
    best_layers = [list(layer) for layer in layers]
    for sweep in range(ORDER_SWEEPS):
        if best == 0:
            break
        if sweep % 2 == 0:
            sweep_ranks, neighbours = range(1, len(layers)), left
        else:
            sweep_ranks, neighbours = range(len(layers) - 2, -1, -1), right
        for r in sweep_ranks:
            _barycenter_order(layers[r], neighbours, position)
        crossings = _crossings(layers, right, position)
        if crossings < best:
            best = crossings
            best_layers = [list(layer) for layer in layers]
    layers[:] = best_layers


def _barycenter_order(layer, neighbours, position):
    """Reorder one rank by the mean position of each vertex's neighbours on the swept side."""
    places, keys = [], []
    at = position.__getitem__
    for i, vertex in enumerate(layer):
        around = neighbours[vertex]
        if around:
            places.append(i)
            keys.append((sum(map(at, around)) / len(around), i, vertex))
    keys.sort()
    for i, (_, _, vertex) in zip(places, keys):
        layer[i] = vertex
        position[vertex] = i


def _crossings(layers, right, position):
    """Edge crossings between each pair of neighbouring ranks: inversions among the right ends
    of the segments taken in left-end order (a sorted list and bisect: fast for real widths)."""
    total = 0
    for layer in layers:
        seen = []
        for vertex in layer:
            ends = sorted(map(position.__getitem__, right[vertex]))
            for end in ends:
                total += len(seen) - bisect_right(seen, end)
            for end in ends:
                insort(seen, end)
    return total


def _assign_rows(layers, left, right, real_count):
    """Integer rows: weighted least squares on edge slopes under the order and spacing constraints."""
    row = [0.0] * len(left)
    for layer in layers:
        for i, vertex in enumerate(layer):
            row[vertex] = float(i)
    neighbours, weights, totals = [], [], []
    for vertex in range(len(left)):
        around = left[vertex] + right[vertex]
        if vertex < real_count:
            w = [REAL_WEIGHT if u < real_count else MIXED_WEIGHT for u in around]
        else:
            w = [MIXED_WEIGHT if u < real_count else DUMMY_WEIGHT for u in around]
        neighbours.append(around)
        weights.append(w)
        totals.append(sum(w) + ANCHOR_WEIGHT)

    at = row.__getitem__
    for sweep in range(ROW_PASSES):
        ordered = layers if sweep % 2 == 0 else reversed(layers)
        for layer in ordered:
            # Shifting row i by -i turns "spacing >= 1" into "nondecreasing": isotonic regression.
            targets = [
                (sum(map(mul, weights[v], map(at, neighbours[v]))) + ANCHOR_WEIGHT * row[v]) / totals[v] - i
                for i, v in enumerate(layer)
            ]
            shifted = _isotonic([totals[v] for v in layer], targets)
            for i, v in enumerate(layer):
                row[v] = i + shifted[i]

    rounded = [0] * len(left)
    for layer in layers:
        for i, v in enumerate(layer):
            rounded[v] = i + int(row[v] - i + 0.5)  # shifted values are >= 0 and nondecreasing
    return rounded


def _isotonic(weights, targets):
    """Pool adjacent violators: the nondecreasing, nonnegative sequence nearest to targets in
    weighted squared distance."""
    block_weight, block_sum, block_size = [], [], []
    for w, t in zip(weights, targets):
        s, size = w * t, 1
        while block_weight and block_sum[-1] * w > s * block_weight[-1]:  # previous mean is larger
            w += block_weight.pop()
            s += block_sum.pop()
            size += block_size.pop()
        block_weight.append(w)
        block_sum.append(s)
        block_size.append(size)
    shifted = []
    for w, s, size in zip(block_weight, block_sum, block_size):
        value = s / w
        shifted.extend([value if value > 0.0 else 0.0] * size)
    return shifted
