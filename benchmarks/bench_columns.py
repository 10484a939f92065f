"""One 100,000-node answer with its trace, in the JSON encoding and in the columnar one, side by side
(issue 22: peak memory <= 400 MB, built in <= 1.5 s in the server, <= 4 MB gzip, decoded in the page
in <= 200 ms).

    python -m benchmarks.bench_columns

Memory: each encoding's request in a fresh uvicorn process (one worker, default settings but for the
node, source and time limits this program needs), its peak RSS from /proc (VmHWM). Time in the server:
the in-process ASGI clock of bench_pipeline (arrival to last byte, gzip included), median of 3 after a
warm-up, and the CPU time of building the answer (compute and write), which the machine's load moves
less. Size: the bytes as sent with gzip (the app's compresslevel 2), and what base64 typed arrays in
place of the JSON number arrays would send (a what-if, not served). Decoding: Chromium fetches each
answer and times what the page does with it (static/js/api.js): JSON.parse, then graphOf (for the
columns decodeColumns, reviving the numbers as it makes the records; for JSON reviveNumbers), and reads
the trace's steps, so that every record is made (graphOf makes a columnar answer's when first read, and
the page's timeline never reads them); the same at 2,000 nodes beside it, where a user would
notice a small graph made slower. The peer decodes the same columns generically, growing each record a
field at a time (benchmarks/columns_by_field.js, the page's decoder before it named the fields).
"""

import argparse
import asyncio
import base64
import gzip
import json
import shutil
import threading
import time
from array import array
from pathlib import Path
from typing import Annotated

import httpx
import uvicorn
from fastapi import Header
from fastapi.responses import Response
from playwright.sync_api import sync_playwright

from app import schemas
from app.budget import collector_paused
from app.config import Settings
from app.serialize import COLUMNS_MEDIA_TYPE
from app.service import compute
from benchmarks.apps import create_bench_app
from benchmarks.bench_browser import CHROMIUM, CHROMIUM_FLAGS
from benchmarks.bench_http import Server
from benchmarks.bench_pipeline import CHAPTER_2, ServerClock, layered_program, memory_kb
from benchmarks.common import load, machine, median, ms, print_table, verdict
from engine import Limits, evaluate, parse, trace

NODES = 100_000
SMALL = 2_000  # the small graph decoded beside the big one
DECODE_RUNS = 7  # the garbage collector's pauses scatter single runs
# The peer of the page's decoder: the columns read generically, each record grown a field at a time.
PEER = "columns, decoded a field at a time (peer)"
PEER_DECODER = Path(__file__).with_name("columns_by_field.js")
ENVIRONMENT = {
    "VALUEGRAPH_MAX_NODES": "250000",
    "VALUEGRAPH_MAX_SOURCE_LENGTH": "2000000",
    "VALUEGRAPH_MAX_BODY_BYTES": "4000000",
    "VALUEGRAPH_TIME_BUDGET": "120",
}
SETTINGS = dict(
    max_nodes=250_000, max_source_length=2_000_000, max_body_bytes=4_000_000, time_budget=120.0, response_cache_bytes=0
)
ENCODINGS = {"JSON": "application/json", "columns (what the page asks for)": COLUMNS_MEDIA_TYPE}
GZIP_LEVEL = 2  # app/main.py's GZipMiddleware


def peak_memory(source, accept):
    """(RSS before, peak RSS) in MB of a fresh server answering the program once."""
    with Server(1, environment=ENVIRONMENT) as server:
        pid = server.process.pid
        httpx.post(f"{server.url}/backward", json={"expression": CHAPTER_2, "layout": True}, timeout=30)
        before = memory_kb(pid, "VmRSS")
        response = httpx.post(
            f"{server.url}/backward",
            json={"expression": source},
            headers={"accept-encoding": "gzip", "accept": accept},
            timeout=300,
        )
        assert response.status_code == 200, response.text[:300]
        return before / 1024, memory_kb(pid, "VmHWM") / 1024


async def server_times(source, runs=3):
    """{accept: (in-server seconds per run after a warm-up, gzip bytes, raw bytes)}"""
    app = create_bench_app(Settings(**SETTINGS))
    clocked = ServerClock(app)
    results = {}
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=clocked)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=300) as client:
            for accept in ENCODINGS.values():
                clocked.samples.clear()
                for _ in range(runs + 1):
                    response = await client.post(
                        "/backward",
                        json={"expression": source},
                        headers={"accept-encoding": "gzip", "accept": accept},
                    )
                    assert response.status_code == 200, response.text[:300]
                results[accept] = (clocked.samples[1:], response.num_bytes_downloaded, len(response.content))
    return results


def cpu_seconds(source, columns):
    """CPU time of compute + write, as answer_json does it (collector paused)."""
    request = schemas.BackwardRequest.model_construct(
        **{**schemas.BackwardRequest(expression="a = 1").model_dump(), "expression": source}
    )
    limits = Settings(**SETTINGS).limits
    with collector_paused():
        start = time.process_time()
        made = compute(request, limits, keep_steps=not columns)
        made.columns() if columns else made.json()
        return time.process_time() - start


def typed(value):
    """The columnar answer with each all-number, finite "values" list as base64 of a typed array."""
    if isinstance(value, dict):
        out = {key: typed(item) for key, item in value.items()}
        values = value.get("values")
        if isinstance(values, list) and values and all(type(x) in (int, float) for x in values):
            kind = "i" if all(type(x) is int for x in values) else "d"
            out["values"] = base64.b64encode(array(kind, values).tobytes()).decode()
        for key in ("offsets", "index", "at"):
            if isinstance(value.get(key), list):
                out[key] = base64.b64encode(array("i", value[key]).tobytes()).decode()
        return out
    if isinstance(value, list):
        return [typed(item) for item in value]
    return value


