"""The request pipeline stage by stage, and whole requests through the ASGI app in-process.

    python -m benchmarks.bench_pipeline [--quick]

Stages: parse, evaluate, trace, layout (app.layout), records (app.serialize.backward_response:
plain dicts, all at once, as rooms, embeds and exports keep them), serialise (app.serialize.to_json),
and orjson.dumps of the same records for comparison; /backward itself builds and writes the records
a chunk at a time (app.serialize.backward_json), which cpu_table times. "In the server" is measured
by an ASGI wrapper around the app: from the moment the app is called until its last byte is sent
(middleware, validation, the worker thread and gzip included; uvicorn's HTTP parsing and the network
not). The app runs its own lifespan, so gc.freeze() after start-up happens as in production.
Slow cases are repeated less: each measurement runs until it has its runs or its time is up.
"""

import argparse
import asyncio
import gc
import time

import anyio
import anyio.to_thread
import httpx
import orjson
import pydantic_core

from app.budget import collector_paused
from app.config import Settings
from app.layout import compute_layout
from app.serialize import backward_json, backward_response, to_json
from benchmarks.apps import TRIVIAL_PATH, create_bench_app
from benchmarks.bench_http import Server
from benchmarks.common import clock, load, machine, median, ms, percentile, print_table, us, verdict
from engine import Limits, evaluate, parse, trace
from engine.program import ProgramRun, ShorthandOrigins

CHAPTER_2 = "a = 2; b = 3; c = a * b; L = c + a"
COURSE_EXAMPLES = {
    "chapter 2": CHAPTER_2,
    "chapter 1 exercise": "a = 2\nb = 3\nc = a * b\nd = c + a\ne = d ** 2",
    "tanh neuron": "u1 = 0.5; u2 = -1.5\nv1 = 1.2; v2 = 0.4\nbias = 0.3\nz = u1*v1 + u2*v2 + bias\ny = tanh(z)",
    "softmax + log loss": (
        "z1 = 2; z2 = 1; z3 = 0.1\ne1 = exp(z1); e2 = exp(z2); e3 = exp(z3)\n"
        "s = e1 + e2 + e3\np1 = e1 / s\nL = -log(p1)"
    ),
}
SIZES = (100, 1_000, 10_000, 50_000)
# The generated programs take ~6.7 characters a node, so 50,000 nodes need more than the default
# 100,000-character source limit: the benchmark raises that one limit (nodes stay at the default).
# The response cache is off in every table here: repeated requests would otherwise time the cache
# (benchmarks.bench_cache does that), not the computation.
NO_CACHE = dict(response_cache_bytes=0)
BENCH_SETTINGS = dict(max_source_length=1_000_000, max_body_bytes=4_000_000, time_budget=120.0, **NO_CACHE)
LIMITS = Limits(max_source_length=BENCH_SETTINGS["max_source_length"])
DEFAULT_TIME_BUDGET = Settings().time_budget
STAGES = ("parse", "evaluate", "trace", "layout", "records", "serialise", "orjson", "pydantic_core")


def page_sum_of_terms(count):
    """The page's "large" example: one x times 1..9, summed (static/js/examples.js)."""
    return "x = 0.5\nL = " + " + ".join(f"x * {i % 9 + 1}" for i in range(count))


def page_tanh_chain(count):
    """The page's other large example: h = tanh(h * 1.01), count times."""
    lines = ["x = 0.3", "h0 = x"] + [f"h{i} = tanh(h{i - 1} * 1.01)" for i in range(1, count + 1)]
    return "\n".join(lines + [f"L = h{count}"])


def line_of_calls(count):
    """One line of `count` calls summed, each partial sum a node whose code spans the line so far (its
    span widened over parentheses, its name shortened: once quadratic in the line's length)."""
    return "x = 0.5\nL = " + "+".join(f"tanh(x*{i % 10})" for i in range(count))


