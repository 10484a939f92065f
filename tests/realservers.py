"""Real processes for the Teach live and job tests and benchmarks: Debian's redis-server, uvicorn
serving the app, each on a free port of 127.0.0.1, and `valuegraph worker`; stopped at the end."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import httpx

ROOT = Path(__file__).resolve().parent.parent
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(process: subprocess.Popen, seconds: float = 10) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `seconds`: no process outlives its test (one left
    running holds the run's output open, and its port)."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait(check, what: str, process: subprocess.Popen, seconds: float = 20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        try:
            if check():
                return
        except (OSError, httpx.HTTPError):
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not start within {seconds} s")


class RedisServer:
    """Debian's redis-server on a fixed port of 127.0.0.1, which a test may kill (-9) and start
    again on the same port; `persistent`: with its append-only file (AOF), fsync every write."""

    def __init__(self, directory: str, persistent: bool = False, port: int | None = None):
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.directory, self.persistent = directory, persistent
        self.process = None

    def start(self):
        persistence = ["--appendonly", "yes", "--appendfsync", "always"] if self.persistent else ["--appendonly", "no"]
        self.process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", *persistence]
            + ["--dir", self.directory],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait(
                lambda: socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close() is None,
                "redis-server",
                self.process,
            )
        except RuntimeError:
            stop(self.process)
            raise

    def kill(self):
        self.process.kill()  # SIGKILL: what a crash or an OOM kill does
        self.process.wait(10)

    def stop(self):
        if self.process is not None:
            stop(self.process)


@contextmanager
def redis_process(persistent: bool = False):
    """A throwaway RedisServer, started; stopped at the end."""
    with tempfile.TemporaryDirectory() as directory:
        server = RedisServer(directory, persistent)
        server.start()
        try:
            yield server
        finally:
            server.stop()


@contextmanager
def redis_server():
    """A throwaway redis-server (no persistence); yields its URL."""
    with redis_process() as server:
        yield server.url


class Server:
    def __init__(self, process: subprocess.Popen, port: int, log_path: str | None = None):
        self.process, self.port = process, port
        self.url = f"http://127.0.0.1:{port}"
        self.ws_url = f"ws://127.0.0.1:{port}/rooms/ws"
        self.log_path = log_path

    def log(self) -> str:
        """What the server wrote to stdout and stderr so far."""
        return Path(self.log_path).read_text(errors="replace") if self.log_path else ""

    def kill(self):
        self.process.kill()  # SIGKILL: no goodbye to anyone
        self.process.wait(10)


@contextmanager
def app_server(port: int | None = None, deflate: bool = False, **settings):
    """`uvicorn app.main:app` in its own process with VALUEGRAPH_* settings (on `port`, or a
    free one), WebSocket compression off as `valuegraph` serves (`deflate`: uvicorn's default,
    on); yields a Server."""
    port = port or free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.update({f"VALUEGRAPH_{name.upper()}": str(value) for name, value in settings.items()})
    log = tempfile.NamedTemporaryFile("wb", prefix="valuegraph-server-", suffix=".log", delete=False)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "app.main:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--ws",
            "websockets-sansio",
            "--ws-per-message-deflate",
            str(deflate).lower(),
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    server = Server(process, port, log.name)
    try:
        _wait(lambda: httpx.get(f"{server.url}/healthz", timeout=0.5).status_code == 200, "uvicorn", process)
        yield server
    finally:
        stop(process)
        sys.stderr.write(server.log())  # shown by pytest when a test fails
        os.unlink(log.name)


@contextmanager
def valuegraph_server(**settings):
    """`valuegraph serve --port 0` (python -m app.cli, what the console script runs) with
    VALUEGRAPH_* settings; yields a Server once it answers /healthz."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    env.update({f"VALUEGRAPH_{name.upper()}": str(value) for name, value in settings.items()})
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = Server(process, port)
    try:
        _wait(lambda: httpx.get(f"{server.url}/healthz", timeout=0.5).status_code == 200, "valuegraph", process)
        yield server
    finally:
        stop(process)


def run_queue_seconds(pid: int) -> float:
    """Seconds the threads of process `pid` have spent ready to run but waiting for a CPU (the
    kernel's schedstat), 0.0 where the kernel does not say: the time a loaded machine withheld."""
    total = 0
    for path in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            total += int(path.read_text().split()[1])
        except (OSError, IndexError, ValueError):
            pass  # a thread that ended meanwhile
    return total / 1e9


class OverBudget(NamedTuple):
    """One request answered past the time budget: its answer, how long the server says it took
    (Server-Timing, from receiving it), and the CPU the machine withheld from the server after
    the budget ran out (see timed_past_budget)."""

    response: httpx.Response
    server_seconds: float | None
    withheld_seconds: float


