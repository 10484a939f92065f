"""The server-side layout alone (app.layout.compute_layout) on realistic graphs.

    python -m benchmarks.bench_layout [--quick]

Graphs of about 100, 2,000, 5,000 and 50,000 nodes: a long chain (x = x * 1.0001 + 0.5), a
sum of products (x0*w0 + x1*w1 + ...), random autograd-like DAGs with reuse, a tanh MLP, and
the pipeline benchmark's recurrent program whose shared w and b make long edges on every line.
Only the layout is timed (median of several runs), not building or tracing the graph, with the
garbage collector paused as the server pauses it while it answers.
"""

import argparse
import gc
import random

from app.layout import compute_layout
from benchmarks.bench_pipeline import layered_program
from benchmarks.common import clock, load, machine, median, ms, print_table, us
from engine import Limits, Value, evaluate, parse, trace

LIMITS = Limits(max_source_length=10_000_000, max_nodes=200_000)
SIZES = (100, 2_000, 5_000, 50_000)
TARGETS_MS = {2_000: 30, 5_000: 80, 50_000: 1_500}


def chain(nodes):
    """x = x * 1.0001 + 0.5, repeated: four nodes a step (two constants, a product, a sum)."""
    source = "x = 1\n" + "x = x * 1.0001 + 0.5\n" * max(1, (nodes - 1) // 4)
    return trace(evaluate(parse(source, LIMITS)), LIMITS)


def sum_of_products(nodes):
    """s = x0*w0 + x1*w1 + ...: four nodes a term (two named leaves, a product, a sum)."""
    terms = max(1, (nodes + 1) // 4)
    lines = [f"x{i} = {i % 7 + 1}\nw{i} = 0.{i % 9 + 1}" for i in range(terms)]
    lines.append("s = " + " + ".join(f"x{i} * w{i}" for i in range(terms)))
    return trace(evaluate(parse("\n".join(lines), LIMITS)), LIMITS)


def random_dag(nodes, seed=0):
    """Autograd-like: operands mostly among the last few results, sometimes an older result,
    a shared parameter or a constant; a final sum keeps every branch reachable."""
    rng = random.Random(seed)
    params = [Value(rng.uniform(-1, 1), label=f"p{i}") for i in range(max(2, nodes // 200))]
    results = [Value(rng.uniform(-1, 1), label=f"x{i}") for i in range(4)]
    unused = set(results)
    recent = lambda rate: results[-1 - min(len(results) - 1, int(rng.expovariate(rate)))]  # noqa: E731
    while len(results) + len(params) < nodes * 0.9:
        roll, a = rng.random(), recent(0.5)
        if roll < 0.15:
            out = a.tanh()
        elif roll < 0.2:
            out = a**2
        else:
            pick = rng.random()
            b = rng.choice(params) if pick < 0.05 else rng.random() if pick < 0.25 else recent(0.1)
            out = a * b if roll < 0.6 else a + b
            unused.discard(b)
        unused.discard(a)
        unused.add(out)
        results.append(out)
    output = results[-1]
    for node in sorted(unused - {output}, key=lambda n: n._serial):
        output = output + node
    return trace(output, LIMITS)


def mlp(nodes, seed=0):
    """micrograd's demo network, 3 inputs, two tanh layers of equal width, one output and a
    squared loss, widened until it has about `nodes` nodes."""
    rng = random.Random(seed)
    width = 2
    while 4 * width * width + 12 * width < nodes:
        width += 1
    layer = [Value(rng.uniform(-1, 1), label=f"x{i}") for i in range(3)]
    for fan_out in (width, width, 1):
        layer = [
            sum((Value(rng.uniform(-1, 1)) * x for x in layer), Value(rng.uniform(-1, 1))).tanh()
            for _ in range(fan_out)
        ]
    return trace((layer[0] - 1.0) ** 2, LIMITS)


def shared_parameters(nodes):
    source = layered_program(nodes)
    return trace(evaluate(parse(source, LIMITS)), LIMITS)


GRAPHS = {
    "chain": chain,
    "sum of products": sum_of_products,
    "random DAG": random_dag,
    "MLP": mlp,
    "shared w, b": shared_parameters,
}


def time_layout(graph, runs):
    times = []
    gc.disable()
    try:
        for _ in range(runs):
            start = clock()
            layout = compute_layout(graph)
            times.append(clock() - start)
    finally:
        gc.enable()
    return median(times), layout


def main(quick=False):
    rows = []
    for name, build in GRAPHS.items():
        for size in SIZES[:2] if quick else SIZES:
            graph = build(size)
            seconds, layout = time_layout(graph, 1 if quick else 3 if size >= 50_000 else 9)
            count = len(graph.nodes)
            bends = sum(len(edge["bends"]) for edge in layout["edges"])
            straight = sum(
                1
                for e in layout["edges"]
                if not e["bends"] and layout["nodes"][e["parent"]]["rank"] - layout["nodes"][e["child"]]["rank"] > 1
            )
            target = TARGETS_MS.get(size)
            rows.append(
                [
                    name,
                    f"{count:,}",
                    f"{len(layout['edges']):,}",
                    f"{layout['ranks']:,}",
                    f"{bends:,}",
                    f"{straight:,}",
                    ms(seconds),
                    us(seconds / count),
                    f"< {target} ms" if target else "-",
                ]
            )
    print_table(
        "Server-side layout (app.layout), median ms",
        ["graph", "nodes", "edges", "ranks", "bends", "long edges drawn straight", "layout ms", "µs/node", "target"],
        rows,
        [f"{machine()}; {load()}. Targets are per node count, for graphs of about that size."],
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
