"""Job libraries on Redis, side by side (issue 21: choose among arq, RQ, Dramatiq and SAQ by measurement).

For each library installed, on one real redis-server: one worker process of that library, running
one job at a time, and jobs that only note when they started. Measured:

- latency: one job at a time onto an idle worker, enqueue to start (median and p95 of LATENCY_JOBS);
- throughput: BURST_JOBS enqueued at once, jobs started per second from the first enqueue to the last start.

Each library's worker runs with its defaults otherwise (arq polls its queue every 0.5 s, RQ's
`Worker` forks a process per job, RQ's `SimpleWorker` does not). The libraries want different
versions of the redis client (arq < 6, SAQ < 8; valuegraph pins 8): run this in an environment
where they are installed together, for example

    python3 -m venv --system-site-packages /tmp/jobqueues
    /tmp/jobqueues/bin/pip install arq rq 'dramatiq[redis]' saq
    /tmp/jobqueues/bin/python -m benchmarks.bench_job_queues [--quick]
"""

import argparse
import asyncio
import os
import subprocess
import sys
import time

from benchmarks.common import REPO, load, machine, ms, percentile, print_table
from tests.realservers import redis_process

LATENCY_JOBS, BURST_JOBS = 40, 200
STARTED = "bench:started"  # a list of "index time" pushed by each job as it starts
LIBRARIES = ("arq", "rq", "rq-simple", "dramatiq", "saq")


def _note(redis, index) -> None:
    redis.rpush(STARTED, f"{index} {time.time()}")


# ---- the jobs, one per library (each worker process imports this module) ----


async def arq_job(ctx, index):
    await ctx["redis"].rpush(STARTED, f"{index} {time.time()}")


def rq_job(index):
    from rq import get_current_job

    _note(get_current_job().connection, index)


async def saq_job(ctx, *, index):
    await ctx["worker"].queue.redis.rpush(STARTED, f"{index} {time.time()}")


def _dramatiq_actor(url):
    import dramatiq
    import redis
    from dramatiq.brokers.redis import RedisBroker

    broker = RedisBroker(url=url)
    dramatiq.set_broker(broker)
    client = redis.Redis.from_url(url)

    @dramatiq.actor(max_retries=0)
    def dramatiq_job(index):
        _note(client, index)

    return broker, dramatiq_job


# ---- the worker processes ----


def run_worker(library: str, url: str) -> None:
    if library == "arq":
        from arq.connections import RedisSettings
        from arq.worker import Worker

        Worker(functions=[arq_job], redis_settings=RedisSettings.from_dsn(url), max_jobs=1).run()
    elif library in ("rq", "rq-simple"):
        import redis
        from rq import Queue, SimpleWorker, Worker

        connection = redis.Redis.from_url(url)
        kind = Worker if library == "rq" else SimpleWorker
        kind([Queue(connection=connection)], connection=connection).work(logging_level="WARNING")
    elif library == "dramatiq":
        import dramatiq

        broker, _ = _dramatiq_actor(url)
        worker = dramatiq.Worker(broker, worker_threads=1)
        worker.start()
        while True:
            time.sleep(3600)
    elif library == "saq":
        from saq import Queue, Worker

        async def work():
            queue = Queue.from_url(url)
            await Worker(queue, functions=[saq_job], concurrency=1).start()

        asyncio.run(work())


# ---- the side that enqueues ----


class Enqueuer:
    """enqueue(index) for one library, from the web server's side (async, as a route would)."""

    def __init__(self, library: str, url: str):
        self.library, self.url = library, url

    async def __aenter__(self):
        if self.library == "arq":
            from arq import create_pool
            from arq.connections import RedisSettings

            pool = await create_pool(RedisSettings.from_dsn(self.url))
            self.enqueue = lambda index: pool.enqueue_job("arq_job", index)
            self.close = pool.aclose
        elif self.library in ("rq", "rq-simple"):
            import redis
            from rq import Queue

            queue = Queue(connection=redis.Redis.from_url(self.url))

            async def enqueue(index):  # RQ's client is synchronous: a route would call it in a thread
                await asyncio.to_thread(queue.enqueue, "benchmarks.bench_job_queues.rq_job", index)

            self.enqueue, self.close = enqueue, _nothing
        elif self.library == "dramatiq":
            _, actor = _dramatiq_actor(self.url)
            self.enqueue = lambda index: asyncio.to_thread(actor.send, index)
            self.close = _nothing
        elif self.library == "saq":
            from saq import Queue

            queue = Queue.from_url(self.url)
            await queue.connect()
            self.enqueue = lambda index: queue.enqueue("saq_job", index=index)
            self.close = queue.disconnect
        return self

    async def __aexit__(self, *exc):
        await self.close()


