"""Where Teach live rooms live: one interface, two implementations.

A room is a record {teacher: sha256 of the teacher token, state, version, walk} kept
under its code, plus a channel on which every change is published to every process serving a
member, plus the set of members (to count followers). `InProcessBroker` keeps all of it in this
process (the default: one `valuegraph` needs nothing else); `RedisBroker` keeps it in Redis (a
hash per room, a pub/sub channel per room, a sorted set of members per room) so that any worker
or instance can serve any member, and nothing is lost when one of them dies.

Members are counted by heartbeat, not by join/leave alone: a process killed with -9 never says
goodbye, so each member's entry carries an expiry that its process keeps pushing forward
(`MEMBER_TTL`), and the count only includes entries not yet expired.
"""

import asyncio
import functools
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

MEMBER_TTL = 15.0  # seconds a member counts after its process last confirmed it
HEARTBEAT = 5.0  # how often a process confirms its members (and notices expired rooms)
REDIS_CONNECTIONS = 1000  # per process
REDIS_HEALTH_CHECK_SECONDS = (
    10  # a pooled connection idle this long is PINGed before use, so a stale one is found early
)


class RoomGone(Exception):
    """The room does not exist, or has expired."""


class TooManyRooms(Exception):
    pass


class BrokerUnavailable(Exception):
    """The broker (Redis) cannot be reached; args: (seconds until it is tried again,)."""

    @property
    def retry_after(self) -> float:
        return self.args[0]


class Breaker:
    """After a failure, calls fail at once (BrokerUnavailable) for `open_seconds` instead of each
    waiting for a timeout; then the next calls go through, and one that fails opens it again."""

    def __init__(self, open_seconds: float, clock=time.monotonic):
        self.open_seconds, self.clock = open_seconds, clock
        self._open_until = 0.0

    def check(self) -> None:
        left = self._open_until - self.clock()
        if left > 0:
            raise BrokerUnavailable(left)

    def failed(self) -> BrokerUnavailable:
        self._open_until = self.clock() + self.open_seconds
        return BrokerUnavailable(self.open_seconds)

    def succeeded(self) -> None:
        self._open_until = 0.0


@dataclass
class RoomRecord:
    teacher: str  # sha256 hex of the teacher token
    state: dict
    version: int
    walk: list[int]  # the state's walk: [last step, first step of propagation, nodes]
    max_members: int = 0  # students the teacher allows (0: the server's room_max_members)
    locked: bool = False  # the teacher admits no new students


class Subscription:
    def __init__(self, messages: AsyncIterator[dict], close):
        self._messages = messages
        self.close = close

    def __aiter__(self):
        return self._messages


class Broker:
    """The interface both brokers implement (and tests/test_broker.py checks, for both)."""

    async def create(self, code: str, record: RoomRecord, *, idle_seconds: float, max_rooms: int) -> bool:
        """Store a new room; False if the code is taken; TooManyRooms at the limit."""
        raise NotImplementedError

    async def count(
        self, kind: str, client: str, *, window_seconds: float, add: str | bool | None = True
    ) -> tuple[int, float]:
        """Count one more `kind` of thing (rooms "created", "wrong" codes) done by `client` in its
        current window, which starts at its first and lasts window_seconds: (counted in the window,
        this one included; seconds left). add=True counts one more; add="text" counts distinct
        texts (the same one again adds nothing); add=None only reads the count (0 outside a window).
        A kind is counted one way or the other, not both."""
        raise NotImplementedError

    async def remember_join(self, client: str, code: str, *, seconds: float) -> None:
        """`client` joined room `code`: for `seconds` it counts as one of that room's addresses."""
        raise NotImplementedError

    async def joined_before(self, client: str, code: str) -> bool:
        raise NotImplementedError

    async def set_locked(self, code: str, locked: bool) -> None:
        """Lock the room to new students (or open it again), and tell its processes."""
        raise NotImplementedError

    async def get(self, code: str) -> RoomRecord | None:
        raise NotImplementedError

    async def update(self, code: str, state: dict, walk: list[int], *, idle_seconds: float) -> int:
        """Replace the room's state, push its expiry back, publish it; returns its new version."""
        raise NotImplementedError

    async def touch(self, code: str, *, idle_seconds: float) -> None:
        """Push the room's expiry back (the teacher is there, even if not moving)."""
        raise NotImplementedError

    async def subscribe(self, code: str, on_resubscribed=None) -> "Subscription":
        """The room's messages from the moment this returns: {"kind": "state", "version",
        "state"} or {"kind": "presence"}. Iterate it; close() it when done. on_resubscribed():
        called when the subscription's connection was made again (messages may have been missed)."""
        raise NotImplementedError

    async def add_member(self, code: str, member: str, *, most: int | None = None) -> bool:
        """Count `member` (again) until MEMBER_TTL from now, and tell the room. With `most`: a new
        member is counted only if the room then has at most that many (checked atomically, so
        joins racing through several processes cannot overfill it); False if it was refused."""
        raise NotImplementedError

    async def remove_member(self, code: str, member: str) -> None:
        raise NotImplementedError

    async def count_members(self, code: str) -> int:
        raise NotImplementedError

    async def ping(self) -> None:
        """BrokerUnavailable if the broker cannot be reached now."""

    async def close(self) -> None:
        pass


