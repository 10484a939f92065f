"""Teach live through a Redis outage (issue 27, finding 2), with Debian's redis-server killed with
-9 and started again on its port, and the ASGI app in this process: room routes answer 503 with
Retry-After and a message (never 500), joins close with 1013 and a reason, /readyz says so while
/healthz stays 200, a stale pooled connection is retried once, hubs subscribe again and push the
current state, and a room Redis lost is made again by its teacher under the same code."""

import asyncio
import tempfile

import httpx
import pytest
from asgi_socket import AsgiSocket
from realservers import RedisServer

from app.config import Settings
from app.main import create_app

pytestmark = pytest.mark.anyio
PROGRAM = "a = 2; b = 3; c = a * b; L = c + a"  # steps 0..13


@pytest.fixture
async def redis():
    with tempfile.TemporaryDirectory() as directory:
        server = RedisServer(directory)
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture
async def app(redis):
    app = create_app(Settings(redis_url=redis.url, redis_retry_seconds=0.5, room_creations_per_hour=100))
    try:
        yield app
    finally:
        await app.state.classroom.close()


@pytest.fixture
async def http(app):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as client:
        yield client


async def new_room(http, **extra) -> httpx.Response:
    return await http.post("/rooms", json={"state": {"expression": PROGRAM}, **extra})


async def test_while_redis_is_down_room_routes_answer_503_with_retry_after_and_readyz_too(redis, http):
    room = (await new_room(http)).json()
    assert (await http.get("/readyz")).json() == {"status": "ready", "message": None}
    redis.kill()
    for _ in range(4):
        answer = await new_room(http)
        assert answer.status_code == 503, answer.text
        assert int(answer.headers["retry-after"]) >= 1
        assert "Redis" in answer.json()["detail"]["message"]
    assert (await http.get(f"/rooms/{room['code']}/qr.svg")).status_code == 503
    ready = await http.get("/readyz")
    assert ready.status_code == 503 and "retry-after" in ready.headers
    assert (await http.get("/healthz")).status_code == 200  # liveness: the process itself is fine
    redis.start()
    await asyncio.sleep(0.6)  # the breaker's 0.5 s
    assert (await new_room(http)).status_code == 200
    assert (await http.get("/readyz")).status_code == 200


async def test_a_pooled_connection_gone_stale_in_a_restart_is_retried_once(redis, http):
    assert (await new_room(http)).status_code == 200
    redis.kill()
    redis.start()  # every pooled connection now points at a dead socket
    for _ in range(3):
        answer = await new_room(http)
        assert answer.status_code == 200, answer.text


async def test_a_join_while_redis_is_down_is_closed_with_1013_and_a_reason(redis, app, http):
    room = (await new_room(http)).json()
    redis.kill()
    socket = await AsgiSocket(app).connect()
    await socket.send_json({"type": "join", "code": room["code"]})
    code, reason = await socket.closed_with(seconds=5)
    assert code == 1013 and "unreachable" in reason and "reconnecting" in reason


async def receive_until(socket: AsgiSocket, wanted, seconds: float = 8):
    """Messages until one satisfies `wanted`; returns it."""
    async with asyncio.timeout(seconds):
        while True:
            message = await socket.receive_json(seconds)
            if wanted(message):
                return message


def shows_step(step):
    return lambda m: m["type"] in ("welcome", "state") and m["state"]["step"] == step


async def test_after_a_quick_restart_with_persistence_the_hub_subscribes_again_and_the_class_goes_on():
    # A Redis with its AOF: the room outlives the restart, and members stay connected through it.
    redis = RedisServer(tempfile.mkdtemp(), persistent=True)
    redis.start()
    app = create_app(Settings(redis_url=redis.url, redis_retry_seconds=0.5))
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
    try:
        room = (await new_room(client)).json()
        teacher = await AsgiSocket(app).connect()
        student = await AsgiSocket(app, client=("203.0.113.8", 40001)).connect()
        await teacher.join(room["code"], room["token"])
        await student.join(room["code"])
        await teacher.send_json({"type": "state", "state": {"expression": PROGRAM, "step": 3}})
        await receive_until(student, shows_step(3))
        redis.kill()
        redis.start()
        # The teacher hears that its page should send its state again; then the class goes on.
        resync = await receive_until(teacher, lambda m: m.get("resync"))
        assert resync["state"]["step"] == 3
        await teacher.send_json({"type": "state", "state": {"expression": PROGRAM, "step": 4}})
        await receive_until(student, shows_step(4))
    finally:
        await client.aclose()
        await app.state.classroom.close()
        redis.stop()


async def test_a_room_redis_lost_is_made_again_by_its_teacher_under_the_same_code(redis, app, http):
    room = (await new_room(http)).json()
    teacher = await AsgiSocket(app).connect()
    student = await AsgiSocket(app, client=("203.0.113.8", 40001)).connect()
    await teacher.join(room["code"], room["token"])
    await student.join(room["code"])
    await teacher.send_json({"type": "state", "state": {"expression": PROGRAM, "step": 5}})
    await receive_until(student, shows_step(5))
    redis.kill()
    redis.start()  # empty: no persistence
    # Everyone is told the room is gone (or, if Redis stays away, to reconnect)...
    for member in (teacher, student):
        code, _ = await member.closed_with(seconds=10)
        assert code in (4404, 1013)
    # ... the teacher's page makes it again with its token and its state: the same code ...
    await asyncio.sleep(0.6)
    again = await http.post("/rooms", json={"state": {"expression": PROGRAM, "step": 5}, "token": room["token"]})
    assert again.status_code == 200, again.text
    assert again.json()["code"] == room["code"] and again.json()["token"] == room["token"]
    # ... asking again while it exists changes nothing ...
    same = await http.post("/rooms", json={"state": {"expression": PROGRAM}, "token": room["token"]})
    assert same.json()["code"] == room["code"]
    # ... and both rejoin where the teacher was.
    teacher = await AsgiSocket(app).connect()
    student = await AsgiSocket(app, client=("203.0.113.8", 40002)).connect()
    assert (await teacher.join(room["code"], room["token"]))["state"]["step"] == 5
    assert (await student.join(room["code"]))["state"]["step"] == 5
    await teacher.send_json({"type": "state", "state": {"expression": PROGRAM, "step": 6}})
    await receive_until(student, shows_step(6))


async def test_a_token_cannot_make_a_room_under_a_code_of_its_choosing(http):
    room = (await new_room(http)).json()
    other = await http.post("/rooms", json={"state": {"expression": PROGRAM}, "token": "x" * 40})
    assert other.status_code == 200 and other.json()["code"] != room["code"]
