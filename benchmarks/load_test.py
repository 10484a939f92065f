"""Load test: the real server under sustained concurrent requests of mixed sizes, every answer
checked, and the server's memory watched; then the cost of the biggest requests the limits allow.

    python -m benchmarks.load_test                  # 20 s of load, 2 workers, 8 clients
    python -m benchmarks.load_test --seconds 60 --clients 16
    python -m benchmarks.load_test --worst-case     # the biggest requests, one at a time

The server is `uvicorn app.main:app --workers N` on 127.0.0.1 and a free port. The clients are
asyncio tasks sharing one httpx.AsyncClient, each sending its next request as soon as the last
is answered (a closed loop), for a fixed time.

Every answer is checked, not just its status: the data and grad of every node must be exactly
what the engine computes in this process for the same program (and, for the programs with a
closed form, what the formula gives); a program error must be the 400 with the right place.
Memory is the resident set (VmRSS, from /proc) of each worker process, sampled twice a second;
it is stable when the median of the last fifth of the run is within 25 MB of the median of the
first fifth (after a warm-up). The command exits non-zero on any wrong answer, error or growth.
"""

import argparse
import asyncio
import math
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # so that the engine is importable however this is started

from engine import Limits, evaluate, format_number, parse, trace  # noqa: E402

MB = 1024 * 1024
GROWTH_ALLOWED_MB = 25
CHAPTER_2 = "a = 2; b = 3; c = a * b; L = c + a"


# What is sent, and what must come back


@dataclass
class Case:
    kind: str
    body: dict
    expected: dict  # {"data": [...], "grad": [...]} per node, or {"error": (line, column, offset)}
    formula: tuple = ()  # (label, value): a gradient known in closed form


def wire(x):
    """A float as the API writes it: non-finite numbers are strings."""
    return x if math.isfinite(x) else format_number(x)


def engine_answer(body):
    program = parse(body["expression"], Limits())
    steps = trace(evaluate(program, body.get("variables", {})), Limits(), body.get("variant", "correct"))
    return {"data": [wire(n.data) for n in steps.nodes], "grad": [wire(n.grad) for n in steps.nodes]}


def make_cases(seed=1):
    """A pool of requests in the proportions of a class at work: mostly small programs."""
    rng = random.Random(seed)
    cases = [Case("chapter 2", {"expression": CHAPTER_2, "layout": True}, {}, ("a", 4.0))]
    for _ in range(10):
        x, w1, w2, b = (round(rng.uniform(-2, 2), 3) for _ in range(4))
        neuron = "n = tanh(w1 * x + w2 * x * x + b)\nL = n ** 2 + relu(n) - log(exp(n) + 1)"
        variables = {"x": x, "w1": w1, "w2": w2, "b": b}
        cases.append(
            Case("neuron, checked", {"expression": neuron, "variables": variables, "check": True, "layout": True}, {})
        )
    for _ in range(6):
        weights = [round(rng.uniform(-1, 1), 4) for _ in range(40)]
        hidden = " + ".join(f"tanh({w} * x + {i / 10})" for i, w in enumerate(weights))
        cases.append(
            Case(
                "40 tanh units (~200 nodes)",
                {"expression": f"x = {rng.uniform(-1, 1):.3f}\nL = {hidden}", "layout": True},
                {},
            )
        )
    for _ in range(3):
        scales = [round(rng.uniform(0.5, 2), 3) for _ in range(1000)]
        program = "x = 1.5\nL = " + " + ".join(f"x * {s}" for s in scales)
        cases.append(Case("1,000-term sum (~3,000 nodes)", {"expression": program}, {}, ("x", math.fsum(scales))))
    reuse = "a = 1\n" + "\n".join(f"b{i + 1} = b{i} + b{i}" if i else "b1 = a + a" for i in range(8))
    cases.append(Case("broken walk (no-visited-check)", {"expression": reuse, "variant": "no-visited-check"}, {}))
    cases.append(Case("program error", {"expression": "a = 2\r\nb = a $ 3"}, {"error": (2, 7, 13)}))
    for case in cases:
        if not case.expected:
            case.expected = engine_answer(case.body)
    weights = {
        "chapter 2": 30,
        "neuron, checked": 30,
        "40 tanh units (~200 nodes)": 24,
        "1,000-term sum (~3,000 nodes)": 9,
        "broken walk (no-visited-check)": 4,
        "program error": 3,
    }
    return cases, [weights[case.kind] / sum(1 for c in cases if c.kind == case.kind) for case in cases]


