"""What runs inside a job's worker process: the limits the process puts on itself, then the same
service functions /backward runs (app.service), reporting over a pipe to the server:

  ("progress", {"statements", "runs": [(line, data)] new since the last, "text": printed text new since the last})
  ("snapshot", {"run", "data": bytes, "dropped": [run, ...]})          a snapshot of the program (engine.python.
                                   snapshots) for the graphs of runs `run` and later; forget those of `dropped`
  ("end", {"status": "done" | "failed", "error": {...} | None})       after a job's run
  ("graph", bytes) or ("error", {...})                                after a graph's re-run

This module imports only what a worker needs, so the forkserver preloads it once and every job's
process starts as a fork of that, in milliseconds."""

import gc
import os
import resource
import threading
import time

from engine import Limits, ProgramError, is_python, run_program
from engine.python import Taker
from engine.syntax import WHOLE_PROGRAM

from .. import schemas
from ..service import answer_json, replayed_json

REPORT_SECONDS = 0.2  # how often statements are reported while nothing else happens
# The cyclic collector stays on in a job (a micrograd-style class makes a reference cycle per node,
# which only it frees), but it runs after this many new container objects, not Python's 700: the
# interpreter makes a few short-lived ones per operation, and at 700 the collector took about a fifth
# of a training step's time (docs/performance.md, "A long run").
COLLECT_AFTER_OBJECTS = 50_000


def limit_process(cpu_seconds: int, memory_bytes: int) -> None:
    """The job's own bounds, set in its process: past the CPU time the kernel sends SIGXCPU (and
    SIGKILL a second later); past the address space an allocation fails (MemoryError). And the
    collector's pace for a long run (collect_as_jobs)."""
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    collect_as_jobs()


def collect_as_jobs() -> None:
    """The cyclic collector on, at a job's pace (COLLECT_AFTER_OBJECTS); the older generations keep Python's."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(COLLECT_AFTER_OBJECTS, older, oldest)
    gc.enable()


def failure(message: str, limit: str | None, error: ProgramError | None = None) -> dict:
    """A failed job's error: the usual error body (message, line, column, offset), and the setting
    whose limit ended it, if one did."""
    span = error.span if error is not None else WHOLE_PROGRAM
    return {"message": message, "line": span.line, "column": span.column, "offset": span.offset, "limit": limit}


def memory_failure(memory_bytes: int, error: ProgramError | None = None) -> dict:
    message = f"the job needed more than {memory_bytes:,} bytes of memory, its limit (VALUEGRAPH_JOB_MEMORY_BYTES)"
    return failure(message, "VALUEGRAPH_JOB_MEMORY_BYTES", error)


class Reporter:
    """The engine's progress hook for one run: sends what is new since the last report, from the
    interpreter's thread at each backward() call and print, and from a thread of its own every
    REPORT_SECONDS (a long loop without either still shows its statements growing)."""

    def __init__(self, connection):
        self.connection = connection
        self.lock = threading.Lock()  # one message at a time on the pipe
        self.state = None
        self.runs_sent = 0
        self.chunks_sent = 0
        self.statements_sent = -1
        threading.Thread(target=self._every_while, daemon=True).start()

    def __call__(self, state) -> None:
        self.state = state
        self.flush()

    def flush(self) -> None:
        state = self.state
        if state is None:
            return
        with self.lock:
            runs, chunks, statements = state.runs[self.runs_sent :], state.chunks[self.chunks_sent :], state.steps
            if not runs and not chunks and statements == self.statements_sent:
                return
            self.runs_sent += len(runs)
            self.chunks_sent += len(chunks)
            self.statements_sent = statements
            self.connection.send(("progress", {"statements": statements, "runs": runs, "text": "".join(chunks)}))

    def send(self, message) -> None:
        with self.lock:
            self.connection.send(message)

    def _every_while(self):
        while True:
            time.sleep(REPORT_SECONDS)
            try:
                self.flush()
            except OSError:  # the server or worker reading the pipe is gone (killed): nobody awaits this run
                os._exit(1)


def run_job(
    connection,
    request: schemas.BackwardRequest,
    limits: Limits,
    cpu_seconds: int,
    memory_bytes: int,
    snapshot_every: int = 0,
    snapshot_bytes: int = 0,
):
    """A job: the program run whole (its loss curve and printed lines reported as they grow), and
    snapshotted every `snapshot_every` backward() calls (0: never), keeping at most `snapshot_bytes`."""
    limit_process(cpu_seconds, memory_bytes)
    reporter = Reporter(connection)

    def deliver(run: int, data: bytes, dropped: list) -> None:
        reporter.send(("snapshot", {"run": run, "data": data, "dropped": dropped}))

    taker = Taker(snapshot_every, snapshot_bytes, deliver) if snapshot_every else None
    try:
        run_program(
            request.expression,
            request.variables,
            limits,
            request.seed,
            None,
            request.files,
            progress=reporter,
            snapshots=taker,
            shows_graph=False,
        )
        error = None
    except ProgramError as problem:
        error = _program_failure(problem, reporter.state, limits, memory_bytes)
    except MemoryError:
        error = memory_failure(memory_bytes)
    reporter.flush()
    reporter.send(("end", {"status": "done" if error is None else "failed", "error": error}))
    connection.close()


def _program_failure(problem: ProgramError, state, limits: Limits, memory_bytes: int) -> dict:
    if isinstance(problem.__context__, MemoryError):  # the interpreter's MemoryError, placed in the program
        return memory_failure(memory_bytes, problem)
    if state is not None and state.steps > limits.max_statements:
        return failure(f"{problem.message} (VALUEGRAPH_JOB_MAX_STATEMENTS)", "VALUEGRAPH_JOB_MAX_STATEMENTS", problem)
    return failure(problem.message, None, problem)


def run_graph(
    connection,
    request: schemas.BackwardRequest,
    limits: Limits,
    cpu_seconds: int,
    memory_bytes: int,
    finished: tuple | None = None,
    columns: bool = False,
):
    """One backward() call's answer, exactly as /backward writes it (in the columnar encoding when
    `columns`): the program re-run with `run`. `finished`: (runs, printed lines, snapshot bytes or
    None) of a job that ran to its end: then a Python program is replayed from that snapshot (or its
    start) only as far as the run."""
    limit_process(cpu_seconds, memory_bytes)
    try:
        if finished is not None and is_python(request.expression):
            body = replayed_json(request, limits, *finished, columns=columns)
        else:
            body, _ = answer_json(request, limits, columns)
        connection.send(("graph", body))
    except ProgramError as problem:
        error = _program_failure(problem, None, limits, memory_bytes)
        connection.send(("error", {key: value for key, value in error.items() if key != "limit" or value}))
    except MemoryError:
        connection.send(("error", memory_failure(memory_bytes)))
    connection.close()
