"""Jobs in a local process pool, with nothing installed: each job (and each graph re-run) is a
process forked from multiprocessing's forkserver, never a thread of the web server. One
supervising thread per app (it only starts processes and reads their pipes) starts queued jobs as
worker slots free up, takes in their reports, and ends a job past its wall-clock limit; cancelling
kills the job's process at once. A thread, not an event-loop task: it outlives any one loop, as
test clients make them, and no loop is blocked while the forkserver starts."""

import itertools
import json
import math
import multiprocessing
import secrets
import signal
import threading
import time
from dataclasses import dataclass, field

import anyio

from engine import format_number

from .. import schemas
from ..config import Settings
from . import worker

SUPERVISE_SECONDS = 0.05  # how often the supervisor reads reports and checks limits
PROGRESS_EVERY = 0.5  # seconds between two `progress` events of a job's stream
FINISHED = ("done", "failed", "cancelled")

_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(["app.jobs.worker"])


class JobLimitReached(Exception):
    """Too many jobs at once, for this client or in all (429); the message says which setting."""


@dataclass
class Job:
    id: str
    client: str
    request: schemas.BackwardRequest
    status: str = "queued"
    statements: int = 0
    runs: list = field(default_factory=list)  # [(line, data)] per backward() call so far
    text: str = ""  # printed so far
    error: dict | None = None
    started: float | None = None  # time.monotonic() of its start and end
    ended: float | None = None
    process: multiprocessing.Process | None = None
    connection: object = None

    def status_json(self) -> dict:
        now = time.monotonic()
        elapsed = 0.0 if self.started is None else (self.ended or now) - self.started
        printed = _lines(self.text)
        return {
            "id": self.id,
            "status": self.status,
            "progress": {
                "statements": max(0, self.statements),
                "backward_calls": len(self.runs),
                "elapsed_seconds": round(elapsed, 3),
            },
            "runs": [
                {"line": line, "data": data if math.isfinite(data) else format_number(data)} for line, data in self.runs
            ],
            "printed": printed,
            "error": self.error,
        }


def _lines(text: str) -> list[str]:
    """Printed text as lines, as /backward's `printed` gives them (a last line without its newline included)."""
    lines = text.split("\n") if text else []
    return lines[:-1] if text.endswith("\n") else lines


def _event(name: str, data: dict) -> str:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def _limit_error(message: str, setting: str) -> dict:
    return worker.failure(message, setting)