def layered_program(nodes):
    """A deep, reusing graph like a small recurrent net: each line is six nodes, reads the two
    lines before it and the shared w and b, four tanh lines to one relu(** 2) line. The last line
    is a tanh, so the gradient reaches most nodes: when it was a relu of a negative sum (as at
    12,000 nodes until 2026-11-23), every gradient was 0 and the trace recorded no updates."""
    lines = ["x = 0.3", "w = -0.7", "b = 0.1", "h0 = x", "h1 = x * w"]
    last = 1 + (nodes - 4) // 6
    for i in range(2, last + 1):
        if (last - i) % 5 != 4:
            lines.append(f"h{i} = tanh(h{i - 1} * w + h{i - 2} * 0.5 + b)")
        else:
            lines.append(f"h{i} = relu(h{i - 1} ** 2 * 0.5 + h{i - 2} * w)")
    return "\n".join(lines)


def programs(quick):
    found = dict(COURSE_EXAMPLES)
    found["page: 500-term sum"] = page_sum_of_terms(500)
    found["page: 1,000-step tanh chain"] = page_tanh_chain(1000)
    found["one line of 4,000 tanh calls summed"] = line_of_calls(4000)
    for n in SIZES[:2] if quick else SIZES:
        found[f"generated {n:,}"] = layered_program(n)
    return found


def runs(quick, cheap):
    """(most runs, seconds) for one measurement."""
    if quick:
        return 3, 0.5
    return (300, 1.0) if cheap else (30, 3.0)


def stage_times(source, max_runs, seconds):
    """{stage: median seconds} over runs of the whole pipeline, and the node count."""
    samples = {stage: [] for stage in STAGES}
    started = clock()
    while not samples["parse"] or (len(samples["parse"]) < max_runs and clock() - started < seconds):
        gc.collect()
        t0 = clock()
        tree = parse(source, LIMITS)
        t1 = clock()
        marks = []  # as run_program does: where each node came from, for its span and expr
        program = ProgramRun(evaluate(tree, None, marks), shorthand=ShorthandOrigins(source, marks))
        t2 = clock()
        steps = trace(program.output, LIMITS)
        t3 = clock()
        compute_layout(steps)
        t4 = clock()
        records = backward_response(steps, include_trace=True, program=program)
        t5 = clock()
        to_json(records)
        t6 = clock()
        orjson.dumps(records)
        t7 = clock()
        pydantic_core.to_json(records, inf_nan_mode="strings")
        t8 = clock()
        for stage, seconds_taken in zip(
            STAGES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6, t8 - t7)
        ):
            samples[stage].append(seconds_taken)
    return {stage: median(times) for stage, times in samples.items()}, len(steps.nodes)


class ServerClock:
    """ASGI wrapper that times each request inside the server, from its arrival to the last byte
    of its answer (gzip included); work the app does after that, such as freeing the graph, is not
    waited for by the client and is not counted."""

    def __init__(self, app):
        self.app = app
        self.samples = []

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start = clock()

        async def timed_send(message):
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                self.samples.append(clock() - start)

        await self.app(scope, receive, timed_send)


async def _requests(requests, max_runs, seconds, settings, async_dependencies):
    """For each (path, body): in-server seconds per run, status, bytes as sent (gzip), JSON bytes."""
    app = create_bench_app(Settings(**settings), async_dependencies)
    clocked = ServerClock(app)
    results = []
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=clocked)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            for path, body in requests:
                clocked.samples.clear()
                started = clock()
                while not clocked.samples or (len(clocked.samples) < max_runs and clock() - started < seconds):
                    response = await client.post(path, json=body, headers={"accept-encoding": "gzip"})
                results.append(
                    (list(clocked.samples), response.status_code, response.num_bytes_downloaded, len(response.content))
                )
    return results


def request_times(requests, max_runs, seconds, settings=BENCH_SETTINGS, async_dependencies=False):
    return asyncio.run(_requests(requests, max_runs, seconds, settings, async_dependencies))