def timed_past_budget(server: Server, budget: float, method: str, path: str, **request) -> OverBudget:
    """The request, with the server's own time for it and the run-queue wait of the server's threads
    from the moment its budget can have run out (the request's send plus the budget: the server
    received it no earlier) until the answer. The wait is sampled every few milliseconds in a thread
    and read from the last sample no later than that moment, so a client that falls behind under
    load makes the figure larger, never smaller."""
    samples, done = [], threading.Event()

    def sample():
        while not done.is_set():
            samples.append((time.monotonic(), run_queue_seconds(server.process.pid)))
            done.wait(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sent = time.monotonic()
    samples.append((sent, run_queue_seconds(server.process.pid)))
    sampler.start()
    try:
        response = httpx.request(method, server.url + path, timeout=120, **request)
    finally:
        done.set()
        sampler.join()
    ended = run_queue_seconds(server.process.pid)
    waited_before = max(wait for at, wait in samples if at <= sent + budget)
    timing = response.headers.get("server-timing", "")
    server_seconds = float(timing.split("dur=")[1].split(";")[0]) / 1000 if "dur=" in timing else None
    return OverBudget(response, server_seconds, ended - waited_before)


class JobWorker:
    def __init__(self, process: subprocess.Popen, log_path: str):
        self.process, self.log_path = process, log_path

    def log(self) -> str:
        return Path(self.log_path).read_text(errors="replace")

    def kill(self):
        self.process.kill()  # SIGKILL: mid-job, no goodbye
        self.process.wait(10)


@contextmanager
def job_worker(redis_url: str, **settings):
    """`valuegraph worker` (python -m app.cli worker) on `redis_url` with VALUEGRAPH_* settings;
    yields a JobWorker once it says it is taking jobs; killed at the end."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "VALUEGRAPH_REDIS_URL": redis_url}
    env.update({f"VALUEGRAPH_{name.upper()}": str(value) for name, value in settings.items()})
    log = tempfile.NamedTemporaryFile("wb", prefix="valuegraph-worker-", suffix=".log", delete=False)
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "worker"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    log.close()
    worker = JobWorker(process, log.name)
    try:
        _wait(lambda: "taking jobs" in worker.log(), "valuegraph worker", process)
        yield worker
    finally:
        if process.poll() is None:
            worker.kill()
        sys.stderr.write(worker.log())  # shown by pytest when a test fails
        os.unlink(log.name)


# ---- Teach live clients (websockets), for the cross-process tests and the benchmark ----

import asyncio  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402

import websockets  # noqa: E402

BACKOFF_FIRST, BACKOFF_MAX = 0.25, 5.0  # as static/js/classroom.js


def chain_program(length: int) -> str:
    """A program whose walk is long enough for a lesson of many steps."""
    return "x0 = 1.01\n" + "\n".join(f"x{k} = x{k - 1} * x{k - 1}" for k in range(1, length + 1))


class Student:
    """Joins a room and records every state it is shown; when its connection drops it
    reconnects with backoff to the next server in `urls` and resumes from the welcome."""

    def __init__(self, urls: list[str], code: str):
        self.urls, self.code = urls, code
        self.steps: list[int] = []  # every step shown, welcome included
        self.times: dict[int, float] = {}  # step -> when it arrived (loop clock)
        self.welcomes: list[tuple[str, int]] = []  # (url, step) at each (re)join
        self.closes: list[tuple[int, str]] = []
        self.joined = asyncio.Event()
        self._task = None

    def start(self):
        self._task = asyncio.create_task(self._run())

    async def stop(self):
        self._task.cancel()
        try:
            await self._task
        except (asyncio.CancelledError, Exception):
            pass

    async def _run(self):
        attempt, which = 0, 0
        while True:
            url = self.urls[which % len(self.urls)]
            try:
                async with websockets.connect(url, open_timeout=5, max_queue=None) as ws:
                    await ws.send(json.dumps({"type": "join", "code": self.code}))
                    async for raw in ws:
                        message = json.loads(raw)
                        if message["type"] in ("welcome", "state"):
                            step = message["state"]["step"]
                            self.steps.append(step)
                            self.times.setdefault(step, asyncio.get_running_loop().time())
                            if message["type"] == "welcome":
                                self.welcomes.append((url, step))
                                self.joined.set()
                                attempt = 0
            except websockets.ConnectionClosed as closed:
                self.closes.append(
                    (closed.rcvd.code if closed.rcvd else 1006, closed.rcvd.reason if closed.rcvd else "")
                )
            except OSError:
                pass
            which += 1  # try the next server
            delay = min(BACKOFF_MAX, BACKOFF_FIRST * 2**attempt) * random.uniform(0.5, 1.0)
            attempt += 1
            await asyncio.sleep(delay)


class Teacher:
    def __init__(self, url: str, code: str, token: str, program: str):
        self.url, self.code, self.token, self.program = url, code, token, program
        self.sent: dict[int, float] = {}
        self.followers = 0
        self.errors: list[str] = []
        self._ws = None
        self._reader = None

    async def connect(self):
        self._ws = await websockets.connect(self.url, open_timeout=5, max_queue=None)
        await self._ws.send(json.dumps({"type": "join", "code": self.code, "token": self.token}))
        welcome = json.loads(await self._ws.recv())
        assert welcome["role"] == "teacher", welcome
        self.followers = welcome["followers"]
        self._reader = asyncio.create_task(self._read())

    async def _read(self):
        async for raw in self._ws:
            message = json.loads(raw)
            if message["type"] == "followers":
                self.followers = message["count"]
            elif message["type"] == "error":
                self.errors.append(message["message"])

    async def step(self, step: int):
        self.sent[step] = asyncio.get_running_loop().time()
        await self._ws.send(json.dumps({"type": "state", "state": {"expression": self.program, "step": step}}))

    async def close(self):
        await self._ws.close()
        self._reader.cancel()


async def wait_until(condition, seconds: float, what: str):
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {seconds} s waiting for {what}")
        await asyncio.sleep(0.02)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]
