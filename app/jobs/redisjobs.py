"""Jobs on Redis (VALUEGRAPH_REDIS_URL): RQ's queue carries each job's id to one `valuegraph worker`
process, wherever it runs; the job's record, progress and end travel back through Redis, so any app
process answers GET /runs/{id}, its events and DELETE. Why RQ: docs/operating.md, "Jobs on Redis".

The record, under `vg:job:ID` (a hash: status, client, request, statements, elapsed, error, worker,
process, queued_ms: when it was stored, by Redis's clock), `vg:job:ID:runs` (a list: [line, data] per
backward() call), `vg:job:ID:text` (the printed text), `vg:job:ID:alive` (set by the job's worker, expiring
VALUEGRAPH_JOB_WORKER_TIMEOUT after its last beat), `vg:job:ID:snapshots` (a hash: run -> the bytes of the
program's snapshot before that run, as the job's process takes and thins them within
VALUEGRAPH_JOB_SNAPSHOT_BYTES; kept only for a job that ends `done`), and `vg:jobs:unfinished` (a hash: id ->
client, for the caps). Every change of status is one Lua script, so an app process cancelling and a worker
finishing cannot both win.

A worker runs one job at a time (RQ's SimpleWorker: no fork of its own, since the job's program
already runs in a process of its own, app.jobs.processes, with the same limits as the local pool),
beats every BEAT_SECONDS, and kills the job's process when it reads that the job was cancelled.
A worker killed with -9 beats no more: the first app process to look at the job then ends it
`failed`, saying so; it is not run again (a program that killed one worker may kill the next)."""

import json
import os
import secrets
import socket
import threading
import time
from contextlib import suppress

import anyio

from .. import schemas
from ..broker import REDIS_HEALTH_CHECK_SECONDS, Breaker, through_breaker
from ..config import Settings
from . import processes, worker
from .base import JobQueue, status_json, too_many_for_client, too_many_jobs

QUEUE = "valuegraph-jobs"  # RQ's queue
UNFINISHED = "vg:jobs:unfinished"
BEAT_SECONDS = 0.1  # how often a worker confirms it is alive and looks for a cancel

# KEYS: the job, the unfinished hash. ARGV: id, client, most jobs, most per client, the request.
# 0: queued; 1: too many in all; 2: too many for this client.
SUBMIT = """
local clients = redis.call('HVALS', KEYS[2])
if #clients >= tonumber(ARGV[3]) then return 1 end
local mine = 0
for _, client in ipairs(clients) do
  if client == ARGV[2] then mine = mine + 1 end
end
if mine >= tonumber(ARGV[4]) then return 2 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
local now = redis.call('TIME')
redis.call('HSET', KEYS[1], 'status', 'queued', 'client', ARGV[2], 'request', ARGV[5], 'statements', 0, 'elapsed', 0,
  'queued_ms', now[1] * 1000 + math.floor(now[2] / 1000))
return 0
"""

# KEYS: the job, its alive key. ARGV: the worker's name, alive for (ms).
# The request, if the job was still queued (now running); else nothing (cancelled meanwhile).
CLAIM = """
if redis.call('HGET', KEYS[1], 'status') ~= 'queued' then return false end
redis.call('HSET', KEYS[1], 'status', 'running', 'worker', ARGV[1])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return redis.call('HGET', KEYS[1], 'request')
"""

# KEYS: the job, its runs, its text, its alive key. ARGV: alive for (ms), statements, elapsed,
# new text, then the new runs (JSON). Writes only while the job runs; returns its status.
REPORT = """
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'running' then return status or false end
redis.call('SET', KEYS[4], '1', 'PX', ARGV[1])
redis.call('HSET', KEYS[1], 'statements', ARGV[2], 'elapsed', ARGV[3])
if ARGV[4] ~= '' then redis.call('APPEND', KEYS[3], ARGV[4]) end
for i = 5, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
return status
"""

# KEYS: the job, its snapshots. ARGV: the run it was taken at, its bytes ('' when not kept), then the runs
# of the snapshots to forget. Writes only while the job runs; returns its status.
SNAPSHOT = """
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'running' then return status or false end
for i = 3, #ARGV do redis.call('HDEL', KEYS[2], ARGV[i]) end
if ARGV[2] ~= '' then redis.call('HSET', KEYS[2], ARGV[1], ARGV[2]) end
return status
"""