def pipeline_tables(quick):
    rows, serialise_rows = [], []
    for name, source in programs(quick).items():
        cheap = len(source) < 200
        stages, nodes = stage_times(source, *runs(quick, cheap))
        api, page = request_times(
            [("/backward", {"expression": source}), ("/backward", {"expression": source, "layout": True})],
            *runs(quick, cheap),
        )
        for _, status, _, _ in (api, page):
            assert status == 200, f"{name}: HTTP {status}"
        page_ms = median(page[0])
        rows.append(
            [name, f"{nodes:,}"]
            + [us(stages[s] / nodes) for s in ("parse", "evaluate", "trace", "layout", "records", "serialise")]
            + [
                us(median(api[0]) / nodes),
                us(page_ms / nodes),
                ms(median(api[0])),
                ms(page_ms) + (" (over the 2 s budget)" if page_ms > DEFAULT_TIME_BUDGET else ""),
            ]
        )
        serialise = stages["serialise"]
        serialise_rows.append(
            [
                name,
                f"{nodes:,}",
                ms(serialise),
                ms(stages["orjson"]),
                f"{serialise / stages['orjson']:.2f}x",
                verdict(serialise <= 2 * stages["orjson"]),
                f"{stages['pydantic_core'] / stages['orjson']:.2f}x",
                f"{(stages['records'] + serialise) / stages['orjson']:.2f}x",
            ]
        )
    print_table(
        "Pipeline: µs per node for each stage, and whole requests in the server",
        [
            "program",
            "nodes",
            "parse",
            "evaluate",
            "trace",
            "layout",
            "records",
            "serialise",
            "request µs/node, API default",
            "request µs/node, as the page asks",
            "API request ms",
            "page request ms",
        ],
        rows,
        [
            "Stages: medians of repeated runs of the whole pipeline (slow programs run fewer times, at least once). "
            '"API default" is POST /backward with trace=true; "as the page asks" adds layout=true. Requests send '
            "Accept-Encoding: gzip, as browsers do.",
            f"The 50,000-node generated program is over the default {Limits().max_source_length:,}-character source "
            'limit, so every request here runs with max_source_length=1,000,000 and a 120 s time budget; "over the 2 '
            f's budget" marks requests the default server ({DEFAULT_TIME_BUDGET:g} s) would answer with 503.',
        ],
    )
    print_table(
        "Serialising the response against orjson.dumps of the same records (target <= 2x)",
        [
            "program",
            "nodes",
            "to_json ms",
            "orjson ms",
            "to_json / orjson",
            "target",
            "pydantic_core.to_json / orjson",
            "records + to_json / orjson",
        ],
        serialise_rows,
        [
            "to_json (app.serialize) writes NaN/Infinity as the strings the wire format requires; orjson writes null "
            'for them. pydantic_core.to_json(records, inf_nan_mode="strings") is the schema-less alternative with the '
            "same output. The last column adds building the records from the trace."
        ],
    )


async def _thread_hop(count):
    limiter = anyio.CapacityLimiter(4)
    samples = []
    for _ in range(count):
        start = clock()
        await anyio.to_thread.run_sync(lambda: None, limiter=limiter)
        samples.append(clock() - start)
    return median(samples)


