"""engine.threads: the process's worker threads (the fresh stacks' starter, the gzip workers), started at import
and again in a forked process; where a forked process cannot start them, a call that needs them fails at once
with a message instead of waiting for a thread that never runs."""

import multiprocessing
import os
import queue
import threading

from engine.threads import Workers

RECURSION = "def f(n):\n    if n > 0:\n        return f(n - 1)\n    return 0\nf(1500)\nL = Value(1.0)\nL.backward()"


def _serve_then_fork(answer):
    """In a forked process (so that the hook Workers registers ends with it): workers serve what is put, and
    serve again in a process forked from this one."""
    served = queue.SimpleQueue()
    workers = Workers("valuegraph test", lambda items: served.put((os.getpid(), items.get())), count=2)
    workers.put("one")
    workers.put("two")
    outcomes = [sorted(served.get(timeout=10)[1] for _ in range(2))]
    child = os.fork()
    if child == 0:  # the grandchild: its workers were started again by the hook
        workers.put("three")
        os._exit(0 if served.get(timeout=10) == (os.getpid(), "three") else 1)
    outcomes.append(os.waitpid(child, 0)[1])
    answer.send(outcomes)


def test_workers_serve_what_is_put_and_start_again_in_a_forked_process():
    assert _in_a_forked_process(_serve_then_fork) == [["one", "two"], 0]


def _fail_forked_programs(answer):
    """In a forked process whose workers could not start: a deep recursion and a gzip answer fail at once."""
    from app import compression
    from engine.errors import ProgramError
    from engine.python.run import run_python

    outcomes = []
    try:
        run_python(RECURSION)
        outcomes.append("ran")
    except ProgramError as error:  # placed at the call that moved to a fresh stack
        outcomes.append(str(error))
    try:
        with compression.GzipWriter() as out:
            out.write(b"an answer" * 300_000)
            out.getvalue()
        outcomes.append("compressed")
    except RuntimeError as error:
        outcomes.append(str(error))
    answer.send(outcomes)


def test_a_forked_process_that_cannot_start_its_threads_fails_the_calls_that_need_them():
    import app.compression  # noqa: F401  (its workers and the thread starter exist before the fork)
    import engine.python.calls  # noqa: F401

    parent = os.getpid()
    start = threading.Thread.start

    def start_in_parent_only(thread):  # the child's at-fork hooks find no thread can be started
        if os.getpid() != parent:
            raise RuntimeError("can't start new thread")
        return start(thread)

    threading.Thread.start = start_in_parent_only
    try:
        outcomes = _in_a_forked_process(_fail_forked_programs)
    finally:
        threading.Thread.start = start
    assert outcomes is not None, "the child answered instead of waiting for ever"
    recursion, gzip = outcomes
    assert recursion.startswith("3:16: the program calls too deeply to run here"), recursion
    assert "valuegraph thread starter: no thread could be started in this process" in recursion, recursion
    assert "valuegraph gzip: no thread could be started in this process" in gzip, gzip


def _in_a_forked_process(target):
    """What target(connection) sends from a forked process, or None if it sends nothing within 60 s."""
    fork = multiprocessing.get_context("fork")
    receiving, sending = fork.Pipe(duplex=False)
    child = fork.Process(target=target, args=(sending,))
    child.start()
    try:
        return receiving.recv() if receiving.poll(60) else None
    finally:
        child.join(10)
        if child.is_alive():
            child.kill()
