"""Every route ends within its time budget plus 0.2 s (issue 27): programs made to sit past the
budget, one per kind of work (printing, building text, layout, a large answer, the exported file,
the SCORM package, POST /layout), against a real `uvicorn app.main:app` with a budget of 0.5 s.

How the timing stays honest on a loaded machine: the time asserted is the server's own, in the
503's Server-Timing header (from receiving the request to sending the answer), so a client that
is slow to send or to read does not count. What the machine's load adds is measured, not
guessed: the run-queue wait of the server's threads (the kernel's schedstat) from the moment the
budget can have run out until the answer, the CPU time the machine withheld when the server
was ready to run. The bound is budget + 0.2 s + that wait: on a quiet machine the wait is about
0, and the test is the issue's bound as it stands.

The interpreter's part is checked without a clock: a program's print, f-strings and
comprehensions leave no reference cycles, which the paused collector let pile up by the million
and then collected past the budget."""

import random
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import anyio
import pytest
from realservers import app_server, timed_past_budget

from app.budget import TimeBudgetExceeded, request_deadline, run_within_budget
from engine.limits import Limits
from engine.python.run import run_python

ROOT = Path(__file__).resolve().parent.parent
BUDGET = 0.5
OVERRUN = 0.2  # the bound past the budget
MESSAGE = f"the request took longer than its time budget of {BUDGET:g} s and was stopped; try a smaller program"


def chain(iterations: int) -> str:
    """A program that builds 4 nodes an iteration, quickly: the time goes to what comes after."""
    return f"x = Value(1.0)\nfor i in range({iterations}):\n    x = x * 1.0001 + 0.5\nx.backward()\n"


# Each takes several times the budget on a quiet machine, in the part named.
ROUTES = {
    "printing": ("/backward", {"json": {"expression": "while True:\n    print('a line of text', [1, 2, (3, 4)])\n"}}),
    "building text": (
        "/backward",
        {"json": {"expression": "text = 'ab' * 50000\nwhile True:\n    text = text.replace('ab', 'ba')\n"}},
    ),
    "layout": ("/backward", {"json": {"expression": chain(20_000), "layout": True}}),
    "a large answer": ("/backward", {"json": {"expression": chain(40_000)}}),
    "the exported file": ("/export/html", {"json": {"expression": chain(20_000)}}),
    "the SCORM package": ("/export/scorm", {"json": {"expression": chain(20_000)}}),
    "POST /layout": ("/layout", {"json": {"children": [[], [0]] + [[i - 1, i - 2] for i in range(2, 60_000)]}}),
}


@pytest.fixture(scope="module")
def server():
    with app_server(time_budget=BUDGET) as running:
        yield running


@pytest.mark.parametrize("kind", ROUTES)
def test_every_route_answers_503_within_the_budget_and_a_fifth_of_a_second(server, kind):
    path, request = ROUTES[kind]
    timed = timed_past_budget(server, BUDGET, "POST", path, **request)
    assert timed.response.status_code == 503, timed.response.text[:300]
    assert timed.response.json() == {"detail": {"message": MESSAGE}}
    assert timed.response.headers["retry-after"] == "2"
    bound = BUDGET + OVERRUN + timed.withheld_seconds
    assert BUDGET <= timed.server_seconds <= bound, (
        f"answered after {timed.server_seconds:.3f} s (server's time); the bound with the machine's load "
        f"was {bound:.3f} s ({timed.withheld_seconds:.3f} s of run-queue wait)"
    )


def test_the_server_still_answers_after_a_stopped_request(server):
    path, request = ROUTES["printing"]
    assert timed_past_budget(server, BUDGET, "POST", path, **request).response.status_code == 503
    answer = timed_past_budget(server, BUDGET, "POST", "/backward", json={"expression": "a = 2; L = a * a"})
    assert answer.response.status_code == 200 and answer.response.json()["nodes"][-1]["data"] == 4
    # Every answer says how long it took in the app: here less than the budget, and more than nothing.
    assert answer.response.headers["server-timing"].startswith("app;dur=")
    assert 0 < answer.server_seconds < BUDGET


