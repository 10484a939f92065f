"""engine.threads: the process's worker threads (the fresh stacks' starter, the gzip workers), started at import
and again in a forked process; where a forked process cannot start them, a call that needs them fails at once
with a message instead of waiting for a thread that never runs."""

import multiprocessing
import os
import threading

from engine.threads import Workers

RECURSION = "def f(n):\n    if n > 0:\n        return f(n - 1)\n    return 0\nf(1500)\nL = Value(1.0)\nL.backward()"


def test_workers_serve_what_is_put_and_start_again_in_a_forked_process():
    served = []
    workers = Workers("valuegraph test", lambda items: served.append(items.get()), count=2)
    workers.put("one")
    workers.put("two")
    for thread in threading.enumerate():
        if thread.name == "valuegraph test":
            thread.join(10)
    assert sorted(served) == ["one", "two"]

    def in_child(answer):
        mine = []
        child_workers = Workers("valuegraph child", lambda items: mine.append(items.get()))
        child_workers.put(os.getpid())
        next(t for t in threading.enumerate() if t.name == "valuegraph child").join(10)
        answer.send(mine == [os.getpid()])

    assert _in_a_forked_process(in_child) is True


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
    assert "no valuegraph thread starter thread could be started" in recursion, recursion
    assert "no valuegraph gzip thread could be started" in gzip, gzip


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
