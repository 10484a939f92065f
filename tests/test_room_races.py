"""Teach live under races: a hub whose relay has ended for good (the room expired, Redis stayed down) is out
of the registry, so the members reconnecting get a hub of their own; a room that expires while a teacher joins
closes that join with 4404; a member's connection cancelled in the middle of its leave (the server ending it)
leaves no hub, subscription or task behind; and the heartbeat never counts again a student who left while its
round was under way. Found by probing app/rooms.py at each await; real Redis where the race needs it."""

import asyncio

import httpx
import redis.asyncio as aredis
from asgi_socket import AsgiSocket, Closed, run_bounded
from realservers import redis_process

from app import rooms
from app.broker import BrokerUnavailable, InProcessBroker, Subscription
from app.config import Settings
from app.main import create_app

PROGRAM = "a = 2; b = 3; c = a * b; L = c + a"


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def in_memory_app(clock=None, **settings):
    app = create_app(Settings(room_creations_per_hour=100, **settings))
    app.state.classroom.broker = InProcessBroker(clock=clock) if clock else InProcessBroker()
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
    return app, http


async def _the_class_again_hears_its_teacher(app, room, lingering) -> bool:
    """The teacher and a new student join again while `lingering`, a member the old hub told to close, is still
    closing; it then goes. Whether the student gets the teacher's next move."""
    teacher = await AsgiSocket(app).connect()
    await teacher.join(room["code"], room["token"])
    student = await AsgiSocket(app, client=("203.0.113.9", 40002)).connect()
    await student.join(room["code"])
    await lingering.leave()  # the old member goes at last; the new ones stay
    await teacher.send_json({"type": "state", "state": {"expression": PROGRAM, "step": 3}})
    got = None
    try:
        while got is None:
            message = await student.receive_json(2)
            got = message if message["type"] == "state" else None
    except (TimeoutError, Closed):
        pass
    await teacher.leave()
    await student.leave()
    return got is not None and got["state"]["step"] == 3


async def _a_class(clock):
    """An in-memory room on `clock` (idle for 60 s at most), its teacher and a student joined: (app, http,
    room, teacher, student)."""
    app, http = in_memory_app(clock, room_idle_seconds=60)
    room = (await http.post("/rooms", json={"state": {"expression": PROGRAM}})).json()
    teacher = await AsgiSocket(app).connect()
    await teacher.join(room["code"], room["token"])
    student = await AsgiSocket(app, client=("203.0.113.8", 40001)).connect()
    await student.join(room["code"])
    return app, http, room, teacher, student


# ---- A hub whose relay has ended for good takes no new joins ----


def test_a_room_made_again_after_expiry_is_not_served_by_the_dead_hub_of_the_old_one():
    run_bounded(_dead_hub_after_expiry, 20)


async def _dead_hub_after_expiry():
    clock = Clock()
    app, http, room, teacher, lingering = await _a_class(clock)
    classroom = app.state.classroom

    # The room expires; the relay notices (its subscription ends), closes everyone with 4404 and returns.
    clock.now += 61
    assert await classroom.broker.get(room["code"].replace("-", "")) is None
    assert (await teacher.closed_with())[0] == 4404
    assert (await lingering.closed_with())[0] == 4404
    await teacher.leave()
    # `lingering` has been told but its side has not finished closing yet (a slow network, a
    # client that takes its time with the close handshake): its handler is still in the hub.

    # The teacher's page makes its room again under the same code, as docs/operating.md says it does.
    again = await http.post("/rooms", json={"state": {"expression": PROGRAM}, "token": room["token"]})
    assert again.status_code == 200 and again.json()["code"] == room["code"]
    heard = await _the_class_again_hears_its_teacher(app, room, lingering)
    assert heard, "the student never got the teacher's move: the new members joined the old hub, whose relay ended"


def test_the_server_stopping_stops_a_hub_that_ended_while_a_member_is_still_closing():
    run_bounded(_ended_hub_at_shutdown, 20)