LOOPS = {
    "print": "    print(i, 'x', [i, (i, 2)], {'k': i})\n",
    "f-string": "    s = f'{i} and {i * 2:.3f} {[i]!r}'\n",
    "str()": "    s = str([i, i]) + repr((i,))\n",
    "list comprehension": "    xs = [j * 2 for j in range(3) if j]\n",
    "nested comprehension": "    xs = {j: [k for k in range(j)] for j in range(3)}\n",
    "generator expression": "    s = sum(j for j in range(3))\n",
}


# Run in a fresh interpreter: the suite's own process holds the browser tests' Playwright greenlets,
# and a full collection there may finalize one, which switches into Playwright's event loop for good.
GARBAGE = """import gc, sys
from engine.python.run import run_python
program = sys.stdin.read()
gc.collect()
gc.disable()  # as while a request runs (app.budget.collector_paused)
run_python(program)
print(gc.collect())
"""


def cyclic_garbage(program: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", GARBAGE], input=program, capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_loop_leaves_no_reference_cycles_behind(loop):
    """The garbage a run leaves for the cyclic collector does not grow with the iterations (it
    grew by 24 objects a print, 12 an f-string and 5 a comprehension)."""
    short, long = (f"for i in range({n}):\n" + LOOPS[loop] + "L = Value(1.0)\n" for n in (100, 1_000))
    assert cyclic_garbage(long) == cyclic_garbage(short)


class Built:
    """Stands for a graph a request built."""


def wait_for(condition, what: str, seconds: float = 30):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


@pytest.mark.anyio
async def test_a_stopped_call_frees_what_it_built_only_once_its_503_is_sent():
    """Freeing takes the interpreter lock that sending the 503 needs: a stopped worker thread
    waits, without the lock, holding what it built, until the request is answered."""
    built, thread = [], []

    def work():
        thing = Built()
        built.append(weakref.ref(thing))
        thread.append(threading.get_ident())
        while True:
            pass

    def waiting() -> bool:  # the worker thread is stopped and waits to be released
        frame = sys._current_frames().get(thread[0])
        return frame is not None and frame.f_code.co_name == "wait"

    with request_deadline(60):
        with anyio.move_on_after(0.2):  # as RequestBudget cancels at the request's deadline
            await run_within_budget(work, seconds=60, limiter=anyio.CapacityLimiter(1))
        await anyio.to_thread.run_sync(wait_for, lambda: thread and waiting(), "the worker was not stopped")
        assert built[0]() is not None  # not freed before the answer
    await anyio.to_thread.run_sync(wait_for, lambda: built[0]() is None, "not freed after the answer")


@pytest.mark.anyio
async def test_a_task_a_request_left_running_has_a_budget_of_its_own():
    """A task started inside a request keeps the request's context: once the request is answered,
    its work is bounded by its own budget, not left without one."""
    answered, outcome = anyio.Event(), []

    def spin():
        while True:
            pass

    async def later():
        await answered.wait()
        try:
            await run_within_budget(spin, seconds=0.2, limiter=anyio.CapacityLimiter(1))
        except TimeBudgetExceeded:
            outcome.append("503")

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tasks:
            with request_deadline(60):
                tasks.start_soon(later)
            answered.set()
    assert outcome == ["503"]


# A thread being started carries the id of the thread that starts it until it runs, and the budget
# stops a call's thread by its id: a thread started by a call the budget may stop can take the stop
# meant for the call, die before it runs and leave the call waiting for it to start, for ever.
RECURSION = "def f(n):\n    if n > 0:\n        return f(n - 1)\n    return 0\n"


def threads_started_during(work, monkeypatch) -> list:
    """(name, the id of the thread that started it) of each thread started while `work()` ran."""
    started, start = [], threading.Thread.start

    def recorded_start(thread):
        started.append((thread.name, threading.get_ident()))
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", recorded_start)
    work()
    monkeypatch.undo()
    return started


def test_a_deep_recursion_starts_its_fresh_stacks_from_another_thread(monkeypatch):
    runner, ran = [], []

    def run():  # in a thread of its own, as the budget runs a request's call
        runner.append(threading.get_ident())
        ran.append(run_python(RECURSION + "f(1500)\nL = Value(1.0)\nL.backward()"))

    def run_in_a_thread():
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()

    started = threads_started_during(run_in_a_thread, monkeypatch)
    assert ran, "the program ran"
    fresh_stacks = [starter for name, starter in started if name == "valuegraph program"]
    assert len(fresh_stacks) >= 2, "the recursion moved to fresh stacks"
    assert runner[0] not in fresh_stacks


# In a fresh interpreter: the suite's own has long started every gzip worker a pool would start lazily.
COMPRESSES = """import threading
from app import compression
started, start = [], threading.Thread.start
threading.Thread.start = lambda thread: (started.append(threading.get_ident()), start(thread))[1]
with compression.GzipWriter() as out:
    out.write(b"a big answer" * 500_000)
    assert len(out.getvalue()) < 100_000
print(started.count(threading.get_ident()))
"""


def test_a_big_answer_is_compressed_without_starting_a_thread():
    done = subprocess.run([sys.executable, "-c", COMPRESSES], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "0"


def program_threads() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name == "valuegraph program")


def within(seconds: float, work):
    """work()'s result, run in a thread of its own; fails past `seconds` (a hang) rather than waiting for ever."""
    outcome = []

    def run():
        try:
            outcome.append((True, work()))
        except BaseException as error:
            outcome.append((False, error))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"still running after {seconds} s"
    finished, value = outcome[0]
    if not finished:
        raise value
    return value


def test_a_call_handed_to_a_fresh_stack_runs_though_the_stack_is_closed_at_once():
    from engine.python.calls import FreshStack

    stack = FreshStack()
    stack.start()
    stack.calls.put((lambda x: x * 2, (21,)))
    stack.close()  # as a stopped run closes its stacks while a call it handed over has not begun
    assert within(30, lambda: stack.wait(False, lambda: None)) == 42


def test_a_stopped_run_moves_no_call_to_a_fresh_stack():
    from engine.python.state import State

    state = State(Limits(), 0, None)
    state.stop()
    with pytest.raises(Exception, match="statements"):
        state.on_fresh_stack(lambda: None)
    assert state.stacks == []


class StopInClose(BaseException):
    """Stands for the budget's stop landing as the run closes its stacks."""


def test_a_stop_that_lands_as_the_run_closes_its_stacks_leaves_no_thread(monkeypatch):
    from engine.python.calls import FreshStack

    close, landed = FreshStack.close, []

    def stopped_once(stack):
        if not landed:
            landed.append(stack)
            raise StopInClose
        close(stack)

    monkeypatch.setattr(FreshStack, "close", stopped_once)
    before = program_threads()
    with pytest.raises(StopInClose):
        within(60, lambda: run_python(RECURSION + "f(1500)\nL = Value(1.0)\nL.backward()"))
    assert landed, "the run used fresh stacks"
    wait_for(lambda: program_threads() <= before, "a stack the stop interrupted is never closed")


def test_a_thread_that_cannot_start_fails_the_deep_call_and_the_next_run_still_runs(monkeypatch):
    start, refused = threading.Thread.start, []

    def refuse_once(thread):
        if thread.name == "valuegraph program" and not refused:
            refused.append(thread)
            raise RuntimeError("can't start new thread")
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", refuse_once)
    program = RECURSION + "f(1500)\nL = Value(1.0)\nL.backward()"
    with pytest.raises(Exception, match="can't start new thread"):
        within(60, lambda: run_python(program))
    assert refused
    assert within(60, lambda: run_python(program)) is not None


@pytest.mark.anyio
async def test_runs_stopped_at_any_moment_of_a_deep_recursion_leave_no_thread_behind():
    """Stopped on the way down, at the bottom and on the way up, over and over, at random moments (a net
    under the tests above: on the code before them it failed about half the time)."""

    before = program_threads()
    draw = random.Random(45)
    limits = Limits(max_statements=10**12)
    for _ in range(30):
        program = RECURSION + f"while True:\n    f({draw.randint(200, 1500)})"
        with pytest.raises(TimeBudgetExceeded):
            await run_within_budget(
                run_python, program, limits, seconds=draw.uniform(0.002, 0.06), limiter=anyio.CapacityLimiter(1)
            )
    await anyio.to_thread.run_sync(wait_for, lambda: program_threads() <= before, "a stopped run left a thread behind")