@dataclass
class _Room:
    record: RoomRecord
    expires: float
    members: dict[str, float] = field(default_factory=dict)
    queues: set[asyncio.Queue] = field(default_factory=set)


class InProcessBroker(Broker):
    """Rooms in a dict; subscribers are queues. For one process (any number of connections)."""

    def __init__(self, clock=time.monotonic):
        self._rooms: dict[str, _Room] = {}
        self._counts: dict[str, list] = {}  # "kind:client" -> [end of its window, things counted in it]
        self._joins: dict[tuple[str, str], float] = {}  # (client, code) -> until when it counts
        # Entries; past it the ended windows are dropped (amortised: the bound doubles past the live ones).
        self._forget_above = 1024
        self._clock = clock

    def _live(self, code: str) -> _Room | None:
        room = self._rooms.get(code)
        if room is not None and room.expires <= self._clock():
            del self._rooms[code]
            for queue in room.queues:
                queue.put_nowait(None)  # ends the subscription
            return None
        return room

    async def create(self, code, record, *, idle_seconds, max_rooms):
        for known in list(self._rooms):
            self._live(known)  # drop the expired ones before counting
        if code in self._rooms:
            return False
        if len(self._rooms) >= max_rooms:
            raise TooManyRooms
        self._rooms[code] = _Room(record, self._clock() + idle_seconds)
        return True

    async def count(self, kind, client, *, window_seconds, add=True):
        now = self._clock()
        if len(self._counts) > self._forget_above:  # so that many addresses cannot grow the dict for ever
            self._counts = {known: counted for known, counted in self._counts.items() if counted[0] > now}
            self._forget_above = max(1024, 2 * len(self._counts))
        key = f"{kind}:{client}"
        counted = self._counts.get(key)
        if counted is None or counted[0] <= now:
            if add is None:
                return 0, 0.0
            counted = self._counts[key] = [now + window_seconds, set() if isinstance(add, str) else 0]
        if isinstance(add, str):
            counted[1].add(add)
        elif add:
            counted[1] += 1
        return (len(counted[1]) if isinstance(counted[1], set) else counted[1]), counted[0] - now

    async def remember_join(self, client, code, *, seconds):
        now = self._clock()
        if len(self._joins) > self._forget_above:
            self._joins = {known: until for known, until in self._joins.items() if until > now}
        self._joins[client, code] = now + seconds

    async def joined_before(self, client, code):
        return self._joins.get((client, code), 0) > self._clock()

    async def set_locked(self, code, locked):
        room = self._live(code)
        if room is None:
            raise RoomGone
        room.record.locked = locked
        self._publish(room, {"kind": "presence"})

    async def get(self, code):
        room = self._live(code)
        return None if room is None else RoomRecord(**vars(room.record))  # a copy: the caller may keep it

    async def update(self, code, state, walk, *, idle_seconds):
        room = self._live(code)
        if room is None:
            raise RoomGone
        record = room.record
        record.state, record.walk = state, walk
        record.version += 1
        room.expires = self._clock() + idle_seconds
        self._publish(room, {"kind": "state", "version": record.version, "state": state})
        return record.version

    async def touch(self, code, *, idle_seconds):
        room = self._live(code)
        if room is None:
            raise RoomGone
        room.expires = self._clock() + idle_seconds

    def _publish(self, room: _Room, message: dict) -> None:
        for queue in room.queues:
            queue.put_nowait(message)

    async def subscribe(self, code, on_resubscribed=None):
        room = self._live(code)
        if room is None:
            raise RoomGone
        queue: asyncio.Queue = asyncio.Queue()
        room.queues.add(queue)

        async def messages():
            while (message := await queue.get()) is not None:
                yield message

        async def close():
            room.queues.discard(queue)
            queue.put_nowait(None)  # ends a read in progress

        return Subscription(messages(), close)

    async def add_member(self, code, member, *, most=None):
        room = self._live(code)
        if room is None:
            raise RoomGone
        known = member in room.members
        if not known and most is not None and await self.count_members(code) >= most:
            return False
        room.members[member] = self._clock() + MEMBER_TTL
        if not known:
            self._publish(room, {"kind": "presence"})
        return True

    async def remove_member(self, code, member):
        room = self._live(code)
        if room is not None and room.members.pop(member, None) is not None:
            self._publish(room, {"kind": "presence"})

    async def count_members(self, code):
        room = self._live(code)
        if room is None:
            return 0
        now = self._clock()
        for member, expires in list(room.members.items()):
            if expires <= now:
                del room.members[member]
        return len(room.members)