def chapter_2_table(quick):
    """Chapter 2's request, where its time goes: what a response cache could save at most."""
    max_runs, seconds = (100, 2.0) if quick else (2_000, 5.0)
    stages, _ = stage_times(CHAPTER_2, max_runs, seconds)
    body = {"expression": CHAPTER_2}
    api, page, trivial = request_times(
        [("/backward", body), ("/backward", {**body, "layout": True}), (TRIVIAL_PATH, body)],
        max_runs,
        seconds,
        settings=NO_CACHE,
    )
    (api_async,) = request_times([("/backward", body)], max_runs, seconds, settings=NO_CACHE, async_dependencies=True)
    trivial_p50, hop = median(trivial[0]), asyncio.run(_thread_hop(max_runs))
    rows = []
    cases = (
        ("API default", api[0], False),
        ("as the page asks (layout)", page[0], True),
        ("what-if: API default, dependencies async", api_async[0], False),
    )
    for title, samples, with_layout in cases:
        p50, p99 = median(samples), percentile(samples, 0.99)
        parts = ["parse", "evaluate", "trace"] + (["layout"] if with_layout else []) + ["records", "serialise"]
        share = lambda seconds_taken: f"{us(seconds_taken)} ({seconds_taken / p50:.0%})"  # noqa: E731
        rows.append(
            [title, us(p50), us(p99), verdict(p50 <= 0.002)]
            + [
                share(stages[p]) if p in parts else "-"
                for p in ("parse", "evaluate", "trace", "layout", "records", "serialise")
            ]
            + [share(p50 - sum(stages[p] for p in parts)), share(trivial_p50), share(hop)]
        )
    print_table(
        "Chapter 2 request in the server: p50 (target <= 2 ms) and where the time goes, µs (share of p50)",
        [
            "request",
            "p50",
            "p99",
            "target",
            "parse",
            "evaluate",
            "trace",
            "layout",
            "records",
            "serialise",
            "the rest",
            "for scale: trivial endpoint",
            "for scale: one thread hop",
        ],
        rows,
        [
            f'{len(api[0]):,} sequential requests each, default settings with the response cache off. "the rest" is '
            "everything but our computation: routing, request validation, dependencies, middleware, worker-thread "
            "hops, gzip. The trivial endpoint takes the same request model and does no work; a thread hop is one "
            "anyio.to_thread.run_sync of a no-op. A response cache could save at most our computed stages; a hit "
            "still pays the rest.",
            "what-if (benchmark only, through app.dependency_overrides in benchmarks/apps.py): get_settings and "
            "get_service as async def. FastAPI runs a plain-def dependency in the thread pool, a thread hop each.",
        ],
    )


def big_request_table(quick):
    source = layered_program(12_000)
    nodes = len(trace(evaluate(parse(source))).nodes)
    runs_and_time = (3, 2.0) if quick else (16, 10.0)
    api_body, page_body = {"expression": source}, {"expression": source, "layout": True}
    rows = []
    for title, body in (("trace, no layout (API default)", api_body), ("trace and layout (the page)", page_body)):
        ((samples, status, sent, raw),) = request_times([("/backward", body)], *runs_and_time, settings=NO_CACHE)
        samples = samples[1:]  # the first request of a fresh app warms it up
        p50, answered = median(samples), status == 200
        rows.append(
            [
                title,
                status,
                ms(p50),
                ms(min(samples)),
                verdict(answered and p50 <= 0.150),
                f"{raw / 1e6:.2f}" if answered else "-",
                f"{sent / 1e6:.2f}" if answered else "-",
                verdict(sent <= 1_000_000) if answered else "-",
            ]
        )
    print_table(
        f"A {nodes:,}-node program ({len(source):,} characters) with its full trace, default settings (response cache "
        "off) (targets: <= 150 ms in the server, gzip <= 1 MB)",
        ["request", "status", "in-server ms (median)", "fastest", "target", "JSON MB", "gzip MB", "target"],
        rows,
        [
            f"Median of up to {runs_and_time[0] - 1} requests after one that warms the app up. Status 503 means the "
            "default 2 s time budget ran out. The clock stops at the answer's last byte; the graph and records are "
            "freed after it."
        ],
    )


