"""valuegraph's engine against its peers, same graphs, same process.

    python -m benchmarks.bench_engine [--quick]

Four graph shapes, each built by the same function from any engine's leaves:
- chain: x = x + a, then x = x * w, alternating, N operations (depth N; a and w shared);
- tree sum: N products x_i * w_i of fresh leaves, summed pairwise (depth log2 N);
- sum(): the same N products added left to right by Python's sum(), as a neuron is
  written in micrograd (depth N);
- random DAG: N operations, each on a recent result and an earlier one picked at random
  (seeded): reuse at every distance, as in a real network.
Forward is graph building; backward is output.backward() (sort + propagate). Each run
builds a fresh graph; the engines take turns, and the table shows the median run. Times are
this thread's CPU time (time.thread_time): on a machine shared with other work, wall-clock
ratios moved by 30 % between runs, CPU-time ratios by a few per cent.

The peers (benchmarks/peers.py and PyPI micrograd 0.1.0):
- forward: the course's own __slots__ Value (target: ours <= 1.1x), and micrograd;
- backward: micrograd (target: ours <= 0.7x) and a minimal tape of parallel lists, the floor
  for pure CPython (target: ours within 2x). micrograd's recursive sort needs more than the
  default recursion limit on deep graphs: it runs with the limit raised for its backward.
"""

import argparse
import gc
import random
import sys
import time

from micrograd.engine import Value as MicrogradValue

from benchmarks.common import load, machine, median, ms, print_table, ratio, verdict
from benchmarks.peers import CourseValue, tape_leaf_factory
from engine import Value
from engine.autograd import topological_order

SIZES = (1_000, 10_000, 100_000)
TARGET_SIZES = (10_000, 100_000)
FORWARD_TARGET, BACKWARD_TARGET, TAPE_TARGET = 1.1, 0.7, 2.0
MICROGRAD_RECURSION_LIMIT = 1_000_000  # its build_topo recurses once per node of depth
clock = time.thread_time


def chain(leaf, n):
    x, a, w = leaf(0.5), leaf(0.001), leaf(0.999)
    for i in range(n):
        x = x * w if i % 2 else x + a
    return x, [a, w]


def products(leaf, n):
    return [leaf(0.001 * (i % 1000)) * leaf(1.0 - 0.0001 * (i % 1000)) for i in range(n)]


def tree_sum(leaf, n):
    terms = products(leaf, n)
    while len(terms) > 1:
        paired = [terms[i] + terms[i + 1] for i in range(0, len(terms) - 1, 2)]
        terms = paired + terms[-1:] if len(terms) % 2 else paired
    return terms[0], None


def fold_sum(leaf, n):
    return sum(products(leaf, n)), None


def random_dag(leaf, n):
    rng = random.Random(2026)
    nodes = [leaf(rng.uniform(0.5, 1.5)) for _ in range(16)]
    for i in range(n):
        recent, earlier = nodes[-1 - rng.randrange(4)], nodes[rng.randrange(len(nodes))]
        nodes.append(recent * earlier if i % 2 else recent + earlier)
    return nodes[-1], None


SHAPES = {"chain": chain, "tree sum": tree_sum, "sum()": fold_sum, "random DAG": random_dag}
ENGINES = {  # name -> a function giving the leaf constructor for one graph
    "valuegraph": lambda: Value,
    "course": lambda: CourseValue,
    "micrograd": lambda: MicrogradValue,
    "tape": tape_leaf_factory,
}


def time_once(name, shape, n, gc_off):
    """(forward seconds, backward seconds, nodes reached) for one fresh graph."""
    leaf = ENGINES[name]()
    gc.collect()
    if gc_off:
        gc.disable()
    limit = sys.getrecursionlimit()
    if name == "micrograd":
        sys.setrecursionlimit(MICROGRAD_RECURSION_LIMIT)
    try:
        start = clock()
        output, _ = SHAPES[shape](leaf, n)
        built = clock()
        output.backward()
        return built - start, clock() - built
    finally:
        sys.setrecursionlimit(limit)
        gc.enable()


def measure(shape, n, repeats, gc_off):
    """{engine: (median forward, median backward)}; engines take turns each run."""
    forward = {name: [] for name in ENGINES}
    backward = {name: [] for name in ENGINES}
    for run in range(repeats):
        names = list(ENGINES) if run % 2 == 0 else list(reversed(ENGINES))
        for name in names:
            f, b = time_once(name, shape, n, gc_off)
            forward[name].append(f)
            backward[name].append(b)
    return {name: (median(forward[name]), median(backward[name])) for name in ENGINES}


