"""Python programs for micrograd (issue 10): valuegraph's interpreter against CPython running the
same text with PyPI micrograd, and the MLP training program through the whole API.

    python -m benchmarks.bench_python [--quick]

"Interpreter" is engine.python.run_python: parse, check, compile to closures and run, with the
nn prelude and the side tables for spans and scopes. "CPython + micrograd" is runpy.run_path of
the same text (CPython compiles it, then runs it against PyPI micrograd 0.1.0), after
random.seed(0), with print() going to a buffer as ours does. "Through the API" is POST /backward
as the page asks (trace and layout) through the ASGI app in-process, timed inside the server;
each request has its own seed, so the response cache never answers.
"""

import argparse
import asyncio
import contextlib
import gc
import io
import random
import runpy
import tempfile
from pathlib import Path

import httpx

from app.budget import collector_paused
from app.config import Settings
from app.layout import compute_layout
from app.main import create_app
from app.serialize import backward_response, to_json
from benchmarks.bench_pipeline import ServerClock
from benchmarks.common import clock, load, machine, median, ms, percentile, print_table, ratio, verdict
from engine import run_program, trace
from engine.python import run_python

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus"
MLP_TRAINING = (CORPUS / "nn_training_loop.py").read_text(encoding="utf-8")
EVERY_OPERATION = (CORPUS / "many_operations.py").read_text(encoding="utf-8")
MAX_MARGIN_TRAINING = (CORPUS / "nn_mlp_max_margin.py").read_text(encoding="utf-8")

PROGRAMS = {
    "MLP(3, [4, 4, 1]), 4 examples, 20 iterations": MLP_TRAINING,
    "every Value operation": EVERY_OPERATION,
    "max-margin loss: MLP(2, [16, 16, 1]), 8 points, 10 steps": MAX_MARGIN_TRAINING,
}


def interleaved(first, second, runs):
    """Median seconds of each of two functions, timed in turns (one warm-up call each first), so
    that a change in the machine's load while they run weighs on both alike."""
    first(), second()
    samples = ([], [])
    for _ in range(runs):
        for function, kept in zip((first, second), samples):
            started = clock()
            function()
            kept.append(clock() - started)
    return median(samples[0]), median(samples[1])


def interpreter_table(quick):
    runs = 3 if quick else 21
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for title, program in PROGRAMS.items():
            path = Path(folder) / "program.py"
            path.write_text(program, encoding="utf-8")

            def cpython():
                random.seed(0)
                with contextlib.redirect_stdout(io.StringIO()):
                    runpy.run_path(str(path), run_name="__main__")

            ours, theirs = interleaved(lambda: run_python(program), cpython, runs)
            gc.disable()
            try:
                ours_quiet, theirs_quiet = interleaved(lambda: run_python(program), cpython, runs)
            finally:
                gc.enable()
            nodes = len(trace(run_python(program).output).nodes)
            rows.append(
                [
                    title,
                    f"{nodes:,}",
                    ms(theirs),
                    ms(ours),
                    ratio(ours, theirs),
                    verdict(ours <= 4 * theirs),
                    ms(theirs_quiet),
                    ms(ours_quiet),
                    ratio(ours_quiet, theirs_quiet),
                    verdict(ours_quiet <= 4 * theirs_quiet),
                ]
            )
    print_table(
        "Python programs: valuegraph's interpreter vs CPython running PyPI micrograd (median ms)",
        [
            "program",
            "nodes at the last backward()",
            "CPython + micrograd",
            "valuegraph interpreter",
            "ratio",
            "target <= 4x",
            "gc off: CPython + micrograd",
            "gc off: valuegraph",
            "gc off: ratio",
            "gc off: target <= 4x",
        ],
        rows,
        [
            "Both include reading the text (CPython compiles it; valuegraph parses, checks and compiles it to "
            "closures). micrograd's _backward closures make reference cycles, so the cyclic collector costs it more "
            "on large graphs; the gc-off columns compare the two without it (the API pauses the collector while it "
            "builds a graph)."
        ],
    )


async def _api_samples(program, runs):
    app = create_app(Settings())
    clocked = ServerClock(app)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=clocked), base_url="http://bench") as client:
            for seed in range(runs + 1):
                response = await client.post(
                    "/backward", json={"expression": program, "trace": True, "layout": True, "seed": seed}
                )
                assert response.status_code == 200, response.text[:200]
    return clocked.samples[1:]  # the first request warms up


def stage_times(runs, stages):
    for _ in range(runs):
        started = clock()
        result = run_program(MLP_TRAINING)
        ran = clock()
        steps = trace(result.output)
        traced = clock()
        layout = compute_layout(steps)
        laid_out = clock()
        to_json(backward_response(steps, layout=layout, program=result))
        done = clock()
        for name, seconds in zip(stages, (ran - started, traced - ran, laid_out - traced, done - laid_out)):
            stages[name].append(seconds)


def api_table(quick):
    runs = 3 if quick else 30
    samples = asyncio.run(_api_samples(MLP_TRAINING, runs))
    stages = {"run the program": [], "trace": [], "layout": [], "records and JSON": []}
    with collector_paused():  # as the API runs them
        stage_times(runs, stages)
    p50 = median(samples)
    print_table(
        "The MLP training program through POST /backward (trace and layout, as the page asks)",
        ["program", "p50 ms", "p99 ms", "target p50 < 1,000 ms", *[f"{name} ms" for name in stages]],
        [
            [
                "MLP(3, [4, 4, 1]), 20 iterations",
                ms(p50),
                ms(percentile(samples, 0.99)),
                verdict(p50 < 1.0),
                *[ms(median(v)) for v in stages.values()],
            ]
        ],
        [
            "Timed inside the server (middleware, validation, worker thread and gzip included); the stage columns are "
            "the engine and app steps alone, run in-process with the collector paused as the API does."
        ],
    )


def main(quick=False):
    print(f"\n## Python programs (issue 10)\n\n{machine()}; {load()}")
    interpreter_table(quick)
    api_table(quick)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