def wrong_answer(case, response):
    """None when the answer is right, else what is wrong with it."""
    if "error" in case.expected:
        if response.status_code != 400:
            return f"status {response.status_code}, expected 400"
        detail = response.json()["detail"]
        place = (detail["line"], detail["column"], detail["offset"])
        return None if place == case.expected["error"] else f"error at {place}, expected {case.expected['error']}"
    if response.status_code != 200:
        return f"status {response.status_code}: {response.text[:200]}"
    nodes = response.json()["nodes"]
    for key in ("data", "grad"):
        if [n[key] for n in nodes] != case.expected[key]:
            return f"{key} differs from the engine's"
    if case.formula:
        label, value = case.formula
        (leaf,) = [n for n in nodes if n["label"] == label]
        if not math.isclose(leaf["grad"], value, rel_tol=1e-12):
            return f"{label}.grad is {leaf['grad']}, the formula gives {value}"
    for n in nodes:
        if "numeric_grad" in n and not math.isclose(n["numeric_grad"], n["grad"], rel_tol=1e-2, abs_tol=1e-3):
            return f"the nudge test disagrees at node {n['id']}"
    return None


# The server


class Server:
    """uvicorn serving app.main:app on 127.0.0.1 and a free port. (Not `--fd` with a socket bound
    here: uvicorn wraps it as a Unix socket, so asyncio leaves TCP_NODELAY off and every answer
    waits 40 ms for a delayed ACK.)"""

    def __init__(self, workers, environment=None):
        self.workers = workers
        self.environment = {**os.environ, **(environment or {}), "PYTHONPATH": str(REPO)}

    def __enter__(self):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        command = [
            sys.executable,
            "-m",
            "uvicorn",
            "app.main:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(self.workers),
            "--log-level",
            "warning",
            "--no-access-log",
        ]
        self.process = subprocess.Popen(command, cwd=REPO, env=self.environment)
        deadline = time.monotonic() + 60
        while len(self.worker_pids()) < self.workers or not self._healthy():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.1)
        return self

    def _healthy(self):
        try:
            return httpx.get(self.url + "/healthz", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    def worker_pids(self):
        """The processes that serve requests: uvicorn itself with one worker, else its spawned children."""
        if self.workers == 1:
            return [self.process.pid]
        children = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                    cmdline = (entry / "cmdline").read_bytes()
                except OSError:
                    continue
                parent = int(stat.rsplit(")", 1)[1].split()[1])
                if parent == self.process.pid and b"spawn_main" in cmdline:
                    children.append(int(entry.name))
        return sorted(children)

    def __exit__(self, *_):
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def rss_mb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


class MemorySampler:
    """RSS of the given processes every `interval` seconds, in a thread, while the block runs."""

    def __init__(self, pids, interval):
        self.pids, self.interval = pids, interval
        self.samples = {pid: [] for pid in pids}  # pid -> [(time, MB)]
        self._stop = threading.Event()

    def __enter__(self):
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            now = time.monotonic()
            for pid in self.pids:
                self.samples[pid].append((now, rss_mb(pid)))
            self._stop.wait(self.interval)

    def __exit__(self, *_):
        self._stop.set()
        self._thread.join()

    def peak(self):
        return {pid: max(mb for _, mb in samples) for pid, samples in self.samples.items()}


# The load


@dataclass
class Results:
    latencies: dict = field(default_factory=dict)  # kind -> [seconds]
    wrong: list = field(default_factory=list)
    errors: list = field(default_factory=list)


async def load(url, cases, weights, seconds, clients, seed=2):
    results = Results()
    rng = random.Random(seed)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(
        base_url=url, limits=limits, timeout=60, headers={"accept-encoding": "gzip"}
    ) as client:
        deadline = time.monotonic() + seconds

        async def one_client():
            while time.monotonic() < deadline:
                case = rng.choices(cases, weights)[0]
                started = time.perf_counter()
                try:
                    response = await client.post("/backward", json=case.body)
                except httpx.HTTPError as error:
                    results.errors.append(f"{case.kind}: {error!r}")
                    continue
                results.latencies.setdefault(case.kind, []).append(time.perf_counter() - started)
                problem = wrong_answer(case, response)
                if problem:
                    results.wrong.append(f"{case.kind}: {problem}")

        await asyncio.gather(*(one_client() for _ in range(clients)))
    return results


def percentile(samples, fraction):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


def table(headers, rows):
    print("| " + " | ".join(headers) + " |")
    print("|" + "|".join("---" for _ in headers) + "|")
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")


def machine():
    one, five, _ = os.getloadavg()
    return f"{os.cpu_count()} cores, load average {one:.1f} (1 min) / {five:.1f} (5 min) before the run"


def run_load(seconds, clients, workers, warmup):
    cases, weights = make_cases()
    print(f"## Load test: {seconds:g} s, {clients} clients, uvicorn --workers {workers}; {machine()}\n")
    with Server(workers) as server:
        pids = server.worker_pids()
        asyncio.run(load(server.url, cases, weights, warmup, clients))  # warm-up, not counted
        with MemorySampler(pids, 0.5) as memory:
            started, client_cpu = time.perf_counter(), time.process_time()
            results = asyncio.run(load(server.url, cases, weights, seconds, clients))
            elapsed, client_cpu = time.perf_counter() - started, time.process_time() - client_cpu
    every = [s for samples in results.latencies.values() for s in samples]
    count = len(every)
    rows = [
        [kind, len(s), f"{percentile(s, 0.5) * 1e3:.1f}", f"{percentile(s, 0.99) * 1e3:.1f}"]
        for kind, s in sorted(results.latencies.items(), key=lambda item: -len(item[1]))
    ]
    rows.append(["**all**", count, f"{percentile(every, 0.5) * 1e3:.1f}", f"{percentile(every, 0.99) * 1e3:.1f}"])
    table(["request", "count", "p50 ms", "p99 ms"], rows)
    print(
        f"\n{count:,} requests in {elapsed:.1f} s: **{count / elapsed:,.0f} requests/s**; "
        f"wrong answers: {len(results.wrong)}; errors: {len(results.errors)}. "
        f"The client (checking every answer) used {client_cpu / elapsed:.0%} of a core on the same machine.\n"
    )

    stable = True
    memory_rows = []
    for pid, samples in memory.samples.items():
        fifth = max(1, len(samples) // 5)
        first = statistics.median(mb for _, mb in samples[:fifth])
        last = statistics.median(mb for _, mb in samples[-fifth:])
        peak = max(mb for _, mb in samples)
        stable &= last - first <= GROWTH_ALLOWED_MB
        memory_rows.append([pid, f"{first:.0f}", f"{last:.0f}", f"{last - first:+.1f}", f"{peak:.0f}"])
    table(["worker pid", "RSS first fifth MB", "RSS last fifth MB", "growth MB", "peak MB"], memory_rows)
    print(f"\nmemory {'stable' if stable else 'GREW'} (allowed growth {GROWTH_ALLOWED_MB} MB per worker)")
    for line in (results.wrong + results.errors)[:10]:
        print("  ", line)
    return not results.wrong and not results.errors and stable


# The biggest requests


def worst_cases():
    chain = "a = 1\n" + "+".join(["a"] * 49_995)  # 99,995 characters: the source limit, 49,996 nodes
    leaves = "".join(f"x{i} = 0.5\n" for i in range(700)) + "L = " + " + ".join(f"x{i}" for i in range(700))
    reuse = "a = 1\n" + "\n".join(f"b{i + 1} = b{i} + b{i}" if i else "b1 = a + a" for i in range(15))
    return [
        ("50,000-node chain, trace", {"expression": chain}),
        ("50,000-node chain, trace + nudge test + layout", {"expression": chain, "check": True, "layout": True}),
        ("100,000 nodes built, then refused (node limit)", {"expression": "a = 1\na" + "+1" * 49_995}),
        ("nudge test at its limit (700 leaves x 1,399 nodes)", {"expression": leaves, "check": True}),
        ("broken walk at 131,069 steps (no-visited-check)", {"expression": reuse, "variant": "no-visited-check"}),
        ("1 MB body of spaces and one number", {"expression": " " * 999_900 + "1"}),
    ]


def measure_one(server, body):
    """(status, seconds, bytes sent, gzip bytes, idle RSS, peak RSS above it, RSS a moment after) of one request."""
    (pid,) = server.worker_pids()
    idle = rss_mb(pid)
    with MemorySampler([pid], 0.01) as memory:
        started = time.perf_counter()
        response = httpx.post(server.url + "/backward", json=body, timeout=600, headers={"accept-encoding": "identity"})
        elapsed = time.perf_counter() - started
        time.sleep(0.3)  # a stopped request's thread unwinds; its memory is freed
    content = response.content
    return (
        response.status_code,
        elapsed,
        len(content),
        len(zlib.compress(content, 5)),
        idle,
        memory.peak()[pid] - idle,
        rss_mb(pid),
    )


def run_worst_case():
    print(f"## What one request can cost at most; {machine()}\n")
    print(
        "One worker process, one request at a time. Memory: the worker's RSS before, its peak while the request runs "
        "(above before), and 0.3 s after.\n"
    )
    ok = True
    for title, environment in [
        ("with the default limits and the 2 s time budget", {}),
        ("the same requests with the time budget lifted (600 s)", {"VALUEGRAPH_TIME_BUDGET": "600"}),
    ]:
        print(f"### {title}\n")
        rows = []
        with Server(1, environment) as server:
            for name, body in worst_cases():
                status, seconds, size, zipped, idle, peak, after = measure_one(server, body)
                ok &= status in (200, 400, 503) and server._healthy()
                rows.append(
                    [
                        name,
                        status,
                        f"{seconds:.2f}",
                        f"{size / MB:.1f}",
                        f"{zipped / MB:.2f}",
                        f"{idle:.0f}",
                        f"{peak:+.0f}",
                        f"{after:.0f}",
                    ]
                )
        table(
            [
                "request",
                "status",
                "seconds",
                "response MB",
                "gzip MB",
                "RSS before MB",
                "peak above it MB",
                "RSS after MB",
            ],
            rows,
        )
        print()
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--warmup", type=float, default=3)
    parser.add_argument("--worst-case", action="store_true", help="measure the biggest allowed requests instead")
    args = parser.parse_args()
    ok = run_worst_case() if args.worst_case else run_load(args.seconds, args.clients, args.workers, args.warmup)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
