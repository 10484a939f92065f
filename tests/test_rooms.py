"""Teach live in one process (the in-process broker): making rooms, who may drive, and every
limit that closes a connection or ignores a message, with its reason."""

import time
import warnings

import pytest
from starlette.websockets import WebSocketDisconnect

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from app.rooms import CODE_ALPHABET, RoomProblem, TokenBucket, client_key, normalise_code

PROGRAM = "a = 2; b = 3; c = a * b; L = c + a"  # 14 steps: 0..13, propagation from 9


def make_client(**settings) -> TestClient:
    return TestClient(create_app(Settings(**settings)))


@pytest.fixture
def client():
    with make_client() as c:
        yield c


def new_room(client, **state):
    answer = client.post("/rooms", json={"state": {"expression": PROGRAM, **state}})
    assert answer.status_code == 200, answer.text
    return answer.json()


def join(ws, code, token=None):
    ws.send_json({"type": "join", "code": code, **({"token": token} if token else {})})
    welcome = ws.receive_json()
    assert welcome["type"] == "welcome"
    return welcome


def closed_with(ws) -> tuple[int, str]:
    with pytest.raises(WebSocketDisconnect) as caught:
        for _ in range(50):
            ws.receive_json()
    return caught.value.code, caught.value.reason


def test_a_room_has_a_readable_code_and_links_without_the_token(client):
    room = new_room(client)
    code = room["code"]
    assert len(code) == 9 and code[4] == "-" and all(ch in CODE_ALPHABET for ch in code.replace("-", ""))
    assert room["join_url"] == f"http://testserver/?room={code}"
    assert room["embed_url"] == f"http://testserver/embed?room={code}"
    assert len(room["token"]) >= 32
    assert all(room["token"] not in room[key] for key in ("join_url", "embed_url", "qr_svg_url"))
    assert len({new_room(client)["code"] for _ in range(20)}) == 20


def test_codes_are_read_as_people_type_them():
    assert normalise_code("k7mp q2xr") == normalise_code("K7MP-Q2XR") == "K7MPQ2XR"
    for bad in ("K7MP-Q2X", "K7MP-Q2XR9", "O0MP-Q2XR", "K7MP-Q2X!"):
        with pytest.raises(RoomProblem, match="8 letters and digits"):
            normalise_code(bad)


def test_a_room_refuses_a_bad_first_state(client):
    answer = client.post("/rooms", json={"state": {"expression": "a = (2"}})
    assert answer.status_code == 400
    assert "line 1, column 5" in answer.json()["detail"]["message"]
    assert (
        client.post("/rooms", json={"state": {"expression": PROGRAM, "step": 14}}).json()["detail"]["message"]
        == "state.step is 14, past the walk's last step 13"
    )
    assert client.post("/rooms", json={"state": {"expression": PROGRAM, "colour": "red"}}).status_code == 422


def test_the_number_of_rooms_is_bounded():
    with make_client(room_max_rooms=2) as client:
        new_room(client)
        new_room(client)
        answer = client.post("/rooms", json={"state": {"expression": PROGRAM}})
        assert answer.status_code == 503
        assert "the limit is 2" in answer.json()["detail"]["message"]


def test_one_address_makes_a_bounded_number_of_rooms_an_hour():
    """One client filling every room would shut the others out for an hour: each address (an IPv6
    address's /64) makes room_creations_per_hour rooms; a refused state does not count."""
    app = create_app(Settings(room_creations_per_hour=2))
    with (
        TestClient(app, client=("203.0.113.7", 50000)) as client,
        TestClient(app, client=("198.51.100.1", 50000)) as neighbour,
    ):
        new_room(client)
        assert client.post("/rooms", json={"state": {"expression": "a = (2"}}).status_code == 400
        new_room(client)
        answer = client.post("/rooms", json={"state": {"expression": PROGRAM}})
        assert answer.status_code == 429
        assert 3540 <= int(answer.headers["retry-after"]) <= 3600
        assert (
            answer.json()["detail"]["message"]
            == "this address has made 2 rooms in the last hour, the limit; it may make another in 60 minutes"
        )
        new_room(neighbour)


