"""Two bounds around every request: its body's size and its time.

BodySizeLimit rejects a body over the size limit with 413 before anything parses it. Both the
declared Content-Length and the bytes actually received count: a chunked body has no
Content-Length, and a client can send more than it declared. The body is read here (it is
small, by this very limit) and replayed to the app. A graph posted whole (POST /backward with
`graph`) has a limit of its own, some 380 bytes a node: a body there past the general limit is
read on only if its start names a `graph` (every other field of a request is small, bounded by
its own limit); the route refuses one that then turns out to carry none.

An oversized body is answered at once, as soon as it passes the limit (a chunked one too), but
the answer is finished only after the rest of the body is read and dropped: a server that closes
with request bytes still coming makes the kernel reset the connection, and the reset destroys the
answer the client had not read yet (as nginx's lingering_close and Apache avoid). A declared body
up to max_discard_bytes is read whole and the connection stays open; a larger or chunked one gets
`Connection: close`, the connection's writing side is shut down once the 413 has left (the client
sees the end of the stream), and the body is read for at most linger_seconds and max_linger_bytes,
then the connection is closed.

RequestBudget holds the whole request, body reading, validation, work and answer, to the time
budget: past it, a 503 with Retry-After if nothing was sent yet, else the connection is cut. Every
answer it holds says in Server-Timing (`app;dur=<ms>`) how long it took from the request's arrival.
Static files are exempt, and so are a job's graph (GET /runs/{id}/graph: it re-runs a job's
program, bounded by the job limits instead, VALUEGRAPH_JOB_*, in a worker process) and its events
(a stream as long as the job).
"""

import asyncio
import json
import socket

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .budget import TimeBudgetExceeded, collector_paused, request_deadline

STATIC_PREFIX = "/static/"
# A body this large is the JSON of some 10,000 records or more (a graph posted whole): the framework
# parses and validates it into a million objects before any work starts, and the cyclic collector
# would rescan them all as they grow. They hold no cycles, so it is paused for the whole request, as
# the work itself pauses it (app.budget). Measured on a 100,000-node graph (16 MB), two cores at load
# 14: 11.4-12.5 s with the collector on, 6.1-7.3 s paused (benchmarks/bench_graph.py).
PAUSE_COLLECTOR_FROM_BYTES = 1_000_000


def _outside_budget(scope: Scope) -> bool:
    path = scope["path"]
    # Static files: a large one to a slow network legitimately takes longer.
    return path.startswith(STATIC_PREFIX) or (
        scope["method"] == "GET" and path.startswith("/runs/") and path.endswith(("/graph", "/events"))
    )


