"""Every benchmark table in one command, from the repository root:

    python -m benchmarks.run [--quick]
        [--only engine,pipeline,python,layout,cache,http,browser,big,scopes,classroom,graph,columns,typescript]
    python benchmarks/run.py ...          (the same)

Prints Markdown tables (engine vs micrograd, the request pipeline, Python programs, HTTP load, the
browser, big graphs at the model's level, Teach live, a posted graph, a TypeScript graph run in the browser)
with the machine, its load average and the date, so figures can go into docs/performance.md as printed.
--quick is a smoke test of the scripts (a few runs each), not figures. A full run takes about
five minutes on two cores.
"""

import argparse
import datetime
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import (  # noqa: E402
    bench_big_graphs,
    bench_browser,
    bench_cache,
    bench_classroom,
    bench_columns,
    bench_engine,
    bench_graph,
    bench_http,
    bench_layout,
    bench_pipeline,
    bench_python,
    bench_scopes,
    bench_typescript,
)
from benchmarks.common import load, machine  # noqa: E402

SECTIONS = {
    "engine": bench_engine.main,
    "pipeline": bench_pipeline.main,
    "python": bench_python.main,
    "layout": bench_layout.main,
    "cache": bench_cache.main,
    "http": bench_http.main,
    "browser": bench_browser.main,
    "big": bench_big_graphs.main,
    "scopes": bench_scopes.main,
    "classroom": bench_classroom.main,
    "graph": bench_graph.main,
    "columns": bench_columns.main,
    "typescript": bench_typescript.main,
}


def main():
    parser = argparse.ArgumentParser(description="Run every benchmark and print its tables.")
    parser.add_argument("--quick", action="store_true", help="a few runs each: checks the scripts, not figures")
    parser.add_argument(
        "--only", default=",".join(SECTIONS), help=f"comma-separated sections (default: {','.join(SECTIONS)})"
    )
    arguments = parser.parse_args()
    chosen = [name.strip() for name in arguments.only.split(",") if name.strip()]
    unknown = set(chosen) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s) {', '.join(sorted(unknown))}; choose from {', '.join(SECTIONS)}")

    started = time.monotonic()
    print(f"# valuegraph benchmarks, {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}\n")
    print(f"{machine()}; {load()} at the start")
    for name in chosen:
        SECTIONS[name](arguments.quick)
    print(f"\nAll sections took {time.monotonic() - started:.0f} s; {load()} at the end.")


if __name__ == "__main__":
    main()
