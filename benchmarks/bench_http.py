"""HTTP load: requests per second and latency on a real uvicorn server, ours beside a trivial endpoint.

    python -m benchmarks.bench_http [--quick] [--seconds S] [--connections C]

One server (uvicorn, benchmarks.apps:create_bench_app, on 127.0.0.1 and a free port) serves
both POST /backward and a trivial endpoint that reads the same request model and does no
work, so the ratio says what our own work costs. Each load runs for a fixed time with a fixed
number of connections, with wrk when it is installed (apt-get install wrk), else a bounded
asyncio httpx client. Then the same with two workers. The load generator shares the machine.
"""

import argparse
import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import httpx

from benchmarks.apps import TRIVIAL_PATH
from benchmarks.common import REPO, clock, load, machine, median, percentile, print_table, verdict

CHAPTER_2 = "a = 2; b = 3; c = a * b; L = c + a"
# A tanh neuron with a squared-error loss and weight decay: 19 nodes, a typical "small program".
NEURON_LOSS = (
    "u1 = 0.5; u2 = -1.5; v1 = 1.2; v2 = 0.4; bias = 0.3\n"
    "y = tanh(u1*v1 + u2*v2 + bias)\n"
    "L = (y - 0.5) ** 2 + 0.01 * (v1 ** 2 + v2 ** 2)"
)
LOADS = {
    "trivial endpoint (same request model, no work)": (TRIVIAL_PATH, {"expression": NEURON_LOSS}),
    "POST /backward chapter 2 (4 nodes)": ("/backward", {"expression": CHAPTER_2}),
    "POST /backward neuron + loss (19 nodes)": ("/backward", {"expression": NEURON_LOSS}),
    "POST /backward neuron + loss, layout (the page)": ("/backward", {"expression": NEURON_LOSS, "layout": True}),
}
SMALL_PROGRAM = "POST /backward neuron + loss (19 nodes)"
TRIVIAL = "trivial endpoint (same request model, no work)"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """uvicorn in a subprocess on 127.0.0.1; stopped (by its own pid) when the block ends."""

    def __init__(self, workers, factory="create_bench_app", environment=None):
        self.workers = workers
        self.factory = factory
        self.environment = {**os.environ, **(environment or {})}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        command = [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            f"benchmarks.apps:{self.factory}",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            str(self.workers),
            "--log-level",
            "warning",
            "--no-access-log",
        ]
        self.process = subprocess.Popen(
            command, cwd=REPO, env=self.environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"uvicorn exited: {self.process.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    time.sleep(0.5 if self.workers == 1 else 2.0)  # let every worker finish starting
                    return self
            except httpx.TransportError:
                time.sleep(0.1)
        self.__exit__()
        raise RuntimeError("uvicorn did not answer /healthz within 30 s")

    def __exit__(self, *_):
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def wrk_load(url, path, body, seconds, connections):
    """(requests/s, p50 s, p99 s, non-2xx count) from wrk."""
    script = (
        f'wrk.method = "POST"\nwrk.body = [==[{json.dumps(body)}]==]\n'
        'wrk.headers["Content-Type"] = "application/json"\nwrk.headers["Accept-Encoding"] = "gzip"\n'
    )
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as file:
        file.write(script)
    try:
        output = subprocess.run(
            ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", file.name, url + path],
            capture_output=True,
            text=True,
            timeout=seconds + 30,
            check=True,
        ).stdout
    finally:
        os.unlink(file.name)
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    p50 = _wrk_duration(re.search(r"50%\s+([\d.]+\w+)", output).group(1))
    p99 = _wrk_duration(re.search(r"99%\s+([\d.]+\w+)", output).group(1))
    failed = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    errors = re.search(r"Socket errors: .*", output)
    return rate, p50, p99, (int(failed.group(1)) if failed else 0) + (1 if errors else 0)


def _wrk_duration(text):
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(number) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[unit]


def python_load(url, path, body, seconds, connections):
    """The same measurement with a bounded asyncio httpx client: `connections` workers in a loop."""

    async def run():
        latencies, failed = [], 0
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:
            deadline = clock() + seconds

            async def worker():
                nonlocal failed
                while clock() < deadline:
                    start = clock()
                    response = await client.post(path, json=body, headers={"accept-encoding": "gzip"})
                    latencies.append(clock() - start)
                    failed += response.status_code != 200

            started = clock()
            await asyncio.gather(*(worker() for _ in range(connections)))
            return len(latencies) / (clock() - started), median(latencies), percentile(latencies, 0.99), failed

    return asyncio.run(run())


def measure(workers, seconds, connections, generator, loads=LOADS, factory="create_bench_app"):
    results = {}
    with Server(workers, factory) as server:
        for name, (path, body) in loads.items():
            generator(server.url, path, body, min(1, seconds), connections)  # warm up
            results[name] = generator(server.url, path, body, seconds, connections)
    return results


def main(quick=False, seconds=None, connections=32):
    seconds = seconds or (2 if quick else 5)
    generator, tool = (wrk_load, "wrk 4 (2 threads)") if shutil.which("wrk") else (python_load, "asyncio httpx client")
    print(f"\n## HTTP\n\n{machine()}; {load()}")
    by_workers = {workers: measure(workers, seconds, connections, generator) for workers in (1, 2)}
    rows = []
    for name in LOADS:
        one, two = by_workers[1][name], by_workers[2][name]
        rows.append(
            [
                name,
                f"{one[0]:,.0f}",
                f"{one[0] / by_workers[1][TRIVIAL][0]:.0%}",
                f"{one[1] * 1e3:.2f}",
                f"{one[2] * 1e3:.2f}",
                f"{two[0]:,.0f}",
                f"{two[0] / one[0]:.2f}x",
                f"{two[1] * 1e3:.2f}",
                f"{two[2] * 1e3:.2f}",
                one[3] + two[3],
            ]
        )
    what_if = measure(
        1,
        seconds,
        connections,
        generator,
        {SMALL_PROGRAM: LOADS[SMALL_PROGRAM]},
        "create_bench_app_with_async_dependencies",
    )[SMALL_PROGRAM]
    rows.append(
        [
            f"what-if: {SMALL_PROGRAM}, dependencies async",
            f"{what_if[0]:,.0f}",
            f"{what_if[0] / by_workers[1][TRIVIAL][0]:.0%}",
            f"{what_if[1] * 1e3:.2f}",
            f"{what_if[2] * 1e3:.2f}",
            "-",
            "-",
            "-",
            "-",
            what_if[3],
        ]
    )
    share = by_workers[1][SMALL_PROGRAM][0] / by_workers[1][TRIVIAL][0]
    print_table(
        f"HTTP on uvicorn, {connections} connections, {seconds} s per load, load generator: {tool}",
        [
            "load",
            "1 worker req/s",
            "of trivial",
            "p50 ms",
            "p99 ms",
            "2 workers req/s",
            "scaling",
            "p50 ms",
            "p99 ms",
            "errors",
        ],
        rows,
        [
            f"Target: the small program's throughput >= 50% of the trivial endpoint's, one worker: {share:.0%}, "
            f"{verdict(share >= 0.5)}.",
            "what-if (benchmark only, a separate server from benchmarks/apps.py): get_settings and get_service "
            "as async def, so FastAPI does not run each in the thread pool.",
            "Requests send Accept-Encoding: gzip, as browsers do. The server, its workers and the load generator "
            f"share the machine's {len(os.sched_getaffinity(0))} cores, so two workers cannot reach 2x here. {load()} "
            "after the loads.",
        ],
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 s loads: a smoke test, not figures")
    parser.add_argument("--seconds", type=int, help="seconds per load (default 5)")
    parser.add_argument("--connections", type=int, default=32)
    arguments = parser.parse_args()
    main(arguments.quick, arguments.seconds, arguments.connections)
