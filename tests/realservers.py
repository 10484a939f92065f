"""Real processes for the Teach live tests and benchmark: Debian's redis-server and uvicorn
serving the app, each on a free port of 127.0.0.1, stopped at the end."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(check, what: str, process: subprocess.Popen, seconds: float = 20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not start within {seconds} s")


@contextmanager
def redis_server():
    """A throwaway redis-server (no persistence); yields its URL."""
    port = free_port()
    with tempfile.TemporaryDirectory() as directory:
        process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", directory],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait(lambda: socket.create_connection(("127.0.0.1", port), timeout=0.2).close() is None, "redis-server", process)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            process.terminate()
            process.wait(10)


class Server:
    def __init__(self, process: subprocess.Popen, port: int):
        self.process, self.port = process, port
        self.url = f"http://127.0.0.1:{port}"
        self.ws_url = f"ws://127.0.0.1:{port}/rooms/ws"

    def kill(self):
        self.process.kill()  # SIGKILL: no goodbye to anyone
        self.process.wait(10)


@contextmanager
def app_server(**settings):
    """`uvicorn app.main:app` in its own process with VALUEGRAPH_* settings; yields a Server."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.update({f"VALUEGRAPH_{name.upper()}": str(value) for name, value in settings.items()})
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", "--ws", "websockets"],
        cwd=ROOT,
        env=env,
    )
    server = Server(process, port)
    try:
        _wait(lambda: httpx.get(f"{server.url}/healthz", timeout=0.5).status_code == 200, "uvicorn", process)
        yield server
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