DECODE = """async ([accept, size, runs, peer]) => {
    const { graphOf, reviveNumbers } = await import('/static/js/api.js');
    const { decodeColumnsByField } = await import('/bench/columns_by_field.js');
    const times = [];
    for (let run = 0; run < runs; run++) {
        const response = await fetch(`/bench/answer/${size}`, { headers: { accept } });
        const text = await response.text();
        const start = performance.now();
        const answer = peer
            ? reviveNumbers(decodeColumnsByField(JSON.parse(text)))
            : graphOf(JSON.parse(text), response.headers.get('content-type'));
        answer.trace?.sort; answer.trace?.propagate; // every record made, as the peer makes them
        times.push([performance.now() - start, answer.nodes.length]);
    }
    return times;
}"""


def browser_decode(bodies):
    """{(size, accept): (median seconds, nodes)} for JSON.parse + graphOf of each answer in Chromium, and
    {(size, PEER): ...} for the columns decoded by the peer; bodies: {size: {accept: bytes}}."""
    if not shutil.which(CHROMIUM):
        return None
    results = {}
    app = create_bench_app(Settings(**SETTINGS))

    @app.get("/bench/answer/{size}")
    async def stored_answer(size: int, accept: Annotated[str, Header()]):  # the bodies measured, served as they were
        return Response(bodies[size][accept], media_type=accept)

    @app.get("/bench/columns_by_field.js")
    async def peer_decoder():
        return Response(PEER_DECODER.read_bytes(), media_type="text/javascript")

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/healthz")
            for size in bodies:
                for accept in ENCODINGS.values():
                    samples = page.evaluate(DECODE, [accept, size, DECODE_RUNS, False])
                    results[size, accept] = (median([t for t, _ in samples]) / 1000, samples[0][1])
                samples = page.evaluate(DECODE, [COLUMNS_MEDIA_TYPE, size, DECODE_RUNS, True])
                results[size, PEER] = (median([t for t, _ in samples]) / 1000, samples[0][1])
            browser.close()
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    return results


def answer_bodies(source):
    """{accept: the answer's bytes in that encoding} for the program, with its trace."""
    bodies = {}
    for accept in ENCODINGS.values():
        request = schemas.BackwardRequest.model_construct(
            **{**schemas.BackwardRequest(expression="a = 1").model_dump(), "expression": source}
        )
        columns = accept == COLUMNS_MEDIA_TYPE
        made = compute(request, Settings(**SETTINGS).limits, keep_steps=not columns)
        bodies[accept] = made.columns() if columns else made.json()
        del made
    return bodies


def main(quick=False):
    """quick: 2,000 nodes, a smoke test of the script, not figures."""
    size = SMALL if quick else NODES
    print(f"\n## The columnar encoding at {size:,} nodes\n\n{machine()}; {load()}")
    source = layered_program(size)
    nodes = len(trace(evaluate(parse(source, Limits(max_source_length=2_000_000))), Limits(max_nodes=250_000)).nodes)
    times = asyncio.run(server_times(source))
    bodies = {size: answer_bodies(source), SMALL: answer_bodies(layered_program(SMALL))}
    typed_gzip = len(
        gzip.compress(json.dumps(typed(json.loads(bodies[size][COLUMNS_MEDIA_TYPE]))).encode(), GZIP_LEVEL)
    )
    decode = browser_decode(bodies)
    rows = []
    for title, accept in ENCODINGS.items():
        before, peak = peak_memory(source, accept)
        samples, sent, raw = times[accept]
        cpu = median([cpu_seconds(source, accept == COLUMNS_MEDIA_TYPE) for _ in range(3)])
        decoded = "-" if decode is None else ms(decode[size, accept][0])
        small = "-" if decode is None else ms(decode[SMALL, accept][0])
        rows.append(
            [
                title,
                f"{before:.0f}",
                f"{peak:.0f}",
                verdict(peak <= 400),
                ms(median(samples)),
                ms(cpu),
                verdict(cpu <= 1.5),
                f"{raw / 1e6:.1f}",
                f"{sent / 1e6:.2f}",
                verdict(sent <= 4e6),
                decoded,
                "-" if decode is None else verdict(decode[size, accept][0] <= 0.2),
                small,
            ]
        )
    if decode is not None:  # the same columns, decoded by the peer: only the decoding differs
        peer = decode[size, PEER][0]
        rows.append([PEER, *["-"] * 9, ms(peer), verdict(peer <= 0.2), ms(decode[SMALL, PEER][0])])
    print_table(
        f"A {nodes:,}-node program with its full trace ({len(source):,} characters): JSON beside the columns "
        "(targets: peak <= 400 MB, built <= 1.5 s, gzip <= 4 MB, decoded <= 200 ms)",
        [
            "encoding",
            "server RSS before, MB",
            "peak RSS, MB",
            "target",
            "in-server ms (median of 3, wall)",
            "answer CPU ms (median of 3)",
            "target",
            "body MB",
            "gzip MB",
            "target",
            f"parse + graphOf in Chromium, ms (median of {DECODE_RUNS})",
            "target",
            f"the same at {SMALL:,} nodes, ms",
        ],
        rows,
        [
            f"The columns with base64 typed arrays (Int32/Float64) in place of their number arrays would send "
            f"{typed_gzip / 1e6:.2f} MB with gzip (a what-if, not served).",
            "Wall-clock figures on this loaded machine run far above the CPU figures: " + load(),
        ],
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 nodes: a smoke test of the script, not figures")
    main(parser.parse_args().quick)