class RequestBudget:
    def __init__(self, app: ASGIApp, seconds: float, retry_after: int):
        self.app = app
        self.seconds = seconds
        self.retry_after = retry_after

    async def __call__(self, scope: Scope, receive: Receive, send: Send):
        if scope["type"] != "http" or _outside_budget(scope):
            return await self.app(scope, receive, send)
        started = False

        async def send_tracked(message: Message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                # Server-Timing: how long the answer took in the app (a page reads it in Resource Timing)
                message = {**message, "headers": [*message.get("headers", ()), _server_timing(deadline.elapsed())]}
            await send(message)

        with request_deadline(self.seconds) as deadline:  # on leaving, after any 503: its stopped work is freed
            with anyio.CancelScope(deadline=deadline.ends) as cancel:
                await self.app(scope, receive, send_tracked)
            if cancel.cancelled_caught and not started:
                message = str(TimeBudgetExceeded(self.seconds))
                headers = [(b"retry-after", str(self.retry_after).encode()), _server_timing(deadline.elapsed())]
                await _send_json(send, 503, {"detail": {"message": message}}, headers)


GRAPH_PATHS = frozenset({("POST", "/backward")})  # where a request may carry a graph posted whole
GRAPH_KEY = b'"graph"'
# Where every body is a graph (children lists): the page lays out a big graph's views there, the
# whole graph's too (about 14 bytes a node: 1.4 MB at 100,000 nodes), so the graph limit applies.
LAYOUT_PATHS = frozenset({("POST", "/layout")})


def body_limit_message(max_bytes: int, graph_max_bytes: int | None = None) -> str:
    """The 413's message for a body over the general limit; with graph_max_bytes, where a graph could be posted."""
    message = f"the request body is larger than the limit of {max_bytes:,} bytes (VALUEGRAPH_MAX_BODY_BYTES)"
    if graph_max_bytes is None:
        return message
    return f"{message}; a body with a `graph` may have up to {graph_max_bytes:,} (VALUEGRAPH_MAX_GRAPH_BODY_BYTES)"


def graph_body_limit_message(graph_max_bytes: int, body: str = "a body with a `graph`") -> str:
    return (
        f"the request body is larger than the limit of {graph_max_bytes:,} bytes for {body} "
        "(VALUEGRAPH_MAX_GRAPH_BODY_BYTES)"
    )


class BodySizeLimit:
    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        max_graph_bytes: int,
        max_discard_bytes: int,
        linger_seconds: float,
        max_linger_bytes: int,
    ):
        self.app = app
        self.max_bytes = max_bytes
        self.max_graph_bytes = max(max_graph_bytes, max_bytes)
        self.max_discard_bytes = max_discard_bytes
        self.linger_seconds = linger_seconds
        self.max_linger_bytes = max_linger_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        scope[TRANSPORT] = _transport(receive)  # the replay below hides it from the app
        route = (scope["method"], scope["path"])
        may_carry_graph = route in GRAPH_PATHS and self.max_graph_bytes > self.max_bytes
        if route in LAYOUT_PATHS:
            first_limit = self.max_graph_bytes
            general = graph_body_limit_message(self.max_graph_bytes, "a graph to lay out")
        else:
            first_limit = self.max_bytes
            general = body_limit_message(self.max_bytes, self.max_graph_bytes if may_carry_graph else None)
        declared = _content_length(scope)
        if declared is not None and declared > (self.max_graph_bytes if may_carry_graph else first_limit):
            return await self._reject(receive, send, 0, declared, general)

        chunks, size, limit = [], 0, first_limit
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                if limit == self.max_bytes and may_carry_graph and GRAPH_KEY in b"".join(chunks) + chunk:
                    limit = self.max_graph_bytes  # a graph: read on, to its own limit
                else:
                    over = general if limit == first_limit else graph_body_limit_message(self.max_graph_bytes)
                    finished = not message.get("more_body", False)
                    return await self._reject(receive, send, size, declared, over, finished)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break

        body = {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        async def replay() -> Message:
            nonlocal body
            if body is not None:
                message, body = body, None
                return message
            return await receive()

        if size < PAUSE_COLLECTOR_FROM_BYTES:
            return await self.app(scope, replay, send)
        with collector_paused():  # from reading its JSON on: see PAUSE_COLLECTOR_FROM_BYTES
            await self.app(scope, replay, send)

    async def _reject(
        self, receive: Receive, send: Send, received: int, declared: int | None, message: str, finished=False
    ):
        """The whole 413 at once; its end after the rest of the body is read and dropped (see above).
        finished: the body's last bytes are already read (receiving more would wait for the client to leave)."""
        keep_open = declared is not None and declared <= self.max_discard_bytes
        body = json.dumps({"detail": {"message": message}}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers + ([] if keep_open else [CLOSE])})
        await send({"type": "http.response.body", "body": body, "more_body": True})
        limit = self.max_discard_bytes if keep_open else self.max_linger_bytes
        try:
            # Shielded: the client has its answer; the request's time budget is not what bounds this.
            with anyio.CancelScope(shield=True), anyio.move_on_after(self.linger_seconds):
                if not keep_open:
                    await _stop_writing(receive)
                while received <= limit and not finished:
                    message = await receive()
                    if message["type"] != "http.request":  # the client went away
                        break
                    received += len(message.get("body", b""))
                    if not message.get("more_body", False):
                        break
        finally:
            with anyio.CancelScope(shield=True):
                await send({"type": "http.response.body", "body": b"", "more_body": False})


CLOSE = (b"connection", b"close")


TRANSPORT = "valuegraph.transport"  # scope key: the connection's transport (see BodySizeLimit), or None


def _transport(receive: Receive) -> asyncio.Transport | None:
    """The connection's transport. uvicorn gives the app no way to reach it, but its protocols (h11,
    httptools, and `valuegraph serve`'s own) keep it on the object whose receive() the app is given.
    Elsewhere (an in-process client) None."""
    transport = getattr(getattr(receive, "__self__", None), "transport", None)
    return transport if isinstance(transport, asyncio.Transport) else None


async def answer_sent(scope: Scope) -> None:
    """Returns once the bytes written so far have left the server (at once when it cannot tell).
    Work that holds the interpreter lock for long, such as freeing a large graph, waits for this:
    the event loop needs the lock to hand each piece of a large answer to the socket."""
    transport = scope.get(TRANSPORT)
    if transport is not None:
        await _drained(transport)


async def _drained(transport: asyncio.Transport) -> None:
    while transport.get_write_buffer_size() and not transport.is_closing():
        await anyio.sleep(0.01)


async def _stop_writing(receive: Receive) -> None:
    """Shut down the connection's writing side (FIN) once the answer has left, while its reading
    side still drops the rest of the body: the client reads the whole 413 and then the end of the
    stream, so it knows at once that nothing more comes and can stop sending.

    The socket is shut down directly, not with transport.write_eof(): after that, asyncio refuses
    even the empty write that ends the answer."""
    transport = _transport(receive)
    sock = None if transport is None else transport.get_extra_info("socket")
    if sock is None:
        return
    await _drained(transport)  # the answer's bytes first
    if not transport.is_closing():
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:  # the client is already gone
            pass


def _server_timing(seconds: float) -> tuple[bytes, bytes]:
    return b"server-timing", f"app;dur={seconds * 1000:.1f}".encode()


async def _send_json(send: Send, status: int, content: dict, headers: list[tuple[bytes, bytes]]):
    body = json.dumps(content).encode()
    start_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": start_headers})
    await send({"type": "http.response.body", "body": body})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the server rejects a malformed header before we see it
    return None
