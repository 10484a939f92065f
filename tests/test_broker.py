"""The broker interface, checked on both implementations with the same tests: the in-process
broker, and the Redis broker on a real redis-server started for the module."""

import asyncio

import pytest
from realservers import redis_server

from app.broker import InProcessBroker, RedisBroker, RoomGone, RoomRecord, TooManyRooms

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def redis_url():
    with redis_server() as url:
        yield url


@pytest.fixture(params=["in-process", "redis"])
async def broker(request):
    made = InProcessBroker() if request.param == "in-process" else RedisBroker(request.getfixturevalue("redis_url"))
    yield made
    await made.close()


def record(step=0) -> RoomRecord:
    return RoomRecord(teacher="ab" * 32, state={"expression": "a", "step": step}, version=1, walk=[13, 9, 4])


_codes = iter(range(10**6))


def code() -> str:
    return f"TEST{next(_codes):04d}"  # distinct per test: the Redis server is shared by the module


async def test_a_room_is_created_once_and_read_back(broker):
    c = code()
    assert await broker.create(c, record(), idle_seconds=60, max_rooms=10**6)
    assert not await broker.create(c, record(step=5), idle_seconds=60, max_rooms=10**6)
    got = await broker.get(c)
    assert (got.teacher, got.state, got.version, got.walk) == ("ab" * 32, {"expression": "a", "step": 0}, 1, [13, 9, 4])
    assert await broker.get(code()) is None


async def test_room_creations_are_counted_per_client_in_windows(broker):
    first, second = code(), code()  # unique client names: the Redis server is shared by the module
    # A 2 s window: on a loaded machine three calls may take longer than a shorter one, which ends it early.
    counts = [await broker.count("created", first, window_seconds=2) for _ in range(3)]
    assert [counted for counted, _ in counts] == [1, 2, 3]
    assert all(0 < left <= 2 for _, left in counts)
    assert (await broker.count("created", second, window_seconds=2))[0] == 1
    await asyncio.sleep(2.1)
    counted, left = await broker.count("created", first, window_seconds=60)
    assert counted == 1 and 59 < left <= 60, "a new window starts with the first room after the last one ended"


async def test_the_in_process_broker_forgets_ended_creation_windows():
    """Clients from ever new addresses must not grow the count for ever."""
    now = [0.0]
    broker = InProcessBroker(clock=lambda: now[0])
    for hour in range(5):
        for client in range(3_000):
            await broker.count("created", f"{hour}:{client}", window_seconds=3600)
        now[0] += 3600
    assert len(broker._counts) <= 2 * 3_000


async def test_updates_are_published_in_order_with_versions(broker):
    c = code()
    await broker.create(c, record(), idle_seconds=60, max_rooms=10**6)
    subscription = await broker.subscribe(c)
    for step in range(1, 21):
        assert await broker.update(c, {"step": step}, [20, 9, 4], idle_seconds=60) == step + 1
    received = []
    async for message in subscription:
        received.append(message)
        if len(received) == 20:
            break
    await subscription.close()
    assert [(m["kind"], m["version"], m["state"]["step"]) for m in received] == [
        ("state", s + 1, s) for s in range(1, 21)
    ]
    got = await broker.get(c)
    assert (got.version, got.state, got.walk) == (21, {"step": 20}, [20, 9, 4])


async def test_members_are_counted_and_their_changes_announced(broker):
    c = code()
    await broker.create(c, record(), idle_seconds=60, max_rooms=10**6)
    subscription = await broker.subscribe(c)
    await broker.add_member(c, "one")
    await broker.add_member(c, "two")
    await broker.add_member(c, "two")  # a heartbeat: no news
    assert await broker.count_members(c) == 2
    await broker.remove_member(c, "one")
    assert await broker.count_members(c) == 1
    kinds = []
    async for message in subscription:
        kinds.append(message["kind"])
        if len(kinds) == 3:
            break
    await subscription.close()
    assert kinds == ["presence"] * 3