class LocalJobs:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.jobs: dict[str, Job] = {}  # by id, in the order they were made
        self.graph_runs = 0  # graph re-runs running now (each a process of its own)
        self.lock = threading.Lock()  # the routes (on the event loop) and the supervisor share self.jobs
        self._supervisor: threading.Thread | None = None

    # ---- what the routes call ----

    def submit(self, request: schemas.BackwardRequest, client: str) -> Job:
        with self.lock:
            job = self._queue(request, client)
        self._supervise()
        return job

    def _queue(self, request: schemas.BackwardRequest, client: str) -> Job:
        self._expire()
        unfinished = [job for job in self.jobs.values() if job.status not in FINISHED]
        if len(unfinished) >= self.settings.job_max_jobs:
            raise JobLimitReached(
                f"{self.settings.job_max_jobs} jobs are queued or running, the most at once "
                "(VALUEGRAPH_JOB_MAX_JOBS); try again when one has finished"
            )
        if sum(job.client == client for job in unfinished) >= self.settings.job_max_per_client:
            raise JobLimitReached(
                f"you have {self.settings.job_max_per_client} jobs queued or running, the most one client may "
                "(VALUEGRAPH_JOB_MAX_PER_CLIENT); wait for one to finish or cancel it"
            )
        job = Job(secrets.token_urlsafe(12), client, request)
        self.jobs[job.id] = job
        return job

    def status(self, job_id: str) -> dict | None:
        """The job's status as GET /runs/{id} answers it, or None (no such job, or expired)."""
        with self.lock:
            self._expire()
            job = self.jobs.get(job_id)
            return None if job is None else job.status_json()

    def cancel(self, job_id: str) -> dict | None:
        """Ends a queued or running job now (its process is killed: no cooperation needed); its status after."""
        with self.lock:
            self._expire()
            job = self.jobs.get(job_id)
            if job is None:
                return None
            if job.status not in FINISHED:
                if job.process is not None and job.process.pid is not None:  # while starting: _start kills it
                    job.process.kill()
                self._finish(job, "cancelled")
            return job.status_json()

    async def graph(self, job_id: str, run: int) -> tuple[str, object] | None:
        """("graph", the bytes /backward answers for the job's program with run=k) or ("error", body);
        None for no such job."""
        with self.lock:
            self._expire()
            job = self.jobs.get(job_id)
            if job is None:
                return None
            if self.graph_runs >= self.settings.job_workers:
                raise JobLimitReached(
                    f"{self.settings.job_workers} graphs are being made, the most at once (VALUEGRAPH_JOB_WORKERS); "
                    "try again in a moment"
                )
            self.graph_runs += 1
        try:
            request = job.request.model_copy(update={"run": run})
            return await self._graph_process(request)
        finally:
            with self.lock:
                self.graph_runs -= 1

    async def events(self, job_id: str):
        """The job as server-sent events, from its start (a client joining late gets what it missed):
        `loss` per backward() call ({"run", "line", "data"}), `printed` per printed line ({"line"}),
        `progress` at most every PROGRESS_EVERY seconds while it changes, and `end` with the job's
        whole status; then the stream closes. None for no such job."""
        with self.lock:
            if self.jobs.get(job_id) is None:
                return None
        return self._events(job_id)

    async def _events(self, job_id: str):
        runs_sent, characters_sent, progress_sent, progress_at = 0, 0, None, 0.0
        while True:
            with self.lock:
                job = self.jobs.get(job_id)
                if job is None:  # expired while a client was still listening
                    return
                status = job.status_json()
                runs, text, ended = status["runs"][runs_sent:], job.text[characters_sent:], job.status in FINISHED
            for run, point in enumerate(runs, runs_sent):
                yield _event("loss", {"run": run, **point})
            runs_sent += len(runs)
            # Whole lines only while the program may still add to the last one; at the end, the rest.
            complete = text if ended else text[: text.rfind("\n") + 1]
            for line in _lines(complete):
                yield _event("printed", {"line": line})
            characters_sent += len(complete)
            if ended:
                yield _event("end", status)
                return
            if status["progress"] != progress_sent and time.monotonic() - progress_at >= PROGRESS_EVERY:
                progress_sent, progress_at = status["progress"], time.monotonic()
                yield _event("progress", {"status": status["status"], **status["progress"]})
            await anyio.sleep(SUPERVISE_SECONDS * 2)

    def close(self) -> None:
        """Cancels every unfinished job (the server is stopping); the supervisor then stops by itself."""
        for job_id in list(self.jobs):
            self.cancel(job_id)

    # ---- the pool ----

    def _args(self, connection, request):
        s = self.settings
        return (connection, request, s.job_limits, s.job_cpu_seconds, s.job_memory_bytes)

    async def _graph_process(self, request):
        receiving, sending = _context.Pipe(duplex=False)
        process = _context.Process(target=worker.run_graph, args=self._args(sending, request), daemon=True)
        await anyio.to_thread.run_sync(process.start)
        sending.close()
        started = time.monotonic()
        try:
            while True:
                if receiving.poll():
                    try:
                        return receiving.recv()
                    except EOFError:
                        return "error", self._ended_by_signal(process, started)
                if time.monotonic() - started > self.settings.job_wall_seconds:
                    return "error", self._wall_error()
                await anyio.sleep(SUPERVISE_SECONDS)
        finally:
            process.kill()
            await anyio.to_thread.run_sync(process.join)
            receiving.close()

    def _supervise(self) -> None:
        with self.lock:
            if self._supervisor is None or not self._supervisor.is_alive():
                self._supervisor = threading.Thread(target=self._supervise_while_busy, name="jobs", daemon=True)
                self._supervisor.start()

    def _supervise_while_busy(self) -> None:
        while True:
            with self.lock:
                if all(job.status in FINISHED for job in self.jobs.values()):
                    self._supervisor = None  # the next submit starts another
                    return
                running = [job for job in self.jobs.values() if job.status == "running"]
                starting = list(
                    itertools.islice(
                        (job for job in self.jobs.values() if job.status == "queued"),
                        max(0, self.settings.job_workers - len(running)),
                    )
                )
                for job in starting:
                    job.status, job.started = "running", time.monotonic()
                for job in running:
                    self._read(job)
            for job in starting:  # outside the lock: the forkserver's first start takes a second or two
                self._start(job)
            multiprocessing.active_children()  # reaps the processes of finished and cancelled jobs
            time.sleep(SUPERVISE_SECONDS)

    def _start(self, job: Job) -> None:
        receiving, sending = _context.Pipe(duplex=False)
        process = _context.Process(target=worker.run_job, args=self._args(sending, job.request), daemon=True)
        process.start()
        sending.close()
        with self.lock:
            if job.status == "cancelled":  # cancelled while its process was starting
                process.kill()
                receiving.close()
            else:
                job.started, job.process, job.connection = time.monotonic(), process, receiving

    def _read(self, job: Job) -> None:
        """Takes in the job's reports; ends it when its process ends or runs past the wall limit."""
        if job.connection is None:  # its process is starting
            return
        try:
            while job.status == "running" and job.connection.poll():
                kind, report = job.connection.recv()
                if kind == "progress":
                    job.statements = report["statements"]
                    job.runs.extend(report["runs"])
                    job.text += report["text"]
                else:
                    job.error = report["error"]
                    self._finish(job, report["status"])
        except (EOFError, OSError):  # the process ended without its last report: killed
            job.error = self._ended_by_signal(job.process, job.started)
            self._finish(job, "failed")
            return
        if job.status == "running" and time.monotonic() - job.started > self.settings.job_wall_seconds:
            job.process.kill()
            job.error = self._wall_error()
            self._finish(job, "failed")

    def _wall_error(self) -> dict:
        seconds = self.settings.job_wall_seconds
        return _limit_error(
            f"the job ran longer than {seconds:g} seconds, its wall-clock limit (VALUEGRAPH_JOB_WALL_SECONDS)",
            "VALUEGRAPH_JOB_WALL_SECONDS",
        )

    def _ended_by_signal(self, process, started) -> dict:
        process.join(1)
        if process.exitcode == -signal.SIGXCPU or process.exitcode == -signal.SIGKILL:
            seconds = self.settings.job_cpu_seconds
            if process.exitcode == -signal.SIGXCPU or time.monotonic() - started >= seconds:
                return _limit_error(
                    f"the job used more than {seconds:,} seconds of CPU time, its limit (VALUEGRAPH_JOB_CPU_SECONDS)",
                    "VALUEGRAPH_JOB_CPU_SECONDS",
                )
        return _limit_error(
            f"the job's worker process ended unexpectedly (exit code {process.exitcode}); try again", None
        )

    def _finish(self, job: Job, status: str) -> None:
        job.status, job.ended = status, time.monotonic()
        if job.connection is not None:
            job.connection.close()
        job.process = job.connection = None  # a finished job keeps only its record

    def _expire(self) -> None:
        now, keep = time.monotonic(), self.settings.job_expire_seconds
        for job_id in [job.id for job in self.jobs.values() if job.ended is not None and now - job.ended > keep]:
            del self.jobs[job_id]
