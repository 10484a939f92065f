"""Run CPU-bound work off the event loop, within a wall-clock budget, and really stop it.

The work runs in a worker thread so the event loop (and /healthz) keeps answering. When the
budget runs out the request answers 503 at once, and the thread is stopped too: a Python
thread cannot be killed, but CPython can raise an exception in it at its next bytecode
(PyThreadState_SetAsyncExc). The engine is pure Python, so that is within microseconds;
without it an abandoned request would keep a core busy until it finished on its own, outside
the limit on concurrent work. The exception is sent once, and only while the call runs: if
it lands in a finalizer that happens to run in that thread, Python prints it as ignored and
the call simply runs to its end (bounded by the engine's limits).

Within an HTTP request the budget is the request's own (RequestDeadline, set by
app.middleware.RequestBudget from the moment the app received the request): the work gets what
is left of it, and past it the 503 is sent first and the work stopped after, because a stopped
thread still holds the interpreter lock while it unwinds and frees what it built.
"""

import ctypes
import gc
import threading
from contextlib import contextmanager
from contextvars import ContextVar

import anyio
import anyio.to_thread


class TimeBudgetExceeded(Exception):
    def __init__(self, seconds: float):
        super().__init__(
            f"the request took longer than its time budget of {seconds:g} s and was stopped; try a smaller program"
        )
        self.seconds = seconds


class _Stopped(BaseException):
    """Raised inside the worker thread; a BaseException so no `except Exception` swallows it."""


class _StoppableCall:
    def __init__(self, function, args):
        self._function = function
        self._args = args
        self._lock = threading.Lock()  # orders stop() against the call starting and ending
        self._thread_id = None
        self._finished = False

    def run(self):
        try:
            with self._lock:
                if self._finished:  # stopped while waiting for a thread
                    return None
                self._thread_id = threading.get_ident()
            try:
                return self._function(*self._args)
            finally:
                with self._lock:
                    self._finished = True
        except _Stopped:
            return None

    def stop(self):
        with self._lock:
            if self._finished:
                return
            self._finished = True
            if self._thread_id is not None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread_id), ctypes.py_object(_Stopped))


class RequestDeadline:
    """One HTTP request's time budget, from when the app received it (anyio's clock), and the
    work to stop once its answer is sent (see the module's docstring)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.received = anyio.current_time()
        self.ends = self.received + seconds
        self._stops = []

    def elapsed(self) -> float:
        return anyio.current_time() - self.received

    def stop_after_answer(self, stop) -> None:
        self._stops.append(stop)

    def stop_work(self) -> None:
        stops, self._stops = self._stops, []
        for stop in stops:
            stop()


_request_deadline: ContextVar[RequestDeadline | None] = ContextVar("valuegraph request deadline", default=None)


@contextmanager
def request_deadline(seconds: float):
    """The deadline of the request handled inside; its work is stopped on leaving."""
    deadline = RequestDeadline(seconds)
    token = _request_deadline.set(deadline)
    try:
        yield deadline
    finally:
        _request_deadline.reset(token)
        deadline.stop_work()


async def run_within_budget(function, *args, seconds: float, limiter: anyio.CapacityLimiter):
    """function(*args) in a worker thread; waiting for a thread included, TimeBudgetExceeded after
    `seconds`, or, inside an HTTP request, cancelled at the request's deadline (its middleware
    answers 503, then stops the work)."""
    call = _StoppableCall(function, args)
    request = _request_deadline.get()
    try:
        if request is not None:
            request.stop_after_answer(call.stop)
            return await anyio.to_thread.run_sync(call.run, abandon_on_cancel=True, limiter=limiter)
        with anyio.fail_after(seconds):
            return await anyio.to_thread.run_sync(call.run, abandon_on_cancel=True, limiter=limiter)
    except TimeoutError:
        raise TimeBudgetExceeded(seconds) from None
    finally:
        if request is None:
            call.stop()  # no-op when it finished; stops it on timeout or when the caller was cancelled


COLLECT_EVERY = 100  # requests that may end while another keeps the collector paused
_paused_calls = 0
_ended_while_paused = 0
_pause_lock = threading.Lock()


def pause_collector() -> None:
    """Pause the cyclic garbage collector while a request builds its graph.

    Graphs, syntax trees and traces hold no reference cycles, so reference counting frees
    them all; the collector would only rescan them again and again as they grow (measured:
    a 12,000-node trace 104 ms of CPU with it, 60 ms without). Counted, so that concurrent
    requests turn it back on only when the last one ends (resume_collector)."""
    global _paused_calls
    with _pause_lock:
        _paused_calls += 1
        gc.disable()


def resume_collector() -> None:
    global _paused_calls, _ended_while_paused
    with _pause_lock:
        _paused_calls -= 1
        _ended_while_paused += 1
        if _paused_calls == 0:
            gc.enable()
            _ended_while_paused = 0
        collect = _ended_while_paused >= COLLECT_EVERY
        if collect:
            _ended_while_paused = 0
    if collect:  # requests kept overlapping: the framework's own cycles still get freed
        gc.collect()


@contextmanager
def collector_paused():
    pause_collector()
    try:
        yield
    finally:
        resume_collector()


class Leftovers:
    """What a request built and no longer needs once its answer is written (the graph and the
    trace), to be freed after the answer is sent: free() from a background task. Freeing a
    12,000-node graph and its trace takes ~10 ms the client need not wait for. The collector stays
    paused until then, or its next pass would scan every one of those objects (~35 ms at 12,000
    nodes). If the task never runs (an error while sending), they go with this holder."""

    def __init__(self, objects):
        pause_collector()
        self._objects = objects

    def free(self) -> None:
        if self._objects is not None:
            self._objects = None
            resume_collector()

    __del__ = free
