"""Connection limits uvicorn lacks: a client that connects and sends nothing, sends its headers
a byte at a time, or its body slowly (slowloris) held a socket, and a file descriptor, forever:
uvicorn's keep-alive timeout starts only after a first answer. This protocol, uvicorn's h11 one
plus two timers and a cap, drops such connections (`valuegraph serve` uses it):

- timeout_headers: from connecting, or from the end of the last answer, to a request's complete
  headers (covers idle and slow-header connections);
- timeout_body: from the headers to the end of the body;
- max_connections: open connections per process; one more is closed at once.

The keep-alive timeout (idle after an answer) and the concurrency limit (503 past it) are
uvicorn's own settings, passed through.
"""

import asyncio
from functools import partial

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


class LimitedH11Protocol(H11Protocol):
    def __init__(self, *args, timeout_headers: float, timeout_body: float, max_connections: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.timeout_headers = timeout_headers
        self.timeout_body = timeout_body
        self.max_connections = max_connections
        self._request_timer: asyncio.TimerHandle | None = None
        self._waiting_for = None  # h11's state of the client while a timer runs

    def connection_made(self, transport):
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            self.logger.warning("more than %d connections open; closing a new one", self.max_connections)
            transport.close()
            return
        self._start_timer(self.timeout_headers)

    def connection_lost(self, exc):
        self._stop_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow_the_request()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._start_timer(self.timeout_headers)  # the next request's headers
            self._follow_the_request()  # a pipelined request may already be in

    def _follow_the_request(self):
        state = self.conn.their_state
        if state is h11.SEND_BODY and self._waiting_for is not h11.SEND_BODY:
            self._start_timer(self.timeout_body)
        elif state not in (h11.IDLE, h11.SEND_BODY):  # the whole request is in: the app's turn
            self._stop_timer()
        if self._request_timer is not None:
            self._waiting_for = state

    def _start_timer(self, seconds: float):
        self._stop_timer()
        self._waiting_for = self.conn.their_state
        self._request_timer = self.loop.call_later(seconds, self._too_slow)

    def _stop_timer(self):
        if self._request_timer is not None:
            self._request_timer.cancel()
            self._request_timer = None
        self._waiting_for = None

    def _too_slow(self):
        self._request_timer = None
        if not self.transport.is_closing():
            if self.cycle is not None and not self.cycle.response_complete:
                self.cycle.disconnected = True  # the app's receive() answers http.disconnect
                self.cycle.message_event.set()
            self.transport.close()


def limited_protocol(timeout_headers: float, timeout_body: float, max_connections: int):
    """The class to give uvicorn.Config(http=...); a partial, so it pickles for --workers."""
    return partial(
        LimitedH11Protocol, timeout_headers=timeout_headers, timeout_body=timeout_body, max_connections=max_connections
    )
