"""Teach live's hubs start and stop without ever holding up a join (issue 27, finding 1): the
last member's leave stops its room's hub without a lock that joins need, closing the subscription
first so that a read which absorbs its cancellation (as redis-py's retrying pub/sub read does)
still ends; a real Redis serves 20 classes in a row, each followed by a join."""

import asyncio
import json

import httpx
import pytest
import websockets
from asgi_socket import AsgiSocket, run_bounded
from realservers import Student, Teacher, app_server, chain_program, redis_server, wait_until

from app.broker import InProcessBroker
from app.config import Settings
from app.main import create_app

PROGRAM = "a = 2; b = 3; c = a * b; L = c + a"


class StubbornReadBroker(InProcessBroker):
    """The in-process broker, but a subscription's read behaves like redis-py's retrying pub/sub
    read: a cancellation is absorbed and the read goes on, until its connection is closed."""

    async def subscribe(self, code, on_resubscribed=None):
        subscription = await super().subscribe(code, on_resubscribed)
        closed = asyncio.Event()
        close_inner = subscription.close

        async def messages():
            while not closed.is_set():
                try:
                    await asyncio.shield(closed.wait())
                except asyncio.CancelledError:
                    continue  # absorbed
            return
            yield  # an async generator that ends when the connection closes

        async def close():
            closed.set()
            await close_inner()

        subscription._messages, subscription.close = messages(), close
        return subscription


async def new_room(client: httpx.AsyncClient) -> dict:
    answer = await client.post("/rooms", json={"state": {"expression": PROGRAM}})
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_class_ending_never_holds_up_the_next_join_even_when_the_read_absorbs_a_cancel():
    run_bounded(three_classes_each_followed_by_a_join, 15)


async def three_classes_each_followed_by_a_join():
    app = create_app(Settings(room_creations_per_hour=100))
    app.state.classroom.broker = StubbornReadBroker()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
    sockets = []
    try:
        for _ in range(3):  # a class: the teacher and a student join, then leave
            room = await new_room(client)
            teacher = await AsgiSocket(app).connect()
            student = await AsgiSocket(app, client=("203.0.113.8", 40001)).connect()
            sockets += [teacher, student]
            await teacher.join(room["code"], room["token"])
            await student.join(room["code"])
            await student.leave()
            await teacher.leave(seconds=4)  # the last to leave stops the hub, within its bound
            # The next join, to another room, is welcomed at once.
            after = await new_room(client)
            probe = await AsgiSocket(app, client=("203.0.113.9", 40002)).connect()
            sockets.append(probe)
            welcome = await probe.join(after["code"], seconds=3)
            assert welcome["role"] == "student"
            await probe.leave(seconds=4)
        assert app.state.classroom.hubs == {}
    finally:
        for socket in sockets:
            socket.abandon()
        await client.aclose()


@pytest.mark.anyio
async def test_twenty_classes_in_a_row_on_real_redis_each_followed_by_a_join():
    with (
        redis_server() as url,
        app_server(redis_url=url, room_creations_per_hour=100) as a,
        app_server(redis_url=url, room_creations_per_hour=100) as b,
    ):
        program = chain_program(6)
        async with httpx.AsyncClient() as http:
            for lesson in range(20):
                room = (await http.post(f"{a.url}/rooms", json={"state": {"expression": program}})).json()
                teacher = Teacher(a.ws_url, room["code"], room["token"], program)
                await asyncio.wait_for(teacher.connect(), 5)
                students = [Student([a.ws_url] if i % 2 else [b.ws_url], room["code"]) for i in range(6)]
                for student in students:
                    student.start()
                try:
                    await wait_until(lambda: all(s.joined.is_set() for s in students), 10, "every student to join")
                    for step in range(1, 8):
                        await teacher.step(step)
                        await asyncio.sleep(0.04)
                    await wait_until(
                        lambda: all(s.steps[-1:] == [7] for s in students), 10, "every student to reach step 7"
                    )
                finally:
                    for student in students:
                        await student.stop()
                    await teacher.close()
                # Each process still admits a join at once, to a new room.
                probe_room = (await http.post(f"{b.url}/rooms", json={"state": {"expression": "x = 1"}})).json()
                for server in (a, b):
                    async with websockets.connect(server.ws_url, open_timeout=3) as ws:
                        await ws.send(json.dumps({"type": "join", "code": probe_room["code"]}))
                        welcome = json.loads(await asyncio.wait_for(ws.recv(), 3))
                        assert welcome["type"] == "welcome", (lesson, welcome)
