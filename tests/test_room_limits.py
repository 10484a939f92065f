"""Teach live's limits that stop abuse, not classes (issue 27, finding 3): codes of no room are
limited per address (a school's hundreds of right joins from one address are not), a room's size
is its teacher's to set, and the teacher can lock it. The ASGI app in this process, each socket
from an address of its own choosing."""

import httpx
import pytest
from asgi_socket import AsgiSocket, Closed

from app.config import Settings
from app.main import create_app

pytestmark = pytest.mark.anyio
PROGRAM = "a = 2; b = 3; c = a * b; L = c + a"
SCHOOL = ("198.51.100.20", 50000)  # one NAT address for a whole class
GUESSER = ("192.0.2.66", 50000)


@pytest.fixture
def make_app():
    def make(**settings):
        return create_app(Settings(room_creations_per_hour=100, **settings))

    return make


async def new_room(app, **body) -> dict:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as http:
        answer = await http.post("/rooms", json={"state": {"expression": PROGRAM}, **body})
    assert answer.status_code == 200, answer.text
    return answer.json()


async def try_join(app, code, address, token=None) -> tuple[int, str] | dict:
    """The welcome, or (close code, reason)."""
    socket = await AsgiSocket(app, client=address).connect()
    try:
        return await socket.join(code, token)
    except Closed as closed:
        return closed.args


async def test_codes_of_no_room_are_limited_per_address_and_right_codes_still_join(make_app):
    app = make_app(room_wrong_codes_per_minute=3)
    room, other_room = await new_room(app), await new_room(app)
    assert (await try_join(app, room["code"], GUESSER))["type"] == "welcome"  # this address knows this room
    for guess in ("2345-6789", "2345-678A", "2345-678B"):
        assert (await try_join(app, guess, GUESSER))[0] == 4404
    code, reason = await try_join(app, "2345-678C", GUESSER)
    assert code == 4429 and "try again in" in reason and int(reason.rsplit(": ", 1)[1].rstrip(")")) <= 60
    # Past the limit a right guess reveals nothing (it is refused like the wrong ones) ...
    assert (await try_join(app, other_room["code"], GUESSER))[0] == 4429
    # ... while a room this address already joined still admits it, and other addresses are not limited.
    assert (await try_join(app, room["code"], GUESSER))["type"] == "welcome"
    assert (await try_join(app, "2345-6789", ("192.0.2.67", 1)))[0] == 4404
    assert (await try_join(app, other_room["code"], ("192.0.2.67", 1)))["type"] == "welcome"


async def test_a_class_retrying_a_lost_room_counts_as_one_wrong_code(make_app):
    app = make_app(room_wrong_codes_per_minute=3)
    for port in range(30):  # a class whose room the store lost, every page retrying it
        assert (await try_join(app, "2345-6789", (SCHOOL[0], port)))[0] == 4404
    room = await new_room(app)
    assert (await try_join(app, room["code"], SCHOOL))["type"] == "welcome"


async def test_a_whole_school_joins_from_one_address(make_app):
    app = make_app(room_wrong_codes_per_minute=3)
    room = await new_room(app)
    sockets = [await AsgiSocket(app, client=SCHOOL).connect() for _ in range(120)]
    welcomes = [await socket.join(room["code"]) for socket in sockets]
    assert all(welcome["role"] == "student" for welcome in welcomes)
    for guess in ("2345-6789", "2345-678A"):  # two students mistype: still under the limit
        assert (await try_join(app, guess, SCHOOL))[0] == 4404
    assert (await try_join(app, room["code"], SCHOOL))["type"] == "welcome"
    for socket in sockets:
        await socket.leave()


async def test_the_teacher_sets_the_room_size(make_app):
    app = make_app(room_max_members=50)
    room = await new_room(app, max_students=2)
    teacher = await AsgiSocket(app).connect()
    welcome = await teacher.join(room["code"], room["token"])
    assert (welcome["followers"], welcome["max_students"], welcome["locked"]) == (0, 2, False)
    for port in (1, 2):
        assert (await try_join(app, room["code"], ("203.0.113.50", port)))["type"] == "welcome"
    assert await try_join(app, room["code"], ("203.0.113.50", 3)) == (1013, "the room is full (2 students)")
    default = await new_room(app)
    teacher_two = await AsgiSocket(app).connect()
    assert (await teacher_two.join(default["code"], default["token"]))["max_students"] == 50


async def test_a_room_size_over_the_servers_limit_is_refused(make_app):
    app = make_app(room_max_members=50)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as http:
        answer = await http.post("/rooms", json={"state": {"expression": PROGRAM}, "max_students": 51})
        assert answer.status_code == 400
        assert answer.json()["detail"]["message"] == "max_students is 51, over this server's limit of 50"
        assert (
            await http.post("/rooms", json={"state": {"expression": PROGRAM}, "max_students": 0})
        ).status_code == 422


async def test_the_teacher_locks_the_room_to_new_students_and_opens_it_again(make_app):
    app = make_app()
    room = await new_room(app)
    teacher = await AsgiSocket(app).connect()
    await teacher.join(room["code"], room["token"])
    student = await AsgiSocket(app, client=("203.0.113.60", 1)).connect()
    await student.join(room["code"])
    assert (await teacher.receive_json())["count"] == 1
    await teacher.send_json({"type": "lock", "locked": True})
    told = await teacher.receive_json()
    assert (told["type"], told["locked"], told["count"]) == ("followers", True, 1)
    assert await try_join(app, room["code"], ("203.0.113.61", 1)) == (
        4423,
        "the teacher has locked this room: no new students",
    )
    # The teacher may still come back, and who is in stays in and follows.
    await teacher.send_json({"type": "state", "state": {"expression": PROGRAM, "step": 2}})
    assert (await student.receive_json())["state"]["step"] == 2
    assert (await teacher.receive_json())["type"] == "state"  # its own move, as every member hears it
    await teacher.send_json({"type": "lock", "locked": False})
    assert (await teacher.receive_json())["locked"] is False
    assert (await try_join(app, room["code"], ("203.0.113.61", 1)))["type"] == "welcome"


async def test_only_the_teacher_locks(make_app):
    app = make_app()
    room = await new_room(app)
    student = await AsgiSocket(app, client=("203.0.113.60", 1)).connect()
    await student.join(room["code"])
    await student.send_json({"type": "lock", "locked": True})
    assert (await student.receive_json())["type"] == "error"
    assert (await try_join(app, room["code"], ("203.0.113.61", 1)))["type"] == "welcome"
