"""Threads that serve a queue for the whole process: started at import, never inside a call that a time budget
may stop, and started again in a forked process (a job's), which keeps only the thread that forked.

Why never inside such a call: a server stops a request's thread that outlives its time budget by raising an
exception in it by its thread id (PyThreadState_SetAsyncExc, which raises it in the first thread it finds with
that id), and until a new thread runs, CPython gives it the id of the thread that started it. Started by the
request's thread, the new thread could take the exception meant for the request, die before it runs, and leave
the request's thread waiting for it to start, for ever."""

import os
import queue
import threading


class Workers:
    """`count` daemon threads named `name`, each running serve(queue) on one queue; put(item) hands them an item.
    Where they could not be started again in a forked process, put raises instead of leaving the item unserved."""

    def __init__(self, name: str, serve, count: int = 1):
        self._name, self._serve, self._count = name, serve, count
        self._start()
        os.register_at_fork(after_in_child=self._start_in_child)

    def _start(self):
        self._queue = queue.SimpleQueue()
        self._failed = None
        for _ in range(self._count):
            threading.Thread(target=self._serve, args=(self._queue,), name=self._name, daemon=True).start()

    def _start_in_child(self):
        try:
            self._start()
        except BaseException as error:  # a limit on threads or memory: an at-fork hook's error is only printed
            self._failed = error

    def put(self, item) -> None:
        if self._failed is not None:
            raise RuntimeError(f"{self._name}: no thread could be started in this process ({self._failed})")
        self._queue.put(item)
