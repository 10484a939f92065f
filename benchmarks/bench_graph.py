"""A 100,000-node graph posted to a real server (POST /backward with `graph`), against the time budget.

    python -m benchmarks.bench_graph [--nodes N] [--repeats R]

One uvicorn server (benchmarks.apps:create_bench_app) at the default limits (a graph's body has
VALUEGRAPH_MAX_GRAPH_BODY_BYTES; the node limit is raised only past its default). Each request is timed whole
and judged against the time budget (VALUEGRAPH_TIME_BUDGET, 2 s unless set); the server itself gets a
long one, so that a slow answer is timed rather than cut off with a 503. The graph is a residual
chain, as a learner's network makes them: x = x * w + x over a thousand shared weights, every node
used twice. It is posted with the learner's grads right (the check confirms them) and with the grads
that `=` for `+=` gives (the check then recomputes under every hypothesis before naming one),
without the trace and with it. Beside them, the peer: the same graph as engine Values traced
and written in-process (the /backward work without HTTP or reading a graph), and reading the
body alone (json.loads), so the table shows what the graph path adds; and, through the same
server, the same chain built by a Python program (valuegraph's interpreter running micrograd-style
code, then /backward's trace and answer): what the learner who writes Python instead gets. Each
row has the load average when it was taken (the machine is shared) and its CPU time, which the
load does not inflate: the server process's for a request, the benchmark's own in-process.
"""

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import httpx

from app import schemas
from app.budget import collector_paused
from app.config import Settings
from app.serialize import backward_json
from app.service import answer_json
from benchmarks.bench_http import Server
from benchmarks.common import clock, load, machine, median, ms, print_table, verdict
from engine import Limits, Value, trace
from engine.autograd import operation_order


def residual_chain(size: int):
    """(engine output Value, the graph as a learner's class writes it) with about `size` nodes."""
    weights = [Value(0.001 * (k % 7 - 3), label=f"w{k}") for k in range(1000)]
    x = Value(1.0, label="x")
    made = 1001
    k = 0
    while made + 2 <= size:
        x = x * weights[k % 1000] + x
        made += 2
        k += 1
    return x


def as_graph(output, grads):
    steps = trace(output, Limits(max_nodes=10**7, max_variant_steps=10**7))
    ids = steps.ids
    nodes = [
        {
            "id": i,
            "label": value.label,
            "op": value.op,
            "data": value.data,
            "grad": grads[value],
            "children": [ids[child] for child in value._children],
            "local_grads": list(value._local_grads),
        }
        for i, value in enumerate(steps.nodes)
    ]
    return {"nodes": nodes, "output": steps.output}


def reached(output) -> list:
    values, stack, seen = [], [output], {output}
    while stack:
        value = stack.pop()
        values.append(value)
        for child in value._children:
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return values


def course_grads(output):
    values = reached(output)
    for value in values:
        value.grad = 0.0
    output.backward()
    return {value: value.grad for value in values}


def assigned_grads(output):
    """What a backward with `=` for `+=` leaves: each input keeps only its last contribution."""
    order = operation_order(output)
    grads = dict.fromkeys(reached(output), 0.0)
    grads[output] = 1.0
    for value in reversed(order):
        for child, local in zip(value._children, value._local_grads):
            grads[child] = local * grads[value]
    return grads


PYTHON_PROGRAM = """from micrograd.engine import Value

ws = [Value(0.001 * (k % 7 - 3)) for k in range(1000)]
x = Value(1.0)
for k in range({steps}):
    x = x * ws[k % 1000] + x
x.backward()
"""