@pytest.mark.parametrize(
    "host, key",
    [
        ("203.0.113.7", "203.0.113.7"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"),
        ("::ffff:203.0.113.7", "203.0.113.7"),
        ("testclient", "testclient"),
        (None, "unknown"),
    ],
)
def test_the_creation_limit_counts_an_address_or_an_ipv6_subscriber(host, key):
    assert client_key(host) == key


def test_a_program_broadcast_goes_through_the_limits_of_backward():
    with make_client(max_source_length=50) as client:
        room = new_room(client)
        with client.websocket_connect("/rooms/ws") as teacher:
            join(teacher, room["code"], room["token"])
            teacher.send_json({"type": "state", "state": {"expression": "a = 1" + " + a" * 20}})
            assert teacher.receive_json() == {
                "type": "error",
                "message": "ignored: state.expression is 85 characters, over the limit of 50",
            }
        assert client.post("/rooms", json={"state": {"expression": "a = 1" + " + a" * 20}}).status_code == 400


def test_a_teachers_message_that_is_not_json_is_ignored_and_says_where_it_broke(client):
    room = new_room(client)
    with client.websocket_connect("/rooms/ws") as teacher:
        join(teacher, room["code"], room["token"])
        teacher.send_text('{"type": "state",\n "state": }')
        assert teacher.receive_json() == {
            "type": "error",
            "message": "ignored: the message is not JSON: Expecting value at line 2, column 11",
        }
        teacher.send_json({"type": "state", "state": {"expression": PROGRAM, "step": 1}})  # the room takes the next
        following = teacher.receive_json()
        assert following["type"] == "state" and following["state"]["step"] == 1, following


def test_the_teacher_drives_and_students_follow_in_order(client):
    room = new_room(client)
    with client.websocket_connect("/rooms/ws") as teacher, client.websocket_connect("/rooms/ws") as student:
        assert join(teacher, room["code"], room["token"])["role"] == "teacher"
        welcome = join(student, room["code"].lower().replace("-", " "))
        assert welcome["role"] == "student" and welcome["state"]["step"] == 0 and "followers" not in welcome
        for step in range(1, 14):
            teacher.send_json(
                {
                    "type": "state",
                    "state": {"expression": PROGRAM, "step": step, "playing": True, "speed": 2, "pinned": 1},
                }
            )
        received = [student.receive_json() for _ in range(13)]
        assert [m["state"]["step"] for m in received] == list(range(1, 14))
        assert [m["version"] for m in received] == list(range(2, 15))
        assert received[7]["state"]["stage"] == "sort" and received[8]["state"]["stage"] == "propagate"
        assert received[-1]["state"] | {} == {
            "expression": PROGRAM,
            "variables": {},
            "variant": "correct",
            "seed": 0,
            "run": None,
            "step": 13,
            "stage": "propagate",
            "playing": True,
            "speed": 2.0,
            "pinned": 1,
            "direction": "LR",
            "language": None,  # the server's languages: no code of the teacher's own, no graph it made
            "graph": None,
        }
        teacher.send_json(
            {"type": "state", "state": {"expression": "x * y", "variables": {"x": 3, "y": -1}, "variant": "assign"}}
        )
        assert student.receive_json()["state"]["variables"] == {"x": 3, "y": -1}
    with client.websocket_connect("/rooms/ws") as late:
        assert join(late, room["code"])["state"]["expression"] == "x * y"  # resumes from the current state


# A Python program whose graph depends on the seed (the draws) and on the run (each backward() call
# multiplies more often): the walk of seed 5, run 2 is longer than the default's (seed 0, the last run).
SEEDED = """import random
x = Value(1.0, label='x')
for k in range(4):
    y = x
    for i in range(random.choice([1, 2, 3, 4, 5, 6]) + k):
        y = y * 1.5
    y.backward()
"""


def last_step(client, **fields) -> int:
    """The walk's last step as the page numbers it: step 0 is the start, then each pop of the sort,
    the seeding of the output's gradient, and each node of the propagation."""
    answer = client.post("/backward", json={"expression": SEEDED, **fields}).json()
    return len(answer["trace"]["sort"]) + 1 + len(answer["trace"]["propagate"])


def test_a_rooms_step_is_checked_against_the_trace_of_its_seed_and_run(client):
    last = last_step(client, seed=5, run=2)
    assert last > last_step(client) and last > last_step(client, seed=5) and last > last_step(client, run=2)
    room = new_room(client, expression=SEEDED, seed=5, run=2, step=last)
    refused = client.post("/rooms", json={"state": {"expression": SEEDED, "step": last}})
    assert refused.status_code == 400
    assert refused.json()["detail"]["message"] == f"state.step is {last}, past the walk's last step {last_step(client)}"
    with client.websocket_connect("/rooms/ws") as teacher, client.websocket_connect("/rooms/ws") as student:
        join(teacher, room["code"], room["token"])
        shown = join(student, room["code"])["state"]
        assert (shown["seed"], shown["run"], shown["step"], shown["stage"]) == (5, 2, last, "propagate")
        # The same program and step with another seed or run is another walk, checked afresh.
        for other in ({"seed": 0, "run": 2}, {"seed": 5, "run": None}, {"seed": 5, "run": 0}):
            teacher.send_json({"type": "state", "state": {"expression": SEEDED, "step": last, **other}})
            error = teacher.receive_json()
            while error["type"] == "followers":  # the teacher hears the student join
                error = teacher.receive_json()
            assert error["type"] == "error" and f"state.step is {last}, past the walk's last step" in error["message"]
        teacher.send_json({"type": "state", "state": {"expression": SEEDED, "seed": 5, "run": 0, "step": 3}})
        followed = student.receive_json()["state"]
        assert (followed["seed"], followed["run"], followed["step"]) == (5, 0, 3)


@pytest.mark.parametrize("fields", [{"seed": -1}, {"seed": 2**32}, {"seed": 1.5}, {"run": -1}, {"run": "last"}])
def test_a_rooms_seed_and_run_are_validated_as_backwards_are(client, fields):
    assert client.post("/rooms", json={"state": {"expression": SEEDED, **fields}}).status_code == 422
    assert client.post("/backward", json={"expression": SEEDED, **fields}).status_code == 422


def test_a_room_with_a_run_the_program_does_not_make_is_refused(client):
    answer = client.post("/rooms", json={"state": {"expression": SEEDED, "run": 4}})
    assert answer.status_code == 400
    assert "run 4 does not exist: the program calls backward() 4 times" in answer.json()["detail"]["message"]


def test_the_teacher_sees_how_many_follow(client):
    room = new_room(client)
    with client.websocket_connect("/rooms/ws") as teacher:
        assert join(teacher, room["code"], room["token"])["followers"] == 0
        with client.websocket_connect("/rooms/ws") as one, client.websocket_connect("/rooms/ws") as two:
            join(one, room["code"])
            join(two, room["code"])
            counts = [teacher.receive_json()["count"] for _ in range(2)]
            assert counts == [1, 2]
        followers = {"type": "followers", "max_students": 500, "locked": False}
        assert teacher.receive_json() == {**followers, "count": 1}
        assert teacher.receive_json() == {**followers, "count": 0}


def test_a_student_cannot_drive_and_nothing_reaches_the_others(client):
    room = new_room(client)
    with (
        client.websocket_connect("/rooms/ws") as teacher,
        client.websocket_connect("/rooms/ws") as mallory,
        client.websocket_connect("/rooms/ws") as other,
    ):
        join(teacher, room["code"], room["token"])
        join(mallory, room["code"])
        join(other, room["code"])
        mallory.send_json({"type": "state", "state": {"expression": "1/0", "step": 0}})
        assert mallory.receive_json() == {
            "type": "error",
            "message": "only the teacher can drive this room; your message was ignored",
        }
        mallory.send_text("not json at all")
        assert mallory.receive_json()["type"] == "error"
        # The next thing the other student hears is the teacher's next move, not Mallory's.
        teacher.send_json({"type": "state", "state": {"expression": PROGRAM, "step": 4}})
        heard = other.receive_json()
        assert heard["type"] == "state" and heard["state"]["expression"] == PROGRAM and heard["state"]["step"] == 4
        assert heard["version"] == 2


def test_a_forged_token_is_closed_with_its_reason(client):
    room = new_room(client)
    with client.websocket_connect("/rooms/ws") as forger:
        forger.send_json({"type": "join", "code": room["code"], "token": room["token"][:-2] + "xx"})
        assert closed_with(forger) == (1008, "the teacher token does not match this room")
    other = new_room(client)
    with client.websocket_connect("/rooms/ws") as forger:  # one room's token is not another's
        forger.send_json({"type": "join", "code": other["code"], "token": room["token"]})
        assert closed_with(forger)[0] == 1008


@pytest.mark.parametrize(
    "first, code, reason",
    [
        ("{", 4400, "bad join: message: Invalid JSON: EOF while parsing an object at line 1 column 1"),
        ('{"type": "state", "state": {"expression": "a"}}', 4400, "the first message must be a join"),
        ('{"type": "join", "code": "ABC"}', 4400, "a room code is 8 letters and digits"),
        ('{"type": "join", "code": "2345-6789"}', 4404, "there is no room 2345-6789 (it may have expired)"),
        ('{"type": "join", "code": 5}', 4400, "bad join: join.code: Input should be a valid string"),
    ],
)
def test_a_bad_join_is_closed_with_its_reason(client, first, code, reason):
    with client.websocket_connect("/rooms/ws") as ws:
        ws.send_text(first)
        closed = closed_with(ws)
        assert closed[0] == code and closed[1].startswith(reason), closed


def test_a_binary_join_is_closed_with_its_reason(client):
    with client.websocket_connect("/rooms/ws") as ws:
        ws.send_bytes(b'{"type": "join"}')
        assert closed_with(ws) == (4400, "send the join as a JSON text message, not a binary one")


def test_a_connection_that_never_joins_is_closed():
    with make_client(room_join_seconds=0.2) as client, client.websocket_connect("/rooms/ws") as ws:
        assert closed_with(ws) == (4408, "no join message within 0.2 s")


def test_an_oversized_message_closes_the_connection_and_reaches_no_one():
    with make_client(room_max_message_bytes=300) as client:
        room = new_room(client)
        with client.websocket_connect("/rooms/ws") as teacher, client.websocket_connect("/rooms/ws") as student:
            join(teacher, room["code"], room["token"])
            join(student, room["code"])
            teacher.receive_json()  # the follower count
            teacher.send_json({"type": "state", "state": {"expression": PROGRAM + " " * 300}})
            assert closed_with(teacher) == (1009, "message too big: over the limit of 300 bytes")
            with client.websocket_connect("/rooms/ws") as again:
                join(again, room["code"], room["token"])
                again.send_json({"type": "state", "state": {"expression": PROGRAM, "step": 3}})
                heard = student.receive_json()  # the next thing the student hears is this move
                assert (heard["version"], heard["state"]["step"], heard["state"]["expression"]) == (2, 3, PROGRAM)


def test_a_flood_is_closed_and_reaches_no_one():
    with make_client(room_messages_per_second=0.5, room_message_burst=10) as client:
        room = new_room(client)
        with client.websocket_connect("/rooms/ws") as teacher, client.websocket_connect("/rooms/ws") as flooder:
            join(teacher, room["code"], room["token"])
            join(flooder, room["code"])
            assert teacher.receive_json()["count"] == 1
            for _ in range(30):
                flooder.send_text('{"type": "state"}')
            errors = 0
            with pytest.raises(WebSocketDisconnect) as caught:
                while True:
                    assert flooder.receive_json()["type"] == "error"
                    errors += 1
            assert (caught.value.code, caught.value.reason) == (1008, "too many messages: more than 0.5 per second")
            assert errors == 10  # the burst was answered, the rest closed the connection
            assert teacher.receive_json() == {
                "type": "followers",
                "count": 0,
                "max_students": 500,
                "locked": False,
            }  # only that


def test_a_full_room_turns_students_away():
    with make_client(room_max_members=2) as client:
        room = new_room(client)
        with (
            client.websocket_connect("/rooms/ws") as one,
            client.websocket_connect("/rooms/ws") as two,
            client.websocket_connect("/rooms/ws") as three,
        ):
            join(one, room["code"])
            join(two, room["code"])
            three.send_json({"type": "join", "code": room["code"]})
            assert closed_with(three) == (1013, "the room is full (2 students)")


def test_an_idle_room_expires_and_its_members_are_told():
    # 1.5 s: the join below must come before the room expires, on a loaded machine too
    with make_client(room_idle_seconds=1.5) as client:
        room = new_room(client)
        with client.websocket_connect("/rooms/ws") as student:
            join(student, room["code"])
            started = time.monotonic()
            assert closed_with(student) == (4404, "the room has expired")
            assert time.monotonic() - started < 4
        with client.websocket_connect("/rooms/ws") as late:
            late.send_json({"type": "join", "code": room["code"]})
            assert closed_with(late)[0] == 4404
        assert client.get(room["qr_svg_url"]).status_code == 404


def test_the_token_bucket_allows_a_burst_then_the_rate():
    now = [0.0]
    bucket = TokenBucket(rate=2, burst=3, clock=lambda: now[0])
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]
    now[0] = 0.5
    assert [bucket.take() for _ in range(2)] == [True, False]


def test_room_settings_come_from_the_environment():
    settings = Settings.from_environ(
        {
            "VALUEGRAPH_REDIS_URL": " redis://h:1/0 ",
            "VALUEGRAPH_ROOM_IDLE_SECONDS": "90",
            "VALUEGRAPH_ROOM_MAX_MEMBERS": "30",
        }
    )
    assert (settings.redis_url, settings.room_idle_seconds, settings.room_max_members) == ("redis://h:1/0", 90.0, 30)
    with pytest.raises(ValueError, match="VALUEGRAPH_ROOM_MAX_ROOMS must be a positive whole number"):
        Settings.from_environ({"VALUEGRAPH_ROOM_MAX_ROOMS": "many"})
    with pytest.raises(ValueError, match="room_send_queue"):
        Settings(room_send_queue=0)