def cpu_table(quick):
    """The 12,000-node program's stages in CPU time (time.process_time), which other processes'
    load barely moves, run as the API runs them: the collector paused, evaluate keeping each node's
    origin, records carrying its span, expr and scope, built and written a chunk at a time; and the
    freeing the API leaves until the answer is sent."""
    source = layered_program(12_000)
    samples = []
    gc.freeze()  # as the server does after start-up
    for _ in range(3 if quick else 9):
        gc.collect()
        with collector_paused():
            times = [time.process_time()]
            tree = parse(source)
            times.append(time.process_time())
            marks = []  # as run_program does: where each node came from, for its span and expr
            program = ProgramRun(evaluate(tree, None, marks), shorthand=ShorthandOrigins(source, marks))
            del tree
            times.append(time.process_time())
            steps = trace(program.output)
            times.append(time.process_time())
            backward_json(steps, include_trace=True, program=program)
            times.append(time.process_time())
            del program, steps
            times.append(time.process_time())
        samples.append([b - a for a, b in zip(times, times[1:])])
    stages = [median(column) for column in zip(*samples)]
    answer = sum(stages[:-1])
    print_table(
        "The same 12,000-node program, our stages only, in CPU time (ms): what the machine's load does not change",
        [
            "parse",
            "evaluate",
            "trace",
            "records and JSON",
            "total before the answer",
            "target <= 150 ms (before the framework)",
            "freeing (after the answer)",
        ],
        [[ms(t) for t in stages[:-1]] + [ms(answer), verdict(answer <= 0.150), ms(stages[-1])]],
        [
            f"Median of {len(samples)} runs, the collector paused as the API pauses it. Not counted here: the "
            "framework (validation, the worker thread, middleware) and gzip (about 25 ms for the 6.5 MB answer)."
        ],
    )


def memory_kb(pid, field):
    """VmRSS (now) or VmHWM (peak) of a process, from /proc: unlike getrusage's ru_maxrss, VmHWM
    does not carry over the peak of the process that forked it."""
    with open(f"/proc/{pid}/status") as status:
        return int(next(line for line in status if line.startswith(field + ":")).split()[1])


def memory_table():
    """Each request in a fresh uvicorn process (one worker): its memory before, and its peak."""
    source = layered_program(50_000)
    nodes = len(trace(evaluate(parse(source, LIMITS)), LIMITS).nodes)
    environment = {"VALUEGRAPH_MAX_SOURCE_LENGTH": "1000000", "VALUEGRAPH_TIME_BUDGET": "120"}
    rows = []
    for title, body in (
        ("trace, no layout (API default)", {"expression": source}),
        ("trace and layout (the page)", {"expression": source, "layout": True}),
    ):
        with Server(1, environment=environment) as server:
            pid = server.process.pid
            httpx.post(f"{server.url}/backward", json={"expression": CHAPTER_2, "layout": True}, timeout=30)
            before = memory_kb(pid, "VmRSS")
            response = httpx.post(f"{server.url}/backward", json=body, headers={"accept-encoding": "gzip"}, timeout=180)
            assert response.status_code == 200, response.status_code
            peak, after = memory_kb(pid, "VmHWM"), memory_kb(pid, "VmRSS")
        rows.append(
            [
                title,
                f"{before / 1024:.0f}",
                f"{peak / 1024:.0f}",
                verdict(peak / 1024 < 150),
                f"{after / 1024:.0f}",
                f"{response.num_bytes_downloaded / 1e6:.1f}",
            ]
        )
    print_table(
        f"Memory of one {nodes:,}-node request in a fresh uvicorn process (target: peak < 150 MB)",
        ["request", "server RSS before, MB", "server peak RSS, MB", "target", "RSS after, MB", "gzip response MB"],
        rows,
        [
            "The server process's own figures from /proc (VmRSS, and VmHWM for the peak since it started), after "
            "start-up and one warm-up request; the client is a separate process. Source limit raised to 1,000,000 "
            "characters and the time budget to 120 s for this program."
        ],
    )


def main(quick=False):
    print(f"\n## Pipeline\n\n{machine()}; {load()}")
    pipeline_tables(quick)
    chapter_2_table(quick)
    big_request_table(quick)
    cpu_table(quick)
    if not quick:
        memory_table()
    print(f"\nAfter the pipeline tables: {load()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="fewer runs and smaller programs: a smoke test, not figures"
    )
    main(parser.parse_args().quick)
