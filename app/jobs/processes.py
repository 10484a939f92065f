"""A job's process, for every backend: started from multiprocessing's forkserver (which preloads
app.jobs.worker, so each start is a fork in milliseconds) with the VALUEGRAPH_JOB_* limits, and
the failures that the server, not the process, names: past the wall clock, or ended by a signal."""

import multiprocessing
import multiprocessing.forkserver
import signal
import time

import anyio

from .. import schemas
from ..config import Settings
from . import worker

SUPERVISE_SECONDS = 0.05  # how often a job's reports are read and its limits checked

_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(["app.jobs.worker"])


def warm_up() -> None:
    """Starts the forkserver now (a second or two), so that the first job's start is a fork too."""
    multiprocessing.forkserver.ensure_running()


def start(target, settings: Settings, request: schemas.BackwardRequest, *more):
    """(process, the pipe's receiving end) of worker.run_job or worker.run_graph, started; `more`: the
    target's further arguments."""
    receiving, sending = _context.Pipe(duplex=False)
    args = (sending, request, settings.job_limits, settings.job_cpu_seconds, settings.job_memory_bytes, *more)
    process = _context.Process(target=target, args=args, daemon=True)
    process.start()
    sending.close()
    return process, receiving


def start_job(settings: Settings, request: schemas.BackwardRequest):
    """start() of a job's whole run, snapshotted as VALUEGRAPH_JOB_SNAPSHOT_EVERY and _BYTES say, whichever backend
    keeps its snapshots."""
    return start(worker.run_job, settings, request, settings.job_snapshot_every, settings.job_snapshot_bytes)


async def graph(
    settings: Settings, request: schemas.BackwardRequest, finished=None, columns: bool = False
) -> tuple[str, object]:
    """("graph", the bytes /backward answers for the request) or ("error", body), from a process of its own.
    `finished` and `columns`: see worker.run_graph."""
    started = time.monotonic()
    # The forkserver's first start takes a second or two: not on the event loop.
    process, receiving = await anyio.to_thread.run_sync(start, worker.run_graph, settings, request, finished, columns)
    try:
        while True:
            if receiving.poll():
                try:
                    return receiving.recv()
                except EOFError:
                    return "error", ended_by_signal(settings, process, started)
            if time.monotonic() - started > settings.job_wall_seconds:
                return "error", wall_error(settings)
            await anyio.sleep(SUPERVISE_SECONDS)
    finally:
        process.kill()
        await anyio.to_thread.run_sync(process.join)
        receiving.close()


def wall_error(settings: Settings) -> dict:
    seconds = settings.job_wall_seconds
    return worker.failure(
        f"the job ran longer than {seconds:g} seconds, its wall-clock limit (VALUEGRAPH_JOB_WALL_SECONDS)",
        "VALUEGRAPH_JOB_WALL_SECONDS",
    )


def ended_by_signal(settings: Settings, process, started: float) -> dict:
    """The error of a job whose process ended without its last report (killed)."""
    process.join(1)
    if process.exitcode == -signal.SIGXCPU or process.exitcode == -signal.SIGKILL:
        seconds = settings.job_cpu_seconds
        if process.exitcode == -signal.SIGXCPU or time.monotonic() - started >= seconds:
            return worker.failure(
                f"the job used more than {seconds:,} seconds of CPU time, its limit (VALUEGRAPH_JOB_CPU_SECONDS)",
                "VALUEGRAPH_JOB_CPU_SECONDS",
            )
    message = f"the job's worker process ended unexpectedly (exit code {process.exitcode}); try again"
    return worker.failure(message, None)
