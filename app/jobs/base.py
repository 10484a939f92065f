"""The interface both job backends implement (LocalJobs: a process pool inside this server;
RedisJobs: a queue on Redis that `valuegraph worker` processes share), and what they have in
common: the status GET /runs/{id} answers, the event stream, and a graph's re-run."""

import json
import math
import time

import anyio

from engine import format_number

from .. import schemas
from ..broker import BrokerUnavailable
from ..config import Settings
from . import processes

FINISHED = ("done", "failed", "cancelled")
PROGRESS_EVERY = 0.5  # seconds between two `progress` events of a job's stream
STREAM_SECONDS = 0.1  # how often a stream looks for what is new


class JobLimitReached(Exception):
    """Too many jobs at once, for this client or in all (429); the message says which setting."""


def too_many_jobs(settings: Settings) -> JobLimitReached:
    return JobLimitReached(
        f"{settings.job_max_jobs} jobs are queued or running, the most at once "
        "(VALUEGRAPH_JOB_MAX_JOBS); try again when one has finished"
    )


def too_many_for_client(settings: Settings) -> JobLimitReached:
    return JobLimitReached(
        f"you have {settings.job_max_per_client} jobs queued or running, the most one client may "
        "(VALUEGRAPH_JOB_MAX_PER_CLIENT); wait for one to finish or cancel it"
    )


def status_json(job_id: str, status: str, statements: int, runs: list, text: str, error, elapsed: float) -> dict:
    """A job as GET /runs/{id} answers it (schemas.RunStatus)."""
    return {
        "id": job_id,
        "status": status,
        "progress": {
            "statements": max(0, statements),
            "backward_calls": len(runs),
            "elapsed_seconds": round(elapsed, 3),
        },
        "runs": [{"line": line, "data": data if math.isfinite(data) else format_number(data)} for line, data in runs],
        "printed": lines(text),
        "error": error,
    }


def lines(text: str) -> list[str]:
    """Printed text as lines, as /backward's `printed` gives them (a last line without its newline included)."""
    split = text.split("\n") if text else []
    return split[:-1] if text.endswith("\n") else split


def _event(name: str, data: dict) -> str:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


class JobQueue:
    """What the routes call. Chosen by app.dependencies.make_jobs: RedisJobs with VALUEGRAPH_REDIS_URL,
    else LocalJobs. A backend that cannot reach its store raises app.broker.BrokerUnavailable."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.graph_runs = 0  # graph re-runs running now in this process (each a process of its own)

    async def submit(self, request: schemas.BackwardRequest, client: str) -> str:
        """Queue the program as a job; its id. JobLimitReached past a cap."""
        raise NotImplementedError

    async def status(self, job_id: str) -> dict | None:
        """The job's status as GET /runs/{id} answers it, or None (no such job, or expired)."""
        snapshot = await self._snapshot(job_id)
        return None if snapshot is None else snapshot[0]

    async def cancel(self, job_id: str) -> dict | None:
        """Ends a queued or running job now (its process is killed: no cooperation needed); its status after."""
        raise NotImplementedError

    async def close(self) -> None:
        """The server is stopping."""

    async def _snapshot(self, job_id: str) -> tuple[dict, str] | None:
        """(the job's status, all its printed text), or None."""
        raise NotImplementedError

    async def _request(self, job_id: str) -> schemas.BackwardRequest | None:
        raise NotImplementedError

    async def _finished(self, job_id: str, run: int) -> tuple | None:
        """(runs, printed lines, the snapshot at or before `run` or None) of a job that is `done`, for a
        graph that replays only as far as that run (worker.run_graph); None: the graph re-runs it whole."""
        done = await self._done(job_id)
        if done is None:
            return None
        runs, text, taken = done
        nearest = max((snapshot_run for snapshot_run in taken if snapshot_run <= run), default=None)
        # Gone meanwhile (the job expired): the replay runs from the program's start.
        snapshot = None if nearest is None else await self._snapshot_data(job_id, nearest)
        return runs, lines(text), snapshot

    async def _done(self, job_id: str) -> tuple[list, str, list[int]] | None:
        """(runs, printed text, the runs its kept snapshots were taken at) of a job that is `done`, else None."""
        raise NotImplementedError

    async def _snapshot_data(self, job_id: str, run: int) -> bytes | None:
        """The bytes of the job's snapshot taken at `run`, or None if it is no longer kept."""
        raise NotImplementedError

    async def graph(self, job_id: str, run: int, columns: bool = False) -> tuple[str, object] | None:
        """("graph", the bytes /backward answers for the job's program with run=k, in the columnar
        encoding when columns) or ("error", body); None for no such job. Re-run here, in a process of
        this server, whichever backend ran the job: the page waits for it, so it does not queue behind
        other jobs."""
        request = await self._request(job_id)
        if request is None:
            return None
        if self.graph_runs >= self.settings.job_workers:
            workers = self.settings.job_workers
            being_made = "1 graph is" if workers == 1 else f"{workers} graphs are"
            raise JobLimitReached(
                f"{being_made} being made, the most at once (VALUEGRAPH_JOB_WORKERS); try again in a moment"
            )
        self.graph_runs += 1
        try:
            finished = await self._finished(job_id, run)
            return await processes.graph(self.settings, request.model_copy(update={"run": run}), finished, columns)
        finally:
            self.graph_runs -= 1

    async def events(self, job_id: str):
        """The job as server-sent events, from its start (a client joining late gets what it missed):
        `loss` per backward() call ({"run", "line", "data"}), `printed` per printed line ({"line"}),
        `progress` at most every PROGRESS_EVERY seconds while it changes, and `end` with the job's
        whole status; then the stream closes. None for no such job."""
        if await self._snapshot(job_id) is None:
            return None
        return self._events(job_id)

    async def _events(self, job_id: str):
        runs_sent, characters_sent, progress_sent, progress_at = 0, 0, None, 0.0
        while True:
            try:
                snapshot = await self._snapshot(job_id)
            except BrokerUnavailable:  # Redis went away: end the stream; an EventSource reconnects by itself
                return
            if snapshot is None:  # expired while a client was still listening
                return
            status, text = snapshot
            runs, text, ended = status["runs"][runs_sent:], text[characters_sent:], status["status"] in FINISHED
            for run, point in enumerate(runs, runs_sent):
                yield _event("loss", {"run": run, **point})
            runs_sent += len(runs)
            # Whole lines only while the program may still add to the last one; at the end, the rest.
            complete = text if ended else text[: text.rfind("\n") + 1]
            for line in lines(complete):
                yield _event("printed", {"line": line})
            characters_sent += len(complete)
            if ended:
                yield _event("end", status)
                return
            if status["progress"] != progress_sent and time.monotonic() - progress_at >= PROGRESS_EVERY:
                progress_sent, progress_at = status["progress"], time.monotonic()
                yield _event("progress", {"status": status["status"], **status["progress"]})
            await anyio.sleep(STREAM_SECONDS)