async def _ended_hub_at_shutdown():
    clock = Clock()
    app, http, room, teacher, lingering = await _a_class(clock)
    classroom = app.state.classroom
    code = room["code"].replace("-", "")
    hub = classroom.hubs[code]
    before = {task for task in asyncio.all_tasks() if task not in hub._tasks}
    clock.now += 61  # the room expires: the hub ends, out of the registry, while its student is still closing
    assert await classroom.broker.get(code) is None
    assert (await teacher.closed_with())[0] == 4404 and (await lingering.closed_with())[0] == 4404
    await teacher.leave()
    assert classroom.hubs == {} and hub in classroom.running
    await classroom.close()
    assert classroom.running == set() and all(task.done() for task in hub._tasks)
    lingering.abandon()
    await asyncio.wait({lingering._task}, timeout=3)
    assert {task for task in asyncio.all_tasks() if not task.done()} <= before | {asyncio.current_task()}
    await http.aclose()


# ---- A teacher joining a room that expires between its lookup and its touch ----


class ExpiresAtTouch(InProcessBroker):
    """The room's idle time runs out between _admit's get() and its touch() (one Redis round
    trip apart with RedisBroker): the clock passes the expiry just as touch() is called."""

    def __init__(self, clock):
        super().__init__(clock=clock)
        self.clock_ = clock

    async def touch(self, code, *, idle_seconds):
        self.clock_.now += 3600
        return await super().touch(code, idle_seconds=idle_seconds)


def test_a_teacher_joining_a_room_that_expires_at_that_moment_is_closed_4404_not_an_app_error():
    run_bounded(_expires_at_touch, 20)


async def _expires_at_touch():
    clock = Clock()
    app, http = in_memory_app(clock, room_idle_seconds=60)
    app.state.classroom.broker = ExpiresAtTouch(clock)
    room = (await http.post("/rooms", json={"state": {"expression": PROGRAM}})).json()
    teacher = await AsgiSocket(app).connect()
    await teacher.send_json({"type": "join", "code": room["code"], "token": room["token"]})
    try:
        code = (await teacher.closed_with(3))[0]
    except TimeoutError:
        code = None
    await asyncio.wait({teacher._task}, timeout=3)
    error = teacher._task.exception() if teacher._task.done() else None
    assert error is None, f"the ASGI app raised {error!r} (the client saw close code {code})"
    assert code == 4404


# ---- The same after an outage closed the room's members with 1013 ----


class OutageBroker(InProcessBroker):
    """In-process broker that can drop its subscriptions and refuse new ones, like a Redis that
    is down for longer than redis_retry_seconds."""

    down = False

    async def subscribe(self, code, on_resubscribed=None):
        if self.down:
            raise BrokerUnavailable(0.01)
        inner = await super().subscribe(code, on_resubscribed)

        async def messages():
            async for message in inner:
                if message.get("kind") == "outage":
                    raise BrokerUnavailable(0.01)
                yield message

        return Subscription(messages(), inner.close)

    def outage(self, code):
        self.down = True
        self._publish(self._rooms[code], {"kind": "outage"})


def test_members_reconnecting_after_an_outage_are_not_served_by_the_hub_whose_relay_gave_up():
    run_bounded(_dead_hub_after_outage, 20)


async def _dead_hub_after_outage():
    app, http = in_memory_app()
    broker = app.state.classroom.broker = OutageBroker()
    room = (await http.post("/rooms", json={"state": {"expression": PROGRAM}})).json()
    code = room["code"].replace("-", "")
    teacher = await AsgiSocket(app).connect()
    await teacher.join(room["code"], room["token"])
    lingering = await AsgiSocket(app, client=("203.0.113.8", 40001)).connect()
    await lingering.join(room["code"])

    broker.outage(code)  # the relay fails, tries once more, fails again: everyone is told 1013
    assert (await teacher.closed_with())[0] == 1013
    assert (await lingering.closed_with())[0] == 1013
    await teacher.leave()
    broker.down = False  # the store is back; the pages reconnect (lingering's close is still in flight)

    assert await _the_class_again_hears_its_teacher(app, room, lingering), "the student never got the teacher's move"


# ---- A cancellation landing in the last member's leave (a Redis round trip) leaks nothing ----


async def _numsub(url, code):
    client = aredis.from_url(url)
    try:
        return (await client.pubsub_numsub(f"vg:room:{code}"))[0][1]
    finally:
        await client.aclose()


