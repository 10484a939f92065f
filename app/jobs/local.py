"""Jobs in a local process pool, with nothing installed: each job (and each graph re-run) is a
process forked from multiprocessing's forkserver (app.jobs.processes), never a thread of the web
server. One supervising thread per app (it only starts processes and reads their pipes) starts
queued jobs as worker slots free up, takes in their reports, and ends a job past its wall-clock
limit; cancelling kills the job's process at once. A thread, not an event-loop task: it outlives
any one loop, as test clients make them, and no loop is blocked while the forkserver starts."""

import itertools
import multiprocessing
import secrets
import threading
import time
from dataclasses import dataclass, field

from .. import schemas
from . import processes, worker
from .base import FINISHED, JobQueue, status_json, too_many_for_client, too_many_jobs


@dataclass
class Job:
    id: str
    client: str
    request: schemas.BackwardRequest
    status: str = "queued"
    statements: int = 0
    runs: list = field(default_factory=list)  # [(line, data)] per backward() call so far
    snapshots: dict = field(default_factory=dict)  # run -> bytes: the program's state before that run
    text: str = ""  # printed so far
    error: dict | None = None
    started: float | None = None  # time.monotonic() of its start and end
    ended: float | None = None
    process: multiprocessing.Process | None = None
    connection: object = None

    def status_json(self) -> dict:
        elapsed = 0.0 if self.started is None else (self.ended or time.monotonic()) - self.started
        return status_json(self.id, self.status, self.statements, self.runs, self.text, self.error, elapsed)


class LocalJobs(JobQueue):
    def __init__(self, settings):
        super().__init__(settings)
        self.jobs: dict[str, Job] = {}  # by id, in the order they were made
        self.lock = threading.Lock()  # the routes (on the event loop) and the supervisor share self.jobs
        self._supervisor: threading.Thread | None = None

    # ---- what the routes call ----

    async def submit(self, request: schemas.BackwardRequest, client: str) -> str:
        with self.lock:
            job = self._queue(request, client)
        self._supervise()
        return job.id

    def _queue(self, request: schemas.BackwardRequest, client: str) -> Job:
        self._expire()
        unfinished = [job for job in self.jobs.values() if job.status not in FINISHED]
        if len(unfinished) >= self.settings.job_max_jobs:
            raise too_many_jobs(self.settings)
        if sum(job.client == client for job in unfinished) >= self.settings.job_max_per_client:
            raise too_many_for_client(self.settings)
        job = Job(secrets.token_urlsafe(12), client, request)
        self.jobs[job.id] = job
        return job

    async def _snapshot(self, job_id: str) -> tuple[dict, str] | None:
        with self.lock:
            self._expire()
            job = self.jobs.get(job_id)
            return None if job is None else (job.status_json(), job.text)

    async def _request(self, job_id: str) -> schemas.BackwardRequest | None:
        with self.lock:
            self._expire()
            job = self.jobs.get(job_id)
            return None if job is None else job.request

    async def _done(self, job_id: str) -> tuple[list, str, list[int]] | None:
        with self.lock:
            job = self.jobs.get(job_id)
            if job is None or job.status != "done":
                return None
            return list(job.runs), job.text, list(job.snapshots)

    async def _snapshot_data(self, job_id: str, run: int) -> bytes | None:
        with self.lock:
            job = self.jobs.get(job_id)
            return None if job is None else job.snapshots.get(run)

    async def cancel(self, job_id: str) -> dict | None:
        return self._cancel(job_id)

    def _cancel(self, job_id: str) -> dict | None:
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

    async def close(self) -> None:
        """Cancels every unfinished job (the server is stopping); the supervisor then stops by itself."""
        for job_id in list(self.jobs):
            self._cancel(job_id)

    # ---- the pool ----

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
            time.sleep(processes.SUPERVISE_SECONDS)

    def _start(self, job: Job) -> None:
        try:
            process, receiving = processes.start_job(self.settings, job.request)
        except Exception as error:  # noqa: BLE001 - the job fails with the reason; the supervisor lives on
            with self.lock:
                if job.status != "cancelled":
                    job.error = worker.failure(f"the job's process could not start: {error}", None)
                    self._finish(job, "failed")
            return
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
                elif kind == "snapshot":
                    for dropped in report["dropped"]:
                        job.snapshots.pop(dropped, None)
                    if report["data"] is not None:
                        job.snapshots[report["run"]] = report["data"]
                else:
                    job.error = report["error"]
                    self._finish(job, report["status"])
        except (EOFError, OSError):  # the process ended without its last report: killed
            job.error = processes.ended_by_signal(self.settings, job.process, job.started)
            self._finish(job, "failed")
            return
        if job.status == "running" and time.monotonic() - job.started > self.settings.job_wall_seconds:
            job.process.kill()
            job.error = processes.wall_error(self.settings)
            self._finish(job, "failed")

    def _finish(self, job: Job, status: str) -> None:
        job.status, job.ended = status, time.monotonic()
        if job.connection is not None:
            job.connection.close()
        if status != "done":
            job.snapshots = {}  # its graphs run the program from the start, as /backward would
        job.process = job.connection = None  # a finished job keeps only its record

    def _expire(self) -> None:
        now, keep = time.monotonic(), self.settings.job_expire_seconds
        for job_id in [job.id for job in self.jobs.values() if job.ended is not None and now - job.ended > keep]:
            del self.jobs[job_id]
