"""A body over the size limit always gets its whole 413 (issue 23 §2, issue 27 finding 4), over a
real socket, with `valuegraph serve` and with plain `uvicorn app.main:app`: bodies of 1.2, 12
and 120 MB, each sent on a connection that has just been answered 200, 400, 422 or 429. Closing
while the client still sends would make the kernel reset the connection and destroy the answer;
the server reads and drops the rest first (a lingering close), having shut down its writing side
so the client sees the end of the stream at once. A chunked body is answered as soon as it passes
the limit."""

import json
import socket
import time

import httpx
import pytest
from realservers import app_server, valuegraph_server

LIMIT_MESSAGE = (  # on POST /backward, where a graph may be posted whole
    "the request body is larger than the limit of 1,000,000 bytes (VALUEGRAPH_MAX_BODY_BYTES); a body with a "
    "`graph` may have up to 20,000,000 (VALUEGRAPH_MAX_GRAPH_BODY_BYTES)"
)
SIZES = {"1.2 MB": 1_200_000, "12 MB": 12_000_000, "120 MB": 120_000_000}
BEFORE = {
    200: ("/backward", {"expression": "a = 2; L = a * a"}),
    400: ("/backward", {"expression": "a = ("}),
    422: ("/backward", {"expression": 5}),
    429: ("/rooms", {"state": {"expression": "a = 2"}}),  # the address made its one room an hour
}


@pytest.fixture(scope="module", params=["valuegraph serve", "uvicorn app.main:app"])
def server(request):
    start = valuegraph_server if request.param == "valuegraph serve" else app_server
    with start(room_creations_per_hour=1) as running:
        assert httpx.post(f"{running.url}/rooms", json=BEFORE[429][1]).status_code == 200
        yield running


@pytest.fixture(scope="module")
def bodies():
    return {name: b"x" * size for name, size in SIZES.items()}


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("status", BEFORE)
def test_a_large_body_gets_the_whole_413_after_any_answer_on_the_same_connection(server, bodies, size, status):
    path, body = BEFORE[status]
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert client.post(path, json=body).status_code == status
        answer = client.post("/backward", content=bodies[size], headers={"content-type": "application/json"})
        assert answer.status_code == 413
        assert answer.json() == {"detail": {"message": LIMIT_MESSAGE}}
        if SIZES[size] > 10_000_000:  # past VALUEGRAPH_MAX_DISCARD_BYTES: the connection ends after it
            assert answer.headers["connection"] == "close"
        else:  # read whole: the connection serves the next request
            assert "connection" not in answer.headers
            assert client.post(*BEFORE[200][:1], json=BEFORE[200][1]).status_code == 200


def test_a_chunked_body_is_answered_as_soon_as_it_passes_the_limit(server):
    sent = []

    def slow_body():
        yield b"x" * 1_100_000  # over the limit at once ...
        sent.append(time.monotonic())
        time.sleep(3)  # ... then the client dawdles longer than the 2 s budget
        yield b"x"

    with httpx.Client(base_url=server.url, timeout=30) as client:
        with client.stream("POST", "/backward", content=slow_body()) as answer:
            answered = time.monotonic()
            assert answer.status_code == 413
            assert answer.headers["connection"] == "close"
            assert answer.read() == f'{{"detail": {{"message": "{LIMIT_MESSAGE}"}}}}'.encode()
    assert answered - sent[0] < 4


def read_answer(sock: socket.socket) -> tuple[bytes, bytes]:
    """The head and body of one answer with a Content-Length, read from a raw socket."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, body = data.split(b"\r\n\r\n", 1)
    length = int(
        next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")).split(b":")[1]
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head, body


@pytest.mark.parametrize("framing", ["chunked", "declared 50 MB"])
def test_the_413_is_followed_by_the_end_of_the_stream_while_the_server_still_reads(server, framing):
    """A client that reads the 413 and goes on sending sees the end of the stream (the server shut
    down its writing side: FIN) and can still send: the server reads and drops the rest, and only
    closes later (an early close would reset the connection, and the next send would fail)."""
    chunk = b"x" * 65536
    framed = b"%x\r\n%s\r\n" % (len(chunk), chunk) if framing == "chunked" else chunk
    length = b"Transfer-Encoding: chunked" if framing == "chunked" else b"Content-Length: 50000000"
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
        sock.sendall(b"POST /backward HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + length + b"\r\n\r\n")
        for _ in range(20):  # 1.3 MB: past the limit
            sock.sendall(framed)
        head, body = read_answer(sock)
        assert head.startswith(b"HTTP/1.1 413 ") and b"connection: close" in head.lower()
        assert json.loads(body) == {"detail": {"message": LIMIT_MESSAGE}}
        assert sock.recv(65536) == b""  # the end of the stream, with the body still coming
        for _ in range(40):  # 2.6 MB more, past what the sockets' buffers hold: the server reads them
            sock.sendall(framed)
        time.sleep(0.5)
        sock.sendall(framed)  # still accepted: no reset


@pytest.mark.parametrize("bound", [{"linger_seconds": 1}, {"max_linger_bytes": 3_000_000}])
def test_the_server_stops_reading_past_the_linger_bounds(bound):
    """Past VALUEGRAPH_LINGER_SECONDS or VALUEGRAPH_MAX_LINGER_BYTES the server closes: a client
    that never stops sending is reset, not read for ever."""
    chunk = b"x" * 65536
    with app_server(**bound) as running, socket.create_connection(("127.0.0.1", running.port), timeout=20) as sock:
        sock.sendall(b"POST /backward HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
        sock.sendall(b"Content-Length: 1000000000\r\n\r\n")
        with pytest.raises((ConnectionResetError, BrokenPipeError)):
            for _ in range(15_000):  # 1 GB, at most; the sends end long before
                sock.sendall(chunk)
                if "linger_seconds" in bound:
                    time.sleep(0.002)