async def _cancel_in_leave(url, where):
    app = create_app(Settings(redis_url=url, redis_retry_seconds=0.5, room_creations_per_hour=100))
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
    classroom = app.state.classroom
    broker = classroom.broker
    try:
        room = (await http.post("/rooms", json={"state": {"expression": PROGRAM}})).json()
        code = room["code"].replace("-", "")
        before = set(asyncio.all_tasks())
        gate, entered = asyncio.Event(), asyncio.Event()
        if where == "remove_member":  # the last student's leave: ZREM + PUBLISH
            member = await AsgiSocket(app, client=("203.0.113.8", 40001)).connect()
            await member.join(room["code"])
            real = broker.remove_member

            async def gated(*args, **kwargs):
                entered.set()
                await gate.wait()  # stands for the round trip to Redis, where the cancel lands
                return await real(*args, **kwargs)

            broker.remove_member = gated
        else:  # the last teacher's leave: hub.stop() closing the pub/sub connection
            member = await AsgiSocket(app).connect()
            await member.join(room["code"], room["token"])
            subscription = classroom.hubs[code]._subscription
            real = subscription.close

            async def gated():
                entered.set()
                await gate.wait()
                return await real()

            subscription.close = gated
        assert await _numsub(url, code) == 1
        await member._to_app.put({"type": "websocket.disconnect", "code": 1000})
        await entered.wait()
        member.abandon()  # its connection's task is cancelled (the server stops, or drops it) mid-leave
        await asyncio.wait({member._task}, timeout=3)
        gate.set()  # the round trip to Redis it was in ends
        await asyncio.sleep(0.3)
        left = sorted(t.get_coro().__qualname__ for t in asyncio.all_tasks() - before if not t.done())
        subscribed = await _numsub(url, code)
        assert (classroom.hubs, subscribed, left) == ({}, 0, []), (
            f"after the last member left: hubs {list(classroom.hubs)}, NUMSUB {subscribed}, tasks still running {left}"
        )
    finally:
        await classroom.close()
        await http.aclose()


def test_a_cancel_during_the_last_students_remove_member_leaves_no_hub_subscription_or_task():
    with redis_process() as server:
        run_bounded(lambda: _cancel_in_leave(server.url, "remove_member"), 30)


def test_a_cancel_during_the_last_members_hub_stop_leaves_no_subscription_or_task():
    with redis_process() as server:
        run_bounded(lambda: _cancel_in_leave(server.url, "stop"), 30)


# ---- The heartbeat does not count again a student who left during its round ----


async def _ghost_student(url):
    app = create_app(Settings(redis_url=url, redis_retry_seconds=0.5, room_creations_per_hour=100))
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
    classroom = app.state.classroom
    broker = classroom.broker
    try:
        room = (await http.post("/rooms", json={"state": {"expression": PROGRAM}, "max_students": 1})).json()
        code = room["code"].replace("-", "")
        teacher = await AsgiSocket(app).connect()
        await teacher.join(room["code"], room["token"])  # keeps the room alive (touch) and the hub up
        student = await AsgiSocket(app, client=("203.0.113.8", 40001)).connect()
        await student.join(room["code"])
        real, gate, entered = broker.add_member, asyncio.Event(), asyncio.Event()

        async def heartbeat_round_in_flight(code_, member, *, most=None):
            if most is None and not gate.is_set():  # the heartbeat's call (a join passes `most`)
                entered.set()
                await gate.wait()  # its round trip to Redis is under way while...
            return await real(code_, member, most=most)

        broker.add_member = heartbeat_round_in_flight
        await entered.wait()
        await student.leave()  # ...the student leaves (ZREM) in that moment
        gate.set()
        await asyncio.sleep(0.1)
        counted = await broker.count_members(code)
        newcomer = await AsgiSocket(app, client=("203.0.113.9", 40002)).connect()
        await newcomer.send_json({"type": "join", "code": room["code"]})
        try:
            first = await newcomer.receive_json(3)
        except Closed as closed:
            first = {"type": "closed", "code and reason": closed.args}
        await teacher.leave()
        assert counted == 0 and first["type"] == "welcome", (
            f"the student who left is still counted ({counted}); the next student of this 1-seat room got {first}"
        )
    finally:
        await classroom.close()
        await http.aclose()


def test_a_student_who_leaves_during_a_heartbeat_is_not_counted_again(monkeypatch):
    monkeypatch.setattr(rooms, "HEARTBEAT", 0.2)  # a round every 0.2 s; the room stays for its idle hour
    with redis_process() as server:
        run_bounded(lambda: _ghost_student(server.url), 30)
