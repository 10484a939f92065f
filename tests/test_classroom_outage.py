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


async def test_a_hub_whose_subscribe_fails_closes_its_joins_with_1013_and_the_next_join_starts_afresh(
    app, http, monkeypatch
):
    # Redis answers the join's reads but fails the room's subscription: every member waiting for
    # that hub is told to reconnect, nothing of the failed hub is left, and the next join subscribes anew.
    room = (await new_room(http)).json()
    classroom = app.state.classroom
    broker, code = classroom.broker, room["code"].replace("-", "")
    subscribe, calls, release = broker.subscribe, [], asyncio.Event()

    async def failing_subscribe(code, on_resubscribed=None):
        calls.append(code)
        await release.wait()
        raise broker.breaker.failed()  # what the broker raises for a connection error

    monkeypatch.setattr(broker, "subscribe", failing_subscribe)
    teacher = await AsgiSocket(app).connect()
    student = await AsgiSocket(app, client=("203.0.113.8", 40001)).connect()
    await teacher.send_json({"type": "join", "code": room["code"], "token": room["token"]})
    await student.send_json({"type": "join", "code": room["code"]})
    async with asyncio.timeout(5):  # both wait for the one hub the first join started
        while code not in classroom.hubs or len(classroom.hubs[code].members) < 2:
            await asyncio.sleep(0.01)
    assert calls == [code]
    release.set()
    for member in (teacher, student):
        closed, reason = await member.closed_with(seconds=5)
        assert closed == 1013 and "unreachable" in reason and "reconnecting" in reason
        await member.leave()  # the server's side ended without an error
    assert classroom.hubs == {}

    monkeypatch.setattr(broker, "subscribe", subscribe)  # Redis is back
    await asyncio.sleep(0.6)  # the breaker's 0.5 s
    teacher = await AsgiSocket(app).connect()
    student = await AsgiSocket(app, client=("203.0.113.8", 40002)).connect()
    welcome = await teacher.join(room["code"], room["token"])
    assert welcome["role"] == "teacher" and welcome["followers"] == 0  # the failed student was never counted
    assert (await student.join(room["code"]))["role"] == "student"
    await teacher.send_json({"type": "state", "state": {"expression": PROGRAM, "step": 4}})
    await receive_until(student, shows_step(4))
    assert (await receive_until(teacher, lambda m: m["type"] == "followers"))["count"] == 1
    assert list(classroom.hubs) == [code] and len(classroom.hubs[code].members) == 2


async def test_when_redis_stays_down_the_relay_closes_every_member_with_1013_and_the_hub_is_let_go(redis, app, http):
    # The subscription breaks; its one quick retry (past the breaker) finds Redis still gone.
    room = (await new_room(http)).json()
    teacher = await AsgiSocket(app).connect()
    student = await AsgiSocket(app, client=("203.0.113.8", 40001)).connect()
    await teacher.join(room["code"], room["token"])
    await student.join(room["code"])
    redis.kill()
    for member in (teacher, student):
        code, reason = await member.closed_with(seconds=5)
        assert code == 1013 and "unreachable" in reason and "reconnecting" in reason
        await member.leave()
    assert app.state.classroom.hubs == {}


async def test_a_state_the_store_cannot_take_is_answered_not_sent_and_the_class_goes_on(app, http, monkeypatch):
    room = (await new_room(http)).json()
    teacher = await AsgiSocket(app).connect()
    student = await AsgiSocket(app, client=("203.0.113.8", 40001)).connect()
    await teacher.join(room["code"], room["token"])
    await student.join(room["code"])
    broker = app.state.classroom.broker
    update = broker.update

    async def failing_update(*args, **kwargs):
        raise broker.breaker.failed()

    monkeypatch.setattr(broker, "update", failing_update)
    await teacher.send_json({"type": "state", "state": {"expression": PROGRAM, "step": 3}})
    error = await receive_until(teacher, lambda m: m["type"] == "error")
    assert error["message"].startswith("not sent: the room's store (Redis) is unreachable")
    monkeypatch.setattr(broker, "update", update)
    await asyncio.sleep(0.6)  # the breaker's 0.5 s
    await teacher.send_json({"type": "state", "state": {"expression": PROGRAM, "step": 4}})
    shown = await receive_until(student, lambda m: m["type"] == "state")
    assert shown["state"]["step"] == 4  # the refused step 3 never reached the student


async def test_a_join_that_ends_while_its_hub_subscribes_leaves_the_hub_to_the_join_waiting_for_it(
    app, http, monkeypatch
):
    # The first join's connection task is cancelled while the hub it started subscribes: the hub goes on
    # starting, in a task of its own, and the second join, which waits for the same hub, is welcomed.
    room = (await new_room(http)).json()
    classroom = app.state.classroom
    broker, code = classroom.broker, room["code"].replace("-", "")
    subscribe, release = broker.subscribe, asyncio.Event()

    async def slow_subscribe(code, on_resubscribed=None):
        await release.wait()
        return await subscribe(code, on_resubscribed)

    monkeypatch.setattr(broker, "subscribe", slow_subscribe)
    first = await AsgiSocket(app).connect()
    second = await AsgiSocket(app, client=("203.0.113.8", 40001)).connect()
    await first.send_json({"type": "join", "code": room["code"]})
    await second.send_json({"type": "join", "code": room["code"]})
    async with asyncio.timeout(5):
        while code not in classroom.hubs or len(classroom.hubs[code].members) < 2:
            await asyncio.sleep(0.01)
    first.abandon()  # its connection's task is cancelled while the hub subscribes
    await asyncio.sleep(0.1)
    release.set()
    welcome = await second.receive_json(3)
    assert welcome["type"] == "welcome" and welcome["role"] == "student"
    assert list(classroom.hubs) == [code] and len(classroom.hubs[code].members) == 1
