"""Run CPU-bound work off the event loop, within a wall-clock budget, and really stop it.

The work runs in a worker thread so the event loop (and /healthz) keeps answering. When the
budget runs out the request answers 503 at once, and the thread is stopped too: a Python
thread cannot be killed, but CPython can raise an exception in it at its next bytecode
(PyThreadState_SetAsyncExc). The engine is pure Python, so that is within microseconds;
without it an abandoned request would keep a core busy until it finished on its own, outside
the limit on concurrent work. The exception is sent once, and only while the call runs: if
it lands in a finalizer that happens to run in that thread, Python prints it as ignored and
the call simply runs to its end (bounded by the engine's limits). A call it may stop starts no
thread: until a new thread runs, CPython gives it the id of the thread that started it, and the
exception, sent to the first thread with that id, could stop the new thread instead (the
engine's fresh stacks and the gzip workers are started elsewhere, for that reason).

A stopped thread does not free what its call built at once: it holds it, and the collector
paused, while it waits, not holding the interpreter lock, until it is released. Freeing a large
graph (and the collector's first pass after a request) holds the lock for up to a tenth of a
second or more, and the event loop needs the lock for every step of sending the 503. Within an
HTTP request the budget is the request's own (RequestDeadline, set by app.middleware.RequestBudget
from the moment the app received the request): the work gets what is left of it, and is released
once the 503 is sent; elsewhere (Teach live) at once.
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


HOLD_SECONDS = 10.0  # the longest a stopped call waits to be released (it always is, in a finally)


class _StoppableCall:
    def __init__(self, function, args):
        self._function = function
        self._args = args
        self._lock = threading.Lock()  # orders stop() against the call starting and ending
        self._thread_id = None
        self._finished = False
        self._released = threading.Event()

    def run(self):
        pause_collector()  # until what a stopped call built is freed (see the module's docstring)
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
            # The exception's traceback holds the call's frames, and so everything it built.
            self._released.wait(HOLD_SECONDS)
            return None
        finally:
            resume_collector()

    def release(self):
        """A stopped call may free what it built now."""
        self._released.set()

    def stop(self):
        with self._lock:
            if self._finished:
                return
            self._finished = True
            if self._thread_id is not None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread_id), ctypes.py_object(_Stopped))


class RequestDeadline:
    """One HTTP request's time budget, from when the app received it (anyio's clock), and its
    stopped work, to release once its answer is sent (see the module's docstring)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.received = anyio.current_time()
        self.ends = self.received + seconds
        self.open = True  # False once answered: a task the request started and left running has its own budget
        self._calls = []

    def elapsed(self) -> float:
        return anyio.current_time() - self.received

    def release_after_answer(self, call: _StoppableCall) -> None:
        if self.open:
            self._calls.append(call)
        else:
            call.release()

    def answered(self) -> None:
        self.open = False
        calls, self._calls = self._calls, []
        for call in calls:
            call.release()


_request_deadline: ContextVar[RequestDeadline | None] = ContextVar("valuegraph request deadline", default=None)


@contextmanager
def request_deadline(seconds: float):
    """The deadline of the request handled inside; its stopped work is released on leaving."""
    deadline = RequestDeadline(seconds)
    token = _request_deadline.set(deadline)
    try:
        yield deadline
    finally:
        _request_deadline.reset(token)
        deadline.answered()


async def run_within_budget(function, *args, seconds: float, limiter: anyio.CapacityLimiter):
    """function(*args) in a worker thread; waiting for a thread included, TimeBudgetExceeded after
    `seconds`, or, inside an HTTP request, cancelled at the request's deadline (its middleware
    answers 503)."""
    call = _StoppableCall(function, args)
    request = _request_deadline.get()
    if request is not None and not request.open:
        request = None
    try:
        if request is not None:
            return await anyio.to_thread.run_sync(call.run, abandon_on_cancel=True, limiter=limiter)
        with anyio.fail_after(seconds):
            return await anyio.to_thread.run_sync(call.run, abandon_on_cancel=True, limiter=limiter)
    except TimeoutError:
        raise TimeBudgetExceeded(seconds) from None
    finally:
        call.stop()  # no-op when it finished; stops it on timeout or when the caller was cancelled
        if request is None:
            call.release()
        else:
            request.release_after_answer(call)


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
