"""A body over the size limit always gets its whole 413 (issue 23 §2, issue 27 finding 4), over a
real socket, with `valuegraph serve` and with plain `uvicorn app.main:app`: bodies of 1.2, 12
and 120 MB, each sent on a connection that has just been answered 200, 400, 422 or 429. Closing
while the client still sends would make the kernel reset the connection and destroy the answer;
the server reads and drops the rest first (a lingering close). A chunked body is answered as soon
as it passes the limit."""

import time

import httpx
import pytest
from realservers import app_server, valuegraph_server

LIMIT_MESSAGE = "the request body is larger than the limit of 1,000,000 bytes"
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
