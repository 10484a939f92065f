"""valuegraph's engine against micrograd (PyPI 0.1.0), same graphs, same process.

    python -m benchmarks.bench_engine [--quick]

Three graph shapes, each built by the same function from either engine's leaves:
- chain: x = x + a, then x = x * w, alternating, N operations (depth N; a and w shared);
- tree sum: N products x_i * w_i of fresh leaves, summed pairwise (depth log2 N), the
  "wide" graph on which micrograd's recursive sort still runs;
- sum(): the same N products added left to right by Python's sum(), as a neuron is
  written in micrograd (depth N).
Forward is graph building; backward is output.backward() (sort + propagate). Each run
builds a fresh graph; the engines take turns, and the table shows the median run.
micrograd's recursive sort raises RecursionError near depth 1,000 under the default
recursion limit; the limit is left alone and the table says so.
"""

import argparse
import gc
import importlib.util
import sys

from benchmarks.common import clock, load, machine, median, ms, print_table, ratio, verdict
from engine import Value
from micrograd.engine import Value as MicrogradValue

SIZES = (1_000, 10_000, 100_000)
TARGET_SIZES = (10_000, 100_000)
FORWARD_TARGET, BACKWARD_TARGET = 0.5, 1.0


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


SHAPES = {"chain": chain, "tree sum": tree_sum, "sum()": fold_sum}
NODES = {"chain": lambda n: n + 3, "tree sum": lambda n: 4 * n - 1, "sum()": lambda n: 4 * n + 1}
DEPTH = {"chain": lambda n: n, "tree sum": lambda n: (n - 1).bit_length() + 1, "sum()": lambda n: n + 1}


def engines():
    found = {"valuegraph": Value, "micrograd": MicrogradValue}
    if importlib.util.find_spec("torch"):
        import torch

        found["torch float64"] = lambda x: torch.tensor(x, dtype=torch.float64, requires_grad=True)
    return found


def time_once(leaf, shape, n, gc_off):
    """(forward seconds, backward seconds or None when the backward pass raised RecursionError)."""
    gc.collect()
    if gc_off:
        gc.disable()
    try:
        start = clock()
        output, _ = SHAPES[shape](leaf, n)
        built = clock()
        try:
            output.backward()
        except RecursionError:
            return built - start, None
        return built - start, clock() - built
    finally:
        gc.enable()


def measure(shape, n, leaves, repeats, gc_off):
    """{engine: (median forward, median backward or None)}; engines take turns each run."""
    forward = {name: [] for name in leaves}
    backward = {name: [] for name in leaves}
    for run in range(repeats):
        names = list(leaves) if run % 2 == 0 else list(reversed(leaves))
        for name in names:
            f, b = time_once(leaves[name], shape, n, gc_off)
            forward[name].append(f)
            if b is not None:
                backward[name].append(b)
    return {name: (median(forward[name]), median(backward[name]) if backward[name] else None) for name in leaves}


def repeats_for(n, quick):
    if quick:
        return 3 if n < 100_000 else 1
    return 15 if n <= 1_000 else 7 if n <= 10_000 else 3


def check_gradients_agree():
    """Both engines must find the same gradients on the same graph, or the timing means nothing."""
    ours, theirs = chain(Value, 500), chain(MicrogradValue, 500)
    ours[0].backward()
    theirs[0].backward()
    worst = max(abs(a.grad - b.grad) / max(1.0, abs(b.grad)) for a, b in zip(ours[1], theirs[1]))
    assert worst < 1e-9, f"gradients differ from micrograd's by {worst}"
    return worst


def engine_tables(quick=False, gc_off=False, sizes=SIZES):
    leaves = engines()
    rows, targets = [], []
    for shape in SHAPES:
        for n in sizes:
            result = measure(shape, n, leaves, repeats_for(n, quick), gc_off)
            (of, ob), (mf, mb) = result["valuegraph"], result["micrograd"]
            row = [shape, f"{n:,}", f"{NODES[shape](n):,}", f"{DEPTH[shape](n):,}", ms(of), ms(mf), ratio(of, mf)]
            if mb is None:
                row += [ms(ob), "RecursionError", "n/a"]
            else:
                row += [ms(ob), ms(mb), ratio(ob, mb)]
            for name in leaves:
                if name not in ("valuegraph", "micrograd"):
                    tf, tb = result[name]
                    row += [ms(tf), ms(tb)]
            rows.append(row)
            if n in TARGET_SIZES:
                targets.append((shape, n, of / mf, None if mb is None else ob / mb))
    headers = ["graph", "N", "nodes", "depth", "forward ms", "micrograd", "ratio", "backward ms", "micrograd", "ratio"]
    for name in leaves:
        if name not in ("valuegraph", "micrograd"):
            headers += [f"{name} fwd ms", f"{name} bwd ms"]
    condition = "gc disabled for both engines while timed" if gc_off else "gc enabled (the default, as in the server)"
    notes = [
        f"Median of {repeats_for(sizes[-1], quick)}-{repeats_for(sizes[0], quick)} runs, a fresh graph each run; {condition}. "
        f"Recursion limit {sys.getrecursionlimit()} (the default), never raised: micrograd's recursive sort fails on deep "
        "graphs, valuegraph's iterative one does not.",
    ]
    if len(leaves) == 2:
        notes.append("torch is not installed: its float64 columns are skipped.")
    print_table(f"Engine vs micrograd 0.1.0: {condition}", headers, rows, notes)
    return targets


def target_table(targets, title):
    rows = []
    for shape, n, forward, backward in targets:
        rows.append([shape, f"{n:,}", f"{forward:.2f}x", verdict(forward <= FORWARD_TARGET),
                     "micrograd cannot run" if backward is None else f"{backward:.2f}x",
                     "n/a" if backward is None else verdict(backward <= BACKWARD_TARGET)])
    print_table(title, ["graph", "N", f"forward (<= {FORWARD_TARGET}x)", "", f"backward (<= {BACKWARD_TARGET}x)", ""], rows)


def main(quick=False):
    print(f"\n## Engine\n\n{machine()}; {load()}")
    print(f"\nGradients agree with micrograd's (chain of 500): largest relative difference {check_gradients_agree():.1e}.")
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
