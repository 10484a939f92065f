"""A program's own value class (issue 20): micrograd's engine.py (read from the installed PyPI
package) and a microgpt-style class with __slots__ (tests/own_classes/microgpt_style.py), each pasted
whole above the same code, which builds a graph of about 10,000 nodes (100 sums of 33 products over
shared inputs) and walks it with the class's own backward(). valuegraph's interpreter against CPython
running the same text, side by side (target: at most 3x).

    python -m benchmarks.bench_own_class [--quick]

"valuegraph" is engine.python.run_python: parse, check, compile and run, then observe the graph
the class's backward() left (nodes, op, local gradients, grads, walk). "CPython" compiles and runs
the text, with print() going to a buffer."""

import argparse
import contextlib
import gc
import importlib.util
import io
from pathlib import Path

from benchmarks.common import REPO, clock, load, machine, median, ms, print_table, ratio, verdict
from engine.python import run_python

USE = """
xs = [Value(0.01 * i) for i in range(33)]
groups = []
for g in range(100):
    ws = [Value(0.001 * (g + i)) for i in range(33)]
    groups.append(sum((w * x for w, x in zip(ws, xs)), Value(0.0)))
out = sum(groups, Value(0.0))
out.backward()
print(out.data, xs[1].grad)
"""


def classes():
    micrograd = Path(importlib.util.find_spec("micrograd.engine").origin).read_text(encoding="utf-8")
    microgpt = (REPO / "tests" / "own_classes" / "microgpt_style.py").read_text(encoding="utf-8")
    microgpt = microgpt[: microgpt.index("\nw = [")]  # the class, without the corpus program's own use
    return {"micrograd's engine.py": micrograd, "microgpt-style Value (__slots__)": microgpt}


def interleaved(first, second, runs):
    """Median seconds of each, timed in turns after one warm-up call each."""
    first(), second()
    samples = ([], [])
    for _ in range(runs):
        for function, kept in zip((first, second), samples):
            started = clock()
            function()
            kept.append(clock() - started)
    return median(samples[0]), median(samples[1])


def main(quick=False):
    runs = 3 if quick else 15
    print(machine() + "; " + load())
    rows = []
    for title, text in classes().items():
        program = text + USE

        def cpython():
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(program, "<program>", "exec"), {"__name__": "__main__"})  # the benchmark's own text

        def ours():
            run_python(program)

        result = run_python(program)
        assert result.graph is not None
        row = [title, f"{len(result.graph['nodes']):,}"]
        for collector in (True, False):
            (gc.enable if collector else gc.disable)()
            try:
                mine, theirs = interleaved(ours, cpython, runs)
            finally:
                gc.enable()
            row += [ms(theirs), ms(mine), ratio(mine, theirs), verdict(mine <= 3 * theirs)]
        rows.append(row)
    print_table(
        "A program's own value class: build and walk about 10,000 nodes (median ms)",
        [
            "class",
            "nodes",
            "CPython",
            "valuegraph",
            "ratio",
            "target <= 3x",
            "gc off: CPython",
            "gc off: valuegraph",
            "gc off: ratio",
            "gc off: target <= 3x",
        ],
        rows,
        [
            "Both include reading the text. valuegraph's figure also includes observing the graph the class's "
            "backward() left (one pass over its nodes). The API pauses the collector while it builds a graph."
        ],
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