def through_breaker(method):
    """Runs an async method of an object with `breaker` and `down_errors` through that breaker: a
    connection or timeout error (after the client's one retry on a stale connection) becomes
    BrokerUnavailable (a 503), at once while the breaker is open; never a crash."""

    @functools.wraps(method)
    async def guarded(self, *args, **kwargs):
        self.breaker.check()
        try:
            result = await method(self, *args, **kwargs)
        except self.down_errors as error:
            raise self.breaker.failed() from error
        self.breaker.succeeded()
        return result

    return guarded


class RedisBroker(Broker):
    """Rooms in Redis: `vg:room:CODE` (a hash: the record's fields, with the idle expiry),
    `vg:room:CODE:members` (a sorted set: member -> expiry time), the channel `vg:room:CODE`,
    `vg:rooms` (a sorted set: code -> expiry time, to bound how many rooms are open), and
    `vg:KIND:CLIENT` (things of a kind that client did in its window, expiring with the window),
    `vg:joined:CLIENT:CODE` (that client joined that room lately).

    Every call goes through a Breaker: while Redis is down, callers get BrokerUnavailable at once."""

    ROOMS = "vg:rooms"

    def __init__(self, url: str, *, timeout: float = 2.0, retry_seconds: float = 2.0):
        try:
            import redis.asyncio  # only needed when VALUEGRAPH_REDIS_URL is set
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff
            from redis.exceptions import ConnectionError, TimeoutError
        except ImportError:
            raise RuntimeError(
                "VALUEGRAPH_REDIS_URL is set, but the redis client is not installed: pip install 'valuegraph[redis]'"
            ) from None

        self.down_errors = (ConnectionError, TimeoutError, OSError)
        self.breaker = Breaker(retry_seconds)
        # Blocking: a burst of joins waits for a connection instead of failing. Each room this
        # process serves holds one more for its subscription. One retry, at once: a pooled
        # connection that went stale (Redis restarted) is replaced; a Redis that is down fails fast.
        pool = redis.asyncio.BlockingConnectionPool.from_url(
            url,
            max_connections=REDIS_CONNECTIONS,
            timeout=20,
            health_check_interval=REDIS_HEALTH_CHECK_SECONDS,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            socket_keepalive=True,
            retry=Retry(NoBackoff(), 1),
            retry_on_error=[ConnectionError, TimeoutError],
        )
        self._redis = redis.asyncio.Redis(connection_pool=pool)

        class PubSub(redis.asyncio.client.PubSub):
            """Tells its owner when its connection was made again (the client's one retry after
            Redis restarted), since messages published meanwhile never arrive."""

            on_resubscribed = None

            async def on_connect(self, connection):
                await super().on_connect(connection)
                if self.on_resubscribed is not None:
                    self.on_resubscribed()

        self._pubsub_class = PubSub

    @staticmethod
    def _key(code: str) -> str:
        return f"vg:room:{code}"

    @through_breaker
    async def create(self, code, record, *, idle_seconds, max_rooms):
        now = time.time()
        await self._redis.zremrangebyscore(self.ROOMS, "-inf", now)
        if await self._redis.zcard(self.ROOMS) >= max_rooms:
            raise TooManyRooms
        key = self._key(code)
        fields = {
            "teacher": record.teacher,
            "state": json.dumps(record.state),
            "version": record.version,
            "walk": json.dumps(record.walk),
            "max_members": record.max_members,
            "locked": int(record.locked),
        }
        if not await self._redis.hsetnx(key, "teacher", record.teacher):
            return False
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping=fields)
            pipe.pexpire(key, int(idle_seconds * 1000))
            pipe.zadd(self.ROOMS, {code: now + idle_seconds})
            await pipe.execute()
        return True

    @through_breaker
    async def count(self, kind, client, *, window_seconds, add=True):
        key = f"vg:{kind}:{client}"
        if add is None or isinstance(add, str):  # distinct texts: a set; or only reading
            async with self._redis.pipeline(transaction=True) as pipe:
                if add is not None:
                    pipe.sadd(key, add)
                    pipe.pexpire(key, int(window_seconds * 1000), nx=True)  # the window starts at the first
                pipe.type(key)
                pipe.pttl(key)
                *_, kind_of, left = await pipe.execute()
            if left <= 0:
                return 0, 0.0
            counted = await (self._redis.scard(key) if kind_of == b"set" else self._redis.get(key))
            return int(counted or 0), left / 1000
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.set(key, 0, nx=True, px=int(window_seconds * 1000))  # the window starts at the first room
            pipe.incr(key)  # keeps the key's expiry
            pipe.pttl(key)
            _, counted, left = await pipe.execute()
        return counted, left / 1000

    @through_breaker
    async def get(self, code):
        fields = await self._redis.hgetall(self._key(code))
        if b"state" not in fields:
            return None
        return RoomRecord(
            teacher=fields[b"teacher"].decode(),
            state=json.loads(fields[b"state"]),
            version=int(fields[b"version"]),
            walk=json.loads(fields[b"walk"]),
            max_members=int(fields.get(b"max_members", 0)),
            locked=fields.get(b"locked") == b"1",
        )

    @through_breaker
    async def remember_join(self, client, code, *, seconds):
        await self._redis.set(f"vg:joined:{client}:{code}", 1, px=int(seconds * 1000))

    @through_breaker
    async def joined_before(self, client, code):
        return bool(await self._redis.exists(f"vg:joined:{client}:{code}"))

    @through_breaker
    async def set_locked(self, code, locked):
        key = self._key(code)
        if not await self._redis.exists(key):
            raise RoomGone
        await self._redis.hset(key, "locked", int(locked))
        await self._redis.publish(key, '{"kind": "presence"}')

    @through_breaker
    async def update(self, code, state, walk, *, idle_seconds):
        key = self._key(code)
        if not await self._redis.exists(key):
            raise RoomGone
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping={"state": json.dumps(state), "walk": json.dumps(walk)})
            pipe.hincrby(key, "version", 1)
            pipe.pexpire(key, int(idle_seconds * 1000))
            pipe.zadd(self.ROOMS, {code: time.time() + idle_seconds})
            _, version, _, _ = await pipe.execute()
        await self._redis.publish(key, json.dumps({"kind": "state", "version": version, "state": state}))
        return version

    @through_breaker
    async def touch(self, code, *, idle_seconds):
        if not await self._redis.pexpire(self._key(code), int(idle_seconds * 1000)):
            raise RoomGone
        await self._redis.zadd(self.ROOMS, {code: time.time() + idle_seconds})

    @through_breaker
    async def subscribe(self, code, on_resubscribed=None):
        pubsub = self._pubsub_class(self._redis.connection_pool, ignore_subscribe_messages=True)
        pubsub.on_resubscribed = on_resubscribed
        try:
            await pubsub.subscribe(self._key(code))
        except BaseException:
            await pubsub.aclose()
            raise

        async def messages():
            try:
                async for message in pubsub.listen():
                    if message["type"] == "message":
                        yield json.loads(message["data"])
            except self.down_errors as error:
                raise self.breaker.failed() from error

        return Subscription(messages(), pubsub.aclose)

    @through_breaker
    async def add_member(self, code, member, *, most=None):
        key = self._key(code)
        if not await self._redis.exists(key):
            raise RoomGone
        now = time.time()
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.zremrangebyscore(key + ":members", "-inf", now)
            pipe.zadd(key + ":members", {member: now + MEMBER_TTL})
            pipe.zcard(key + ":members")
            pipe.pexpire(key + ":members", int(MEMBER_TTL * 2000))
            _, added, counted, _ = await pipe.execute()
        if added and most is not None and counted > most:
            await self._redis.zrem(key + ":members", member)  # over: this join loses the race
            return False
        if added:
            await self._redis.publish(key, '{"kind": "presence"}')
        return True

    @through_breaker
    async def remove_member(self, code, member):
        key = self._key(code)
        if await self._redis.zrem(key + ":members", member):
            await self._redis.publish(key, '{"kind": "presence"}')

    @through_breaker
    async def count_members(self, code):
        key = self._key(code) + ":members"
        now = time.time()
        await self._redis.zremrangebyscore(key, "-inf", now)
        return await self._redis.zcard(key)

    @through_breaker
    async def ping(self):
        await self._redis.ping()

    async def close(self):
        await self._redis.aclose()


def make_broker(redis_url: str, *, timeout: float = 2.0, retry_seconds: float = 2.0) -> Broker:
    return RedisBroker(redis_url, timeout=timeout, retry_seconds=retry_seconds) if redis_url else InProcessBroker()