async def test_an_idle_room_expires(broker):
    c = code()
    # Margins of 0.6 s either way: the suite shares two cores with browsers (0.3 s once fell short under load).
    await broker.create(c, record(), idle_seconds=2.0, max_rooms=10**6)
    await asyncio.sleep(1.2)
    await broker.touch(c, idle_seconds=2.0)  # the teacher is there: pushed back
    await asyncio.sleep(1.4)  # 2.6 s since it was made, 1.4 s since the touch
    assert await broker.get(c) is not None
    await asyncio.sleep(1.2)
    assert await broker.get(c) is None
    with pytest.raises(RoomGone):
        await broker.update(c, {"step": 1}, [13, 9, 4], idle_seconds=1)
    with pytest.raises(RoomGone):
        await broker.touch(c, idle_seconds=1)
    with pytest.raises(RoomGone):
        await broker.add_member(c, "late")


async def test_the_number_of_open_rooms_is_bounded(broker, request):
    if isinstance(broker, RedisBroker):  # the module's server holds the other tests' rooms too
        await broker._redis.delete(RedisBroker.ROOMS)
    first, second = code(), code()
    await broker.create(first, record(), idle_seconds=1.0, max_rooms=1)  # 1 s to refuse the second, under load too
    with pytest.raises(TooManyRooms):
        await broker.create(second, record(), idle_seconds=60, max_rooms=1)
    await asyncio.sleep(1.1)  # the first expired: its place is free again
    assert await broker.create(second, record(), idle_seconds=60, max_rooms=1)


async def test_a_count_can_be_read_without_adding(broker):
    client = code()
    assert await broker.count("wrong", client, window_seconds=60, add=None) == (0, 0.0)
    await broker.count("wrong", client, window_seconds=60)
    await broker.count("wrong", client, window_seconds=60)
    counted, left = await broker.count("wrong", client, window_seconds=60, add=None)
    assert counted == 2 and 59 < left <= 60
    assert (await broker.count("created", client, window_seconds=60, add=None))[0] == 0  # kinds apart


async def test_distinct_texts_are_counted_once_each(broker):
    client = code()
    for text in ("AAAA", "BBBB", "AAAA", "AAAA"):
        counted, left = await broker.count("wrong", client, window_seconds=60, add=text)
    assert counted == 2 and 59 < left <= 60
    assert (await broker.count("wrong", client, window_seconds=60, add=None))[0] == 2


async def test_joins_are_remembered_per_address_and_room_for_a_while(broker):
    client, room = code(), code()
    assert not await broker.joined_before(client, room)
    await broker.remember_join(client, room, seconds=1.0)  # 1 s to read it back, under load too
    assert await broker.joined_before(client, room)
    assert not await broker.joined_before(client, code())
    await asyncio.sleep(1.1)
    assert not await broker.joined_before(client, room)


async def test_a_room_keeps_its_size_and_its_lock(broker):
    c = code()
    made = record()
    made.max_members = 30
    await broker.create(c, made, idle_seconds=60, max_rooms=10**6)
    subscription = await broker.subscribe(c)
    got = await broker.get(c)
    assert (got.max_members, got.locked) == (30, False)
    await broker.set_locked(c, True)
    assert (await broker.get(c)).locked is True
    assert await asyncio.wait_for(anext(aiter(subscription)), 5) == {"kind": "presence"}  # the teachers are told
    await subscription.close()
    with pytest.raises(RoomGone):
        await broker.set_locked(code(), True)


async def test_a_room_is_never_filled_past_its_size_by_racing_joins(broker):
    c = code()
    await broker.create(c, record(), idle_seconds=60, max_rooms=10**6)
    admitted = await asyncio.gather(*(broker.add_member(c, f"m{n}", most=5) for n in range(40)))
    assert sum(admitted) <= 5 and await broker.count_members(c) == sum(admitted)
    assert await broker.add_member(c, "m0" if admitted[0] else f"m{admitted.index(True)}", most=5)  # a heartbeat
