"""The server's work after the program has run, for issue 22's graphs (bench_big_graphs.GRAPHS): what
POST /backward does with a program once the interpreter is done, as the page asks for it (trace, layout up
to 5,000 nodes, the columnar answer), in this process with the collector paused as the server pauses it, in
CPU seconds of this process (each stage is one thread's work; the machine's other work does not move them).

    python3 -m benchmarks.bench_after_run [--quick] [--graph emma]

For a program with its own value class (the transformer steps): observing the graph its backward() left
(engine.python.observe, at the end of the run), the program's graph (the class's graph read as a posted
graph, the learner's walk attributed to its nodes, the trace, the gradient check: service._program_graph)
and the columnar answer. The peer, in the same run: the same graph as valuegraph's own Values (made from the
observed graph, untimed: a program that uses valuegraph's Value makes them as it runs), traced and written as
columns, which is all the server does for a program that uses valuegraph's Value (micrograd's demo, which has no
stages of its own class)."""

import argparse
import time

from benchmarks.bench_big_graphs import GRAPHS
from benchmarks.common import load, machine, median, ms, print_table


def stages(program, files):
    """Seconds of each stage of one request, and the node count."""
    from app import schemas, service
    from app.budget import collector_paused
    from engine import Limits, trace
    from engine.python import state

    request = schemas.BackwardRequest(expression=program, files=files, trace=True, layout=True, layout_max_nodes=5000)
    limits = Limits(max_statements=10**8, max_collection_length=10**7, max_nodes=300_000)
    observing = []
    observe = state.observe

    def timed_observe(*arguments):  # observe runs inside the run, when the program's backward() returns
        started = time.process_time()
        try:
            return observe(*arguments)
        finally:
            observing.append(time.process_time() - started)

    state.observe = timed_observe
    try:
        with collector_paused():
            started = time.process_time()
            program_run = service.run_program(program, None, limits, 0, None, files)
            ran = time.process_time()
            own = program_run.python is not None and program_run.python.graph is not None
            # as the server makes the columnar answer: the trace counts its steps, which the page replays
            made = service._program_graph(program_run, request, limits, keep_steps=False) if own else None
            graphed = time.process_time()
            columns = len(made.columns()) if own else None
            written = time.process_time()
            output = program_run.output  # an own class's graph is made into Values only now: the peer's input
            peer_started = time.process_time()
            steps = trace(output, limits, "correct", keep_steps=False)
            peer_traced = time.process_time()
            service.Computed(steps, None, None, True, program_run).columns()
            peer_written = time.process_time()
    finally:
        state.observe = observe
    return {
        "nodes": len(steps.nodes),
        "run": ran - started - sum(observing),
        "observe": sum(observing),
        "graph": graphed - ran if own else None,
        "columns": written - graphed if own else None,
        "bytes": columns,
        "peer trace": peer_traced - peer_started,
        "peer columns": peer_written - peer_traced,
    }


def main(quick=False, graph=None):
    repeats = 1 if quick else 3
    print(machine() + "; " + load())
    rows = []
    for name, program, files in GRAPHS[2:] if quick else GRAPHS:
        if graph is not None and graph not in name:
            continue
        samples = [stages(program, files) for _ in range(repeats)]

        def middle(key, samples=samples):
            values = [sample[key] for sample in samples]
            return None if values[0] is None else median(values)

        after = [middle(key) for key in ("observe", "graph", "columns")]
        own = after[1] is not None
        rows.append(
            [
                name,
                f"{samples[0]['nodes']:,}",
                ms(middle("run")),
                *(ms(value) if own else "–" for value in after),
                ms(sum(after)) if own else "–",
                ms(middle("peer trace")),
                ms(middle("peer columns")),
                ms(middle("peer trace") + middle("peer columns")),
            ]
        )
    print_table(
        f"After the run: the server's stages, median of {repeats} (CPU ms)",
        [
            "graph",
            "nodes",
            "run (the interpreter)",
            "observe",
            "program's graph",
            "columns",
            "after the run",
            "peer: trace as Values",
            "peer: columns",
            "peer: after the run",
        ],
        rows,
        [
            "observe is timed inside the run and left out of its figure. A program without its own class "
            "(the demo) has only the peer's stages."
        ],
    )
    print(load() + " at the end")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the micrograd demo only, once")
    parser.add_argument("--graph", help='only the graphs whose name contains this ("emma", "christopher", "demo")')
    arguments = parser.parse_args()
    main(arguments.quick, arguments.graph)