# KEYS: the job, its runs, its text, its alive key, its snapshots, the unfinished hash, RQ's job. ARGV: id, the
# new status, the error (JSON), keep for (s), how: "worker" (from running), "cancel" (from queued or running),
# "lost" (from running, once its worker's alive key has expired; or from queued, with the error ARGV[6], when RQ
# holds no job for it ARGV[7] ms after it was stored: Redis failed between the two). Returns the status after.
END = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return false end
local how = ARGV[5]
local error = ARGV[3]
local ends = status == 'running' or (how == 'cancel' and status == 'queued')
if how == 'lost' and status == 'running' then ends = redis.call('EXISTS', KEYS[4]) == 0 end
if how == 'lost' and status == 'queued' then
  local queued_ms = tonumber(redis.call('HGET', KEYS[1], 'queued_ms'))
  local now = redis.call('TIME')
  ends = queued_ms ~= nil and redis.call('EXISTS', KEYS[7]) == 0
    and now[1] * 1000 + math.floor(now[2] / 1000) - queued_ms > tonumber(ARGV[7])
  error = ARGV[6]
end
if not ends then return status end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'error', error)
redis.call('HDEL', KEYS[6], ARGV[1])
redis.call('DEL', KEYS[4])
-- only a job that ran to its end replays from its snapshots; the graphs of any other run it from the start
if ARGV[2] ~= 'done' then redis.call('DEL', KEYS[5]) end
for _, i in ipairs({1, 2, 3, 5}) do redis.call('EXPIRE', KEYS[i], ARGV[4]) end
return ARGV[2]
"""


def _keys(job_id: str) -> list[str]:
    key = f"vg:job:{job_id}"
    return [key, key + ":runs", key + ":text", key + ":alive", key + ":snapshots"]


def _end_keys(job_id: str) -> list[str]:
    """The keys of END: the job's, the unfinished hash, and RQ's job (enqueued under the job's own id)."""
    from rq.job import Job

    return [*_keys(job_id), UNFINISHED, Job.key_for(job_id)]


def _lost_error(settings: Settings) -> dict:
    seconds = settings.job_worker_timeout
    return worker.failure(
        f"the worker running this job went unheard for {seconds:g} seconds (VALUEGRAPH_JOB_WORKER_TIMEOUT): it was "
        "killed, or lost Redis; the job is not run again, start it anew",
        "VALUEGRAPH_JOB_WORKER_TIMEOUT",
    )


def _unqueued_error() -> dict:
    return worker.failure(
        "this job never reached the queue: Redis failed while it was being queued; start it anew", None
    )


def _redis_options(settings: Settings, asyncio: bool = False) -> dict:
    """As Teach live's broker: timeouts, and one retry at once, so that a pooled connection gone stale
    when Redis restarted is replaced without an error, while a Redis that is down fails fast."""
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError, TimeoutError

    if asyncio:
        from redis.asyncio.retry import Retry
    else:
        from redis.retry import Retry
    return {
        "socket_timeout": settings.redis_timeout,
        "socket_connect_timeout": settings.redis_timeout,
        "socket_keepalive": True,
        "health_check_interval": REDIS_HEALTH_CHECK_SECONDS,
        "retry": Retry(NoBackoff(), 1),
        "retry_on_error": [ConnectionError, TimeoutError],
    }


def _rq():
    try:
        import rq
        from rq.serializers import JSONSerializer
    except ImportError:
        raise RuntimeError(
            "VALUEGRAPH_REDIS_URL is set, but the job queue (rq) is not installed: pip install 'valuegraph[redis]'"
        ) from None
    return rq, JSONSerializer


class RedisJobs(JobQueue):
    """The app side: submits, reads, cancels, and ends jobs whose worker was lost."""

    def __init__(self, settings: Settings):
        super().__init__(settings)
        rq, serializer = _rq()
        import redis
        import redis.asyncio
        from redis.exceptions import ConnectionError, TimeoutError

        self.down_errors = (ConnectionError, TimeoutError, OSError)
        self.redis_errors = redis.exceptions.RedisError
        self.breaker = Breaker(settings.redis_retry_seconds)
        self.redis = redis.asyncio.Redis.from_url(
            settings.redis_url, decode_responses=True, **_redis_options(settings, asyncio=True)
        )
        self.redis_bytes = redis.asyncio.Redis.from_url(  # for snapshots, which are bytes, not text
            settings.redis_url, **_redis_options(settings, asyncio=True)
        )
        # RQ's client is synchronous (enqueueing is one call, made in a thread) and reads bytes.
        self.queue = rq.Queue(
            QUEUE,
            connection=redis.Redis.from_url(settings.redis_url, **_redis_options(settings)),
            serializer=serializer,
        )
        self.scripts = {name: self.redis.register_script(text) for name, text in (("submit", SUBMIT), ("end", END))}

    @through_breaker
    async def submit(self, request: schemas.BackwardRequest, client: str) -> str:
        for job_id in await self.redis.hkeys(UNFINISHED):  # a job whose worker was lost no longer counts
            await self._end_if_lost(job_id)
        job_id = secrets.token_urlsafe(12)
        s = self.settings
        arguments = [job_id, client, s.job_max_jobs, s.job_max_per_client, request.model_dump_json()]
        verdict = await self.scripts["submit"](keys=[_keys(job_id)[0], UNFINISHED], args=arguments)
        if verdict:
            raise too_many_jobs(s) if verdict == 1 else too_many_for_client(s)
        try:
            await anyio.to_thread.run_sync(self._enqueue, job_id)
        except Exception as error:
            # Stored but not queued: no worker will take the job, so it must not keep its place in the caps.
            with suppress(Exception):  # best effort: Redis is likely down
                await self._end(job_id, "failed", None, "cancel")
            if isinstance(error, self.redis_errors) and not isinstance(error, self.down_errors):
                # Redis answered but would not queue it (a replica's READONLY in a failover): it is unavailable
                raise self.down_errors[0](f"the job queue refused the job: {error}") from error
            raise
        return job_id

    def _enqueue(self, job_id: str) -> None:
        # RQ's own timeout only backs up the worker's wall-clock check; RQ keeps no result (the record does).
        self.queue.enqueue(
            run_queued,
            job_id,
            job_id=job_id,  # RQ's own id for it: END reads whether RQ holds it
            job_timeout=int(self.settings.job_wall_seconds) + 60,
            result_ttl=0,
            failure_ttl=int(self.settings.job_expire_seconds),
        )

    @through_breaker
    async def cancel(self, job_id: str) -> dict | None:
        await self._end(job_id, "cancelled", None, "cancel")
        return await self.status(job_id)

    async def _end(self, job_id: str, status: str, error: dict | None, how: str, *lost: str):
        arguments = [job_id, status, json.dumps(error), int(self.settings.job_expire_seconds), how, *lost]
        return await self.scripts["end"](keys=_end_keys(job_id), args=arguments)

    async def _end_if_lost(self, job_id: str) -> None:
        unqueued = (json.dumps(_unqueued_error()), int(self.settings.job_enqueue_seconds * 1000))
        await self._end(job_id, "failed", _lost_error(self.settings), "lost", *unqueued)

    @through_breaker
    async def _snapshot(self, job_id: str) -> tuple[dict, str] | None:
        for attempt in (1, 2):
            key, runs_key, text_key, alive_key, _ = _keys(job_id)
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.hgetall(key)
                pipe.lrange(runs_key, 0, -1)
                pipe.get(text_key)
                pipe.exists(alive_key)
                record, runs, text, alive = await pipe.execute()
            if not record:
                return None
            if record["status"] == "running" and not alive and attempt == 1:
                await self._end_if_lost(job_id)
                continue
            break
        text = text or ""
        error = json.loads(record.get("error") or "null")
        points = [json.loads(run) for run in runs]
        status = status_json(
            job_id, record["status"], int(record["statements"]), points, text, error, float(record["elapsed"])
        )
        return status, text

    @through_breaker
    async def _request(self, job_id: str) -> schemas.BackwardRequest | None:
        request = await self.redis.hget(_keys(job_id)[0], "request")
        return None if request is None else schemas.BackwardRequest.model_validate_json(request)

    @through_breaker
    async def _done(self, job_id: str) -> tuple[list, str, list[int]] | None:
        key, runs_key, text_key, _, snapshots_key = _keys(job_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hget(key, "status")
            pipe.lrange(runs_key, 0, -1)
            pipe.get(text_key)
            pipe.hkeys(snapshots_key)
            status, runs, text, taken = await pipe.execute()
        if status != "done":
            return None
        return [json.loads(run) for run in runs], text or "", [int(run) for run in taken]

    @through_breaker
    async def _snapshot_data(self, job_id: str, run: int) -> bytes | None:
        return await self.redis_bytes.hget(_keys(job_id)[4], str(run))

    async def close(self) -> None:
        """Unfinished jobs go on: their workers and the other app processes still serve them."""
        await self.redis.aclose()
        await self.redis_bytes.aclose()
        self.queue.connection.close()


# ---- the worker side: `valuegraph worker` ----


class Worker:
    """Runs the jobs RQ hands this process, one at a time, each in a limited process of its own."""

    def __init__(self, settings: Settings):
        import redis

        self.settings = settings
        self.name = f"{socket.gethostname()}:{os.getpid()}"
        self.redis = redis.Redis.from_url(settings.redis_url, decode_responses=True, **_redis_options(settings))
        scripts = {"claim": CLAIM, "report": REPORT, "snapshot": SNAPSHOT, "end": END}
        self.scripts = {name: self.redis.register_script(text) for name, text in scripts.items()}
        self.alive_ms = str(int(settings.job_worker_timeout * 1000))

    def run(self, job_id: str) -> None:
        keys = _keys(job_id)
        request = self.scripts["claim"](keys=[keys[0], keys[3]], args=[self.name, self.alive_ms])
        if request is None:  # cancelled while queued
            return
        request = schemas.BackwardRequest.model_validate_json(request)
        process, receiving = processes.start_job(self.settings, request)
        started = time.monotonic()
        self.redis.hset(keys[0], "process", process.pid)
        try:
            status, error = self._follow(job_id, process, receiving, started)
            if status is not None:
                self._end(job_id, status, error)
        finally:
            process.kill()
            process.join()
            receiving.close()

    def _follow(self, job_id, process, receiving, started) -> tuple[str | None, dict | None]:
        """Forwards the job's reports until it ends: (its status, error); (None, None) if it was
        ended elsewhere (cancelled, or given up as lost)."""
        beat, statements = 0.0, 0
        while True:
            report, snapshot = {"text": "", "runs": []}, None
            try:
                if receiving.poll(processes.SUPERVISE_SECONDS):
                    kind, message = receiving.recv()
                    if kind == "end":
                        return message["status"], message["error"]
                    if kind == "snapshot":
                        snapshot = message
                    else:
                        report, statements = message, message["statements"]
            except (EOFError, OSError):  # the process ended without its last report: killed
                return "failed", processes.ended_by_signal(self.settings, process, started)
            if snapshot is not None and self._keep(job_id, snapshot) != "running":
                return None, None
            elapsed = time.monotonic() - started
            if elapsed > self.settings.job_wall_seconds:
                return "failed", processes.wall_error(self.settings)
            if report["text"] or report["runs"] or elapsed - beat >= BEAT_SECONDS:
                beat = elapsed
                arguments = [self.alive_ms, statements, round(elapsed, 3), report["text"]]
                arguments += [json.dumps(run) for run in report["runs"]]
                if self.scripts["report"](keys=_keys(job_id), args=arguments) != "running":
                    return None, None

    def _keep(self, job_id: str, snapshot: dict) -> str | None:
        """Stores a snapshot the job's process took (worker.run_job), forgets those it dropped; the job's status."""
        keys = _keys(job_id)
        arguments = [snapshot["run"], snapshot["data"] or b"", *snapshot["dropped"]]
        return self.scripts["snapshot"](keys=[keys[0], keys[4]], args=arguments)

    def _end(self, job_id: str, status: str, error: dict | None) -> None:
        arguments = [job_id, status, json.dumps(error), int(self.settings.job_expire_seconds), "worker"]
        self.scripts["end"](keys=_end_keys(job_id), args=arguments)

    def work(self) -> None:
        """Takes jobs from the shared queue until stopped. Redis lost (RQ then gives up, its job's process
        killed): tries again every VALUEGRAPH_REDIS_RETRY_SECONDS; that job ends `failed` as lost."""
        import redis
        from redis.exceptions import ConnectionError, TimeoutError

        rq, serializer = _rq()
        processes.warm_up()  # not while a claimed job waits, unheard
        connection = redis.Redis.from_url(self.settings.redis_url, **_redis_options(self.settings))
        queue = rq.Queue(QUEUE, connection=connection, serializer=serializer)
        stopped = threading.Event()

        class StoppableWorker(rq.SimpleWorker):
            """RQ's worker also ends its loop on an error it only logs (Redis gone while it ends a
            job): only a stop asked by a signal ends `valuegraph worker`."""

            def request_stop(self, signum, frame):
                stopped.set()
                super().request_stop(signum, frame)

        seconds = self.settings.redis_retry_seconds
        while True:
            try:
                StoppableWorker([queue], connection=connection, serializer=serializer).work(logging_level="WARNING")
                reason = "its loop ended on an error"
            except (ConnectionError, TimeoutError, OSError) as error:
                reason = f"Redis cannot be reached ({error})"
            if stopped.is_set():
                return
            print(f"valuegraph worker: {reason}; again in {seconds:g} s", flush=True)
            time.sleep(seconds)


_worker: Worker | None = None  # the one Worker of a `valuegraph worker` process


def run_queued(job_id: str) -> None:
    """What RQ runs for a job (by this name, in the worker process)."""
    _worker.run(job_id)


def work(settings: Settings) -> None:
    global _worker
    _worker = Worker(settings)
    _worker.work()