async def _nothing():
    pass


def _started(redis) -> dict[int, float]:
    return {int(index): float(at) for index, at in (entry.decode().split() for entry in redis.lrange(STARTED, 0, -1))}


async def _wait_started(redis, count: int) -> dict[int, float]:
    seconds = 60 + count  # arq, one job per poll, starts two a second
    deadline = time.monotonic() + seconds
    while redis.llen(STARTED) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {redis.llen(STARTED)} of {count} jobs started within {seconds} s")
        await asyncio.sleep(0.01)
    return _started(redis)


async def measure(library: str, url: str, latency_jobs: int, burst_jobs: int) -> dict:
    import redis as redis_client

    redis = redis_client.Redis.from_url(url)
    redis.flushall()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    worker = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.bench_job_queues", "--worker", library, "--redis", url], cwd=REPO, env=env
    )
    try:
        async with Enqueuer(library, url) as enqueuer:
            await enqueuer.enqueue(-1)  # the worker is up and warm once this one has started
            await _wait_started(redis, 1)
            delays = []
            for index in range(latency_jobs):
                redis.delete(STARTED)
                sent = time.time()
                await enqueuer.enqueue(index)
                delays.append((await _wait_started(redis, 1))[index] - sent)
                await asyncio.sleep(0.05)  # the worker is idle again
            redis.delete(STARTED)
            first = time.time()
            for index in range(burst_jobs):
                await enqueuer.enqueue(index)
            enqueued = time.time() - first
            started = await _wait_started(redis, burst_jobs)
        return {
            "p50": percentile(delays, 0.5),
            "p95": percentile(delays, 0.95),
            "enqueue": enqueued / burst_jobs,
            "per_second": burst_jobs / (max(started.values()) - first),
        }
    finally:
        worker.kill()
        worker.wait()


def available(library: str) -> bool:
    try:
        __import__(library.split("-")[0])
    except ImportError:
        return False
    return True


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer jobs")
    parser.add_argument("--only", nargs="+", choices=LIBRARIES, default=LIBRARIES, help="these libraries only")
    parser.add_argument("--worker", choices=LIBRARIES, help=argparse.SUPPRESS)
    parser.add_argument("--redis", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        run_worker(args.worker, args.redis)
        return
    latency_jobs, burst_jobs = (10, 100) if args.quick else (LATENCY_JOBS, BURST_JOBS)
    rows, missing = [], [library for library in LIBRARIES if not available(library)]
    with redis_process() as server:
        for library in args.only:
            if library in missing:
                continue
            result = asyncio.run(measure(library, server.url, latency_jobs, burst_jobs))
            version = __import__(library.split("-")[0]).__version__
            rows.append(
                [
                    f"{library} {version}",
                    ms(result["p50"]),
                    ms(result["p95"]),
                    ms(result["enqueue"]),
                    f"{result['per_second']:,.0f}",
                ]
            )
    notes = [f"{latency_jobs} jobs for latency, {burst_jobs} for throughput; one worker process, one job at a time."]
    if missing:
        notes.append(f"Not installed, not measured: {', '.join(missing)}.")
    notes += [machine(), load()]
    print_table(
        "Job libraries on Redis: enqueue to start",
        ["library", "latency p50 (ms)", "latency p95 (ms)", "enqueue (ms/job)", "throughput (jobs/s)"],
        rows,
        notes,
    )


if __name__ == "__main__":
    main()