def repeats_for(n, quick):
    if quick:
        return 3 if n < 100_000 else 1
    return 15 if n <= 1_000 else 7 if n <= 10_000 else 3


def check_gradients_agree():
    """Every engine must find the same gradients on the same graph, or the timing means nothing."""
    ours = chain(Value, 500)
    ours[0].backward()
    expected = [leaf.grad for leaf in ours[1]]
    worst = 0.0
    for name in ("course", "micrograd", "tape"):
        output, leaves = chain(ENGINES[name](), 500)
        result = output.backward()
        grads = [result[leaf.i] for leaf in leaves] if name == "tape" else [leaf.grad for leaf in leaves]
        worst = max(worst, *(abs(a - b) / max(1.0, abs(b)) for a, b in zip(expected, grads)))
    assert worst < 1e-9, f"gradients differ between engines by {worst}"
    return worst


def nodes_of(shape, n):
    output, _ = SHAPES[shape](Value, n)
    return len(topological_order(output))


def engine_tables(quick=False, gc_off=False, sizes=SIZES):
    rows, targets = [], []
    for shape in SHAPES:
        for n in sizes:
            result = measure(shape, n, repeats_for(n, quick), gc_off)
            (of, ob), (cf, _), (mf, mb), (tf, tb) = (
                result[name] for name in ("valuegraph", "course", "micrograd", "tape")
            )
            rows.append(
                [
                    shape,
                    f"{n:,}",
                    f"{nodes_of(shape, n):,}",
                    ms(of),
                    ms(cf),
                    ratio(of, cf),
                    ms(mf),
                    ms(tf),
                    ms(ob),
                    ms(mb),
                    ratio(ob, mb),
                    ms(tb),
                    ratio(ob, tb),
                ]
            )
            if n in TARGET_SIZES:
                targets.append((shape, n, of / cf, ob / mb, ob / tb))
    headers = [
        "graph",
        "N",
        "nodes",
        "forward ms",
        "course",
        "ratio",
        "micrograd",
        "tape",
        "backward ms",
        "micrograd",
        "ratio",
        "tape",
        "ratio",
    ]
    condition = (
        "gc disabled for every engine while timed"
        if gc_off
        else "gc enabled (Python's default, as in a notebook; the server pauses it while a request builds its graph)"
    )
    notes = [
        f"Median of {repeats_for(sizes[-1], quick)}-{repeats_for(sizes[0], quick)} runs, a fresh graph each run, CPU "
        f"time of the thread; {condition}. micrograd's backward runs with the recursion limit raised to "
        f"{MICROGRAD_RECURSION_LIMIT:,} (its sort is recursive); valuegraph's and the peers' are iterative, at the "
        "default limit.",
    ]
    print_table(f"Engine vs the course's Value, micrograd 0.1.0 and a minimal tape: {condition}", headers, rows, notes)
    return targets


def target_table(targets, title):
    rows = []
    for shape, n, forward, backward, tape in targets:
        rows.append(
            [
                shape,
                f"{n:,}",
                f"{forward:.2f}x",
                verdict(forward <= FORWARD_TARGET),
                f"{backward:.2f}x",
                verdict(backward <= BACKWARD_TARGET),
                f"{tape:.2f}x",
                verdict(tape <= TAPE_TARGET),
            ]
        )
    print_table(
        title,
        [
            "graph",
            "N",
            f"forward vs course (<= {FORWARD_TARGET}x)",
            "",
            f"backward vs micrograd (<= {BACKWARD_TARGET}x)",
            "",
            f"backward vs tape (<= {TAPE_TARGET}x)",
            "",
        ],
        rows,
    )


def main(quick=False):
    print(f"\n## Engine\n\n{machine()}; {load()}")
    print(
        "\nGradients agree with the course's Value, micrograd's and the tape's (chain of 500): largest relative "
        f"difference {check_gradients_agree():.1e}."
    )
    gc.freeze()  # as the server does after start-up; the same for both engines
    targets = engine_tables(quick)
    target_table(targets, "Engine targets (gc enabled)")
    targets = engine_tables(quick, gc_off=True, sizes=TARGET_SIZES)
    target_table(targets, "Engine ratios with gc disabled (for information)")
    print(f"\nAfter the engine tables: {load()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs: a smoke test of the script, not figures")
    main(parser.parse_args().quick)