def python_program(size: int) -> str:
    """residual_chain's graph written as a learner's Python program (the same nodes, ops and numbers)."""
    return PYTHON_PROGRAM.format(steps=(size - 1001) // 2)


def server_cpu_seconds(server) -> float:
    """CPU time the server's process has used (one worker: uvicorn serves in its own process), or NaN
    without /proc. Under load, what a request costs the server; its wall time is what the load leaves."""
    try:
        fields = Path(f"/proc/{server.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_minute_load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def main(quick=False, argv=()):
    """benchmarks.run calls main(quick); `python -m benchmarks.bench_graph` passes its arguments."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5_000 if quick else 100_000)
    parser.add_argument("--repeats", type=int, default=1 if quick else 3)
    args = parser.parse_args(list(argv))

    output = residual_chain(args.nodes)
    bodies = {
        "grads right (status ok)": {"graph": as_graph(output, course_grads(output)), "trace": False},
        "= for += (status wrong, every hypothesis tried)": {
            "graph": as_graph(output, assigned_grads(output)),
            "trace": False,
        },
    }
    bodies["grads right, with the trace"] = {**bodies["grads right (status ok)"], "trace": True}
    encoded = {f"POST /backward graph, {name}": json.dumps(body).encode() for name, body in bodies.items()}
    encoded["peer: the same chain as a Python program, POST /backward expression"] = json.dumps(
        {"expression": python_program(args.nodes), "trace": False}
    ).encode()
    count = len(bodies["grads right (status ok)"]["graph"]["nodes"])
    budget = float(os.environ.get("VALUEGRAPH_TIME_BUDGET", "2.0"))
    environment = {
        "VALUEGRAPH_MAX_NODES": str(max(count, Settings.max_nodes)),
        "VALUEGRAPH_MAX_GRAPH_BODY_BYTES": str(
            max(2 * len(encoded["POST /backward graph, grads right, with the trace"]), Settings.max_graph_body_bytes)
        ),
        "VALUEGRAPH_TIME_BUDGET": "120",
        "VALUEGRAPH_RESPONSE_CACHE_BYTES": "0",  # the program's answer is computed every time, as the graph's is
    }

    rows = []
    with Server(1, environment=environment) as server, httpx.Client(base_url=server.url, timeout=120) as client:
        for name, body in encoded.items():
            times, cpu_times, statuses, answer = [], [], set(), None
            for _ in range(args.repeats):
                started, cpu = clock(), server_cpu_seconds(server)
                response = client.post("/backward", content=body, headers={"content-type": "application/json"})
                times.append(clock() - started)
                cpu_times.append(server_cpu_seconds(server) - cpu)
                statuses.add(response.status_code)
                answer = response
            shown = answer.json() if answer.status_code == 200 else {}
            check = shown.get("gradient_check", {})
            took = median(times)
            rows.append(
                [
                    name,
                    f"{len(body) / 1e6:.1f} MB",
                    f"{len(shown.get('nodes', [])):,}",
                    ms(took),
                    ms(median(cpu_times)) if cpu_times[0] == cpu_times[0] else "",
                    ",".join(map(str, sorted(statuses))) + (f" {check.get('status')}" if check else ""),
                    verdict(took <= budget and statuses == {200}),
                    one_minute_load(),
                ]
            )

    body = encoded["POST /backward graph, grads right (status ok)"]
    with collector_paused():  # as the server reads a large body and does its work
        wall, cpu = clock(), time.process_time()
        request = schemas.BackwardRequest.model_validate(json.loads(body))
        made = answer_json(request, Limits(max_nodes=10**7))[0]
        posted = clock() - wall, time.process_time() - cpu
        wall, cpu = clock(), time.process_time()
        json.loads(body)
        reading = clock() - wall, time.process_time() - cpu
        wall, cpu = clock(), time.process_time()
        backward_json(trace(output, Limits(max_nodes=10**7)))
        in_process = clock() - wall, time.process_time() - cpu
    in_process_rows = {
        "in-process: the graph read, validated, traced, checked and written (no HTTP)": (posted, len(made)),
        "peer: the same graph as engine Values, traced and written in-process": (in_process, None),
        "peer: json.loads of the graph's body alone": (reading, None),
    }
    for name, ((wall, cpu), _) in in_process_rows.items():
        rows.append([name, "", f"{count:,}", ms(wall), ms(cpu), "", "", one_minute_load()])
    print_table(
        f"A {count:,}-node graph posted whole (median of {args.repeats}; time budget {budget:g} s)",
        [
            "request",
            "body",
            "nodes answered",
            "ms",
            "CPU ms",
            "status",
            f"within {budget:g} s",
            "load (1 min)",
        ],
        rows,
        [machine(), load()],
    )


if __name__ == "__main__":
    main(argv=sys.argv[1:])
