"""The response cache's effect on the course examples: whole requests through the ASGI app
in-process, with the page's fields (trace and layout), cache off against cache warm.

    python -m benchmarks.bench_cache [--quick]
"""

import argparse
import asyncio
import time

import httpx

from app.config import Settings
from app.main import create_app
from benchmarks.bench_pipeline import COURSE_EXAMPLES
from benchmarks.common import median, print_table, ratio, us

NO_CACHE = 1  # one byte: nothing fits, every request computes


async def _timings(cache_bytes, source, runs):
    app = create_app(Settings(response_cache_bytes=cache_bytes))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as client:
        body = {"expression": source, "layout": True}
        (await client.post("/backward", json=body)).raise_for_status()  # warms the cache, if any
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            (await client.post("/backward", json=body)).raise_for_status()
            samples.append(time.perf_counter() - started)
    return median(samples)


def main(quick=False):
    runs = 20 if quick else 300
    rows = []
    for name, source in COURSE_EXAMPLES.items():
        computed = asyncio.run(_timings(NO_CACHE, source, runs))
        cached = asyncio.run(_timings(16_000_000, source, runs))
        rows.append((name, us(computed), us(cached), ratio(cached, computed)))
    print_table(
        "Response cache on the course examples (whole request in-process, trace and layout, median µs)",
        ("program", "computed", "from the cache", "ratio"),
        rows,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
