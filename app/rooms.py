"""Teach live: a teacher's walk drives every student's screen.

A room has a code to read aloud (8 characters from an alphabet without 0/O or 1/I/L look-alikes,
about 40 bits, shown as K7MP-Q2XR) and a secret teacher token, given once to whoever creates
it and stored only as its SHA-256. Members talk over one WebSocket each:

  client -> server   {"type": "join", "code": "K7MP-Q2XR", "token": "..."}   first, within
                     Settings.room_join_seconds; with the token: the teacher, without: a student
                     {"type": "state", "state": RoomState}                    the teacher only
                     {"type": "lock", "locked": bool}                         the teacher only: admit no
                                                                              new students (or again)
  server -> client   {"type": "welcome", "role", "code", "version", "state"}   + to the teacher:
                                                         "followers", "max_students", "locked",
                                                         "max_message_bytes"
                     {"type": "state", "version", "state"}                     every change, in order
                     {"type": "state", "version", "state", "resync": true}    to the teacher, after an
                                                                               outage: send yours if it differs
                     {"type": "followers", "count", "max_students", "locked"} to the teacher
                     {"type": "error", "message"}                              the message was ignored

A teacher's own TypeScript/JavaScript (state.language) is never run here: the state carries the graph
it made, walked instead of the program; a state that leaves the graph out keeps the room's graph of that
code, so only the first message of new code is as big as its graph.

The state is checked (its shape, then its program through the same limits and time budget as
/backward, its step and pinned node against that program's walk) before it is stored in the
broker, which publishes it to every process serving the room; each process hands it to its own
members through a bounded queue per member. Limits close the connection with a reason:
1008 (rate, a forged token), 1009 (size), 1013 (room full, member too slow, the broker unreachable:
reconnect), 4400 (bad join), 4404 (no such room, or it expired), 4408 (no join in time), 4423 (the
teacher locked the room), 4429 (too many codes of no room from this address: the reason says when).
"""

import asyncio
import contextlib
import hashlib
import hmac
import ipaddress
import json
import math
import secrets
import time
import uuid
from collections import deque
from typing import Annotated, Literal

import anyio
from fastapi import WebSocket, WebSocketDisconnect
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from engine import ProgramError

from . import schemas
from .broker import HEARTBEAT, Broker, BrokerUnavailable, RoomGone, RoomRecord, TooManyRooms, make_broker
from .budget import TimeBudgetExceeded
from .graph import GraphError
from .schemas import PLAYER_SPEEDS, RoomState
from .service import Service, answer  # the /backward pipeline, limits and all

CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 8


# ---- the wire format ----


class JoinMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["join"]
    code: str = Field(max_length=40)
    token: str | None = Field(None, max_length=200)


class StateMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["state"]
    state: RoomState


class LockMessage(BaseModel):
    """The teacher closes the room to new students (locked: true) or opens it again."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["lock"]
    locked: bool


ClientMessage = TypeAdapter(Annotated[JoinMessage | StateMessage | LockMessage, Field(discriminator="type")])


class NewRoom(BaseModel):
    """The body of POST /rooms: the teacher's current state."""

    model_config = ConfigDict(extra="forbid")
    state: RoomState
    max_students: int | None = Field(
        None, ge=1, description="Students the room admits (default and most: the server's VALUEGRAPH_ROOM_MAX_MEMBERS)."
    )
    token: str | None = Field(
        None,
        min_length=16,
        max_length=200,
        description="A teacher token from an earlier answer: make that room again under its code if it is gone.",
    )


class RoomCreated(BaseModel):
    code: str = Field(description="The room's code, to read aloud; also in the join link.")
    token: str = Field(description="The teacher's secret: only who holds it drives the room. Never put it in a link.")
    join_url: str
    embed_url: str
    qr_svg_url: str
    websocket_path: str


class RoomProblem(Exception):
    """A state or join the room refuses, with the reason to send back."""


class TooManyCreations(Exception):
    """The client's address has made its rooms for this hour; args: (rooms allowed, seconds until it may again)."""


CREATION_WINDOW = 3600.0  # seconds: room_creations_per_hour counts in windows this long
WRONG_CODE_WINDOW = 60.0  # seconds: room_wrong_codes_per_minute counts in windows this long


def client_key(host: str | None) -> str:
    """Whom the creation limit counts: an IPv4 address, or an IPv6 address's /64 (what one
    subscriber is usually given, so a client cannot step around the limit inside its own network)."""
    try:
        address = ipaddress.ip_address(host or "")
    except ValueError:
        return host or "unknown"  # not an address (a test client, a Unix socket): counted as itself
    if address.version == 4:
        return str(address)
    if address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(ipaddress.ip_network(f"{address}/64", strict=False))


# ---- codes and tokens ----


CODE_HASH_ROUNDS = (
    20_000  # PBKDF2 rounds from a token to its code: finding a token for a given code takes 2**40 of them
)


def code_for_token(token: str) -> str:
    """The room code a teacher token stands for. Binding the two lets the teacher's page make its
    room again under the same code after Redis lost it, while nobody else can: a student knows the
    code, but finding a token for it would take about 2**40 slow hashes."""
    digest = hashlib.pbkdf2_hmac("sha256", token.encode("utf-8", "replace"), b"valuegraph room code", CODE_HASH_ROUNDS)
    number = int.from_bytes(digest[:8], "big")
    letters = []
    for _ in range(CODE_LENGTH):
        number, digit = divmod(number, len(CODE_ALPHABET))
        letters.append(CODE_ALPHABET[digit])
    return "".join(letters)


def normalise_code(text: str) -> str:
    """What a person typed ("k7mp q2xr", "K7MP-Q2XR") as the stored code; RoomProblem if it cannot be one."""
    code = "".join(ch for ch in text.upper() if ch not in " -")
    if len(code) != CODE_LENGTH or any(ch not in CODE_ALPHABET for ch in code):
        raise RoomProblem(f"a room code is {CODE_LENGTH} letters and digits, like K7MP-Q2XR, not {text[:40]!r}")
    return code


def shown_code(code: str) -> str:
    return f"{code[:4]}-{code[4:]}"


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


# ---- checking a state ----


def _walk_size(state: RoomState, limits) -> list[int]:
    # Built from a RoomState already checked, like GET /backward's: unvalidated, so an empty
    # program is the parser's ProgramError ("the program is empty"), not a schema error. The
    # teacher's own TypeScript/JavaScript is never run here: the graph it made is walked instead.
    if state.language:  # as the page posts it: the graph alone
        request = schemas.BackwardRequest.model_construct(graph=state.graph, trace=True)
    else:
        request = schemas.BackwardRequest.model_construct(
            expression=state.expression,
            variables=dict(state.variables),
            variant=state.variant,
            seed=state.seed,
            run=state.run,
            trace=True,
        )
    response = answer(request, limits)
    sort, propagate = response["trace"]["sort"], response["trace"]["propagate"]
    # Steps as the page numbers them (static/js/timeline.js): a start, each pop, a seed, each node.
    return [len(sort) + len(propagate) + 1, len(sort) + 1, len(response["nodes"])]


async def checked_state(state: RoomState, service: Service, known: RoomRecord | None) -> tuple[dict, list[int]]:
    """The state as stored (stage filled in) and its walk; RoomProblem if refused."""
    if state.speed not in PLAYER_SPEEDS:
        raise RoomProblem(
            f"state.speed must be one of {', '.join(f'{s:g}' for s in PLAYER_SPEEDS)}, not {state.speed:g}"
        )
    graph = _graph_record(state.graph)
    if state.language is not None and state.graph is None:
        # The teacher's page sends the graph its code made once: later moves leave it out (a big graph
        # would pass the message limit at every step), and the room keeps the one it has for that code.
        if known is None or any(known.state.get(k) != getattr(state, k) for k in ("expression", "language")):
            raise RoomProblem("state.graph is missing: with `language`, give the graph the code made")
        graph = known.state["graph"]
    same_program = (
        known is not None
        and all(
            known.state.get(k) == getattr(state, k)
            for k in ("expression", "variables", "variant", "seed", "run", "language")
        )
        and known.state.get("graph") == graph
    )
    if same_program:
        walk = known.walk
    else:
        settings = service.settings
        if len(state.expression) > settings.max_source_length:
            raise RoomProblem(
                f"state.expression is {len(state.expression):,} characters, over the limit of "
                f"{settings.max_source_length:,}"
            )
        if state.language is not None and state.graph is None:  # the room's graph, walked afresh
            state = state.model_copy(update={"graph": schemas.Graph.model_validate(graph)})
        try:
            walk = await service.run(_walk_size, state, service.limits)
        except ProgramError as error:
            raise RoomProblem(
                f"the program has an error at line {error.line}, column {error.column}: {error.message}"
            ) from None
        except GraphError as error:
            raise RoomProblem(f"state.graph: {error.message}") from None
        except TimeBudgetExceeded as error:
            raise RoomProblem(str(error)) from None
    last, propagate_start, nodes = walk
    if state.step > last:
        raise RoomProblem(f"state.step is {state.step}, past the walk's last step {last}")
    if state.pinned is not None and state.pinned >= nodes:
        raise RoomProblem(f"state.pinned is {state.pinned}, but the graph has {nodes} nodes")
    stored = state.model_dump(exclude={"graph"})
    stored["graph"] = graph
    stored["stage"] = "sort" if state.step < propagate_start else "propagate"
    return stored, walk


def _wire_number(x):
    if isinstance(x, float) and not math.isfinite(x):
        return "NaN" if math.isnan(x) else "Infinity" if x > 0 else "-Infinity"
    return x


def _graph_record(graph: schemas.Graph | None) -> dict | None:
    """A room's graph as JSON carries it: non-finite numbers as the strings "NaN", "Infinity", "-Infinity"."""
    if graph is None:
        return None
    record = graph.model_dump(exclude_none=True)
    for node in record["nodes"]:
        for name in ("data", "grad", "exponent"):
            if name in node:
                node[name] = _wire_number(node[name])
        node["local_grads"] = [_wire_number(x) for x in node["local_grads"]]
    return record


def errors_text(error: ValidationError) -> str:
    parts = []
    for problem in error.errors()[:3]:
        where = ".".join(str(p) for p in problem["loc"]) or "message"
        parts.append(f"{where}: {problem['msg']}")
    return "; ".join(parts)


# ---- members and rooms in this process ----


EXPIRED = (4404, "the room has expired")  # the close of a member whose room expired under it


def _no_room(code: str) -> str:
    """The reason a join to a code of no room is closed with (4404)."""
    return f"there is no room {shown_code(code)} (it may have expired)"


class Member:
    """One WebSocket; messages to it wait in a bounded queue that its own task drains."""

    def __init__(self, websocket: WebSocket, role: str, max_queue: int):
        self.id = uuid.uuid4().hex
        self.websocket = websocket
        self.role = role
        self.max_queue = max_queue
        self.seen_version = 0
        self._pending: deque[tuple[str, int | None]] = deque()  # (text, state version or None)
        self._ready = asyncio.Event()
        self._close: tuple[int, str] | None = None
        self.counted = False  # a student the broker counts (its join's add_member took a place)

    def send(self, text: str, version: int | None = None) -> None:
        if self._close is not None:
            return
        if version is not None:
            if version <= self.seen_version:
                return  # already shown (the welcome carried it)
            self.seen_version = version
        if len(self._pending) >= self.max_queue:
            self.close(1013, f"too slow: {self.max_queue} messages were waiting; reconnect to resume")
            return
        self._pending.append((text, version))
        self._ready.set()

    def welcome(self, text: str, version: int) -> None:
        """The welcome goes first, and changes heard since joining that it already carries are
        dropped: otherwise a change queued before the room was read would follow a newer welcome."""
        self.seen_version = max(self.seen_version, version)
        newer = [(t, v) for t, v in self._pending if v is None or v > version]
        self._pending = deque([(text, version), *newer])
        self._ready.set()

    def close(self, code: int, reason: str) -> None:
        if self._close is None:
            self._close = (code, reason)
            self._ready.set()

    async def run_writer(self) -> None:
        while True:
            await self._ready.wait()
            self._ready.clear()
            while self._pending and self._close is None:
                await self.websocket.send_text(self._pending.popleft()[0])
            if self._close is not None:
                code, reason = self._close
                with contextlib.suppress(Exception):
                    await self.websocket.close(code, reason)
                return


HUB_STOP_SECONDS = 2.0  # how long stopping a hub waits for each of its parts to end


class RoomHub:
    """This process's members of one room, fed by one subscription to the broker.

    A member is added to `members` the moment it asks for the hub, before any await, so the hub
    is never stopped under a member still joining; the last to leave removes it from the registry
    (no await in between) and then stops it, holding nothing another join needs."""

    def __init__(self, classroom: "Classroom", code: str):
        self.classroom = classroom
        self.code = code
        self.members: set[Member] = set()
        self.started = asyncio.Event()
        self.failed: BaseException | None = None
        self._stopping = False
        self._recovering = False  # the subscription broke once; it is being made again
        self._tasks: list[asyncio.Task] = []
        self._subscription = None
        self._starting = None  # the task of _start (begin): held, as the event loop keeps only a weak reference

    def begin(self) -> None:
        """Start the hub in a task of its own: the join that needed it first may end (its connection's
        task cancelled) while it subscribes, and the others waiting for it go on."""
        self._starting = asyncio.create_task(self._start())

    async def _start(self) -> None:
        try:
            self._subscription = await self.classroom.broker.subscribe(self.code, self._resubscribed)
        except Exception as error:
            self.failed = error  # for every member waiting on `started`
            return
        except BaseException:  # cancelled (the server stops): those waiting are told to come back
            self.failed = BrokerUnavailable(0.0)
            raise
        finally:
            self.started.set()
        if self._stopping:  # everyone left while it subscribed
            await self._close_subscription()
            return
        self._tasks = [asyncio.create_task(self._relay()), asyncio.create_task(self._heartbeat())]

    async def stop(self) -> None:
        """Close the subscription first, so that a relay blocked in its read (redis-py's retrying
        read absorbs a cancellation) sees its connection end; then cancel, and wait a bounded time."""
        self._stopping = True
        self.classroom.running.discard(self)
        await self._close_subscription()
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=HUB_STOP_SECONDS)

    async def _close_subscription(self) -> None:
        if self._subscription is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._subscription.close(), HUB_STOP_SECONDS)

    async def _relay(self) -> None:
        """Hands the room's changes to this process's members. When the subscription breaks it
        waits for the breaker, subscribes again and pushes the current state (a restarted Redis is
        back in a moment); when that fails too it closes every member with 1013 and a reason, and
        their pages reconnect."""
        broker = self.classroom.broker
        while True:
            try:
                if self._subscription is None:
                    self._subscription = await broker.subscribe(self.code, self._resubscribed)
                    await self.push_current()
                async for message in self._subscription:
                    if message["kind"] == "state":
                        text = json.dumps({"type": "state", "version": message["version"], "state": message["state"]})
                        for member in list(self.members):
                            member.send(text, message["version"])
                    else:
                        await self.send_followers()
                self.end(*EXPIRED)
                return
            except RoomGone:
                self.end(*EXPIRED)
                return
            except BrokerUnavailable as down:
                await self._close_subscription()
                self._subscription = None
                if self._recovering:  # a second failure in a row: Redis is down, not a stale connection
                    self.end(1013, outage_reason(down))
                    return
                self._recovering = True
                await asyncio.sleep(down.retry_after)  # then one more try, past the breaker

    def _resubscribed(self) -> None:
        """The client made the subscription's connection again by itself: changes may have been missed."""
        if not self._stopping:
            self._tasks.append(asyncio.create_task(self._push_current_after_reconnect()))

    async def _push_current_after_reconnect(self) -> None:
        try:
            await self.push_current()
        except RoomGone:
            self.end(*EXPIRED)
        except BrokerUnavailable:
            pass  # the relay's read fails too, and handles it

    async def push_current(self) -> None:
        """After subscribing again: what changed meanwhile, to everyone (a version they have seen is dropped)."""
        record = await self.classroom.broker.get(self.code)
        if record is None:
            raise RoomGone
        text = json.dumps({"type": "state", "version": record.version, "state": record.state})
        resync = json.dumps({"type": "state", "version": record.version, "state": record.state, "resync": True})
        for member in list(self.members):
            if member.role == "teacher":
                member.send(resync)  # even if unchanged: moves made during the outage were not stored
            else:
                member.send(text, record.version)
        self._recovering = False
        await self.send_followers()

    async def _heartbeat(self) -> None:
        broker = self.classroom.broker
        interval = min(HEARTBEAT, self.classroom.settings.room_idle_seconds / 2)
        while True:
            await asyncio.sleep(interval)
            try:
                if await broker.get(self.code) is None:
                    self.end(*EXPIRED)
                    return
                for member in list(self.members):
                    if member.counted and member in self.members:
                        with contextlib.suppress(RoomGone):
                            await broker.add_member(self.code, member.id)
                            if member not in self.members:  # it left meanwhile: its leave's removal may be older
                                await broker.remove_member(self.code, member.id)
                await self.send_followers()
            except BrokerUnavailable:
                continue  # the relay notices too, and tells the members

    async def followers(self, record: RoomRecord) -> dict:
        """What the teacher's page shows of its class: how many follow, of how many, and the lock."""
        return {
            "followers": await self.classroom.broker.count_members(self.code),
            "max_students": record.max_members or self.classroom.settings.room_max_members,
            "locked": record.locked,
        }

    async def send_followers(self) -> None:
        teachers = [m for m in self.members if m.role == "teacher"]
        if teachers:
            record = await self.classroom.broker.get(self.code)
            if record is None:
                return  # the heartbeat or the relay closes the room
            shown = await self.followers(record)
            text = json.dumps(
                {
                    "type": "followers",
                    "count": shown["followers"],
                    "max_students": shown["max_students"],
                    "locked": shown["locked"],
                }
            )
            for teacher in teachers:
                teacher.send(text)

    def close_all(self, code: int, reason: str) -> None:
        for member in list(self.members):
            member.close(code, reason)

    def end(self, code: int, reason: str) -> None:
        """The relay or the heartbeat is over for good (the room expired, Redis stayed down): every member
        is closed, and the next join starts a hub of its own, while the members still closing leave this
        one; the last to leave stops it."""
        self.close_all(code, reason)
        if self.classroom.hubs.get(self.code) is self:
            del self.classroom.hubs[self.code]


class Classroom:
    """The rooms this process serves; on app.state.classroom."""

    def __init__(self, service: Service, broker: Broker | None = None):
        self.service = service  # checks each state through the /backward pipeline, within its budget
        self.settings = settings = service.settings
        self.broker = broker or make_broker(
            settings.redis_url, timeout=settings.redis_timeout, retry_seconds=settings.redis_retry_seconds
        )
        self.hubs: dict[str, RoomHub] = {}  # code -> hub; changed only between awaits, so no lock
        self._leaving: set[asyncio.Task] = set()  # members' leaves under way (Classroom._leave)
        self.running: set[RoomHub] = set()  # every hub begun and not yet stopped

    async def close(self) -> None:
        for hub in list(self.running):  # the registered hubs, and those ended whose members are still leaving
            hub.close_all(1001, "the server is shutting down; reconnect to resume")
            await hub.stop()
        if self._leaving:  # the leaves under way stop their hubs too
            await asyncio.wait(self._leaving, timeout=HUB_STOP_SECONDS)
        await self.broker.close()

    async def create_room(
        self, state: RoomState, client: str, token: str | None = None, max_students: int | None = None
    ) -> tuple[str, str]:
        """client: client_key() of who asks; a state refused does not count against it. With
        `token` (the teacher's page making its room again after the broker lost it): the room of
        that token's code, made again if it is gone, or left as it is if it is still there."""
        most = self.settings.room_max_members
        if max_students is not None and max_students > most:
            raise RoomProblem(f"max_students is {max_students:,}, over this server's limit of {most:,}")
        stored, walk = await checked_state(state, self.service, None)
        counted, seconds_left = await self.broker.count("created", client, window_seconds=CREATION_WINDOW)
        if counted > self.settings.room_creations_per_hour:
            raise TooManyCreations(self.settings.room_creations_per_hour, seconds_left)
        for _ in range(1 if token is not None else 5):
            teacher_token = token if token is not None else secrets.token_urlsafe(24)
            code = code_for_token(teacher_token)
            record = RoomRecord(
                teacher=token_digest(teacher_token),
                state=stored,
                version=1,
                walk=walk,
                max_members=max_students or most,
            )
            if await self.broker.create(
                code, record, idle_seconds=self.settings.room_idle_seconds, max_rooms=self.settings.room_max_rooms
            ):
                return code, teacher_token
            if token is not None:
                known = await self.broker.get(code)
                if known is not None and hmac.compare_digest(known.teacher, record.teacher):
                    return code, token  # still there: nothing to make
                raise RoomProblem("that token's room code is taken by another room; start a new room")
        raise TooManyRooms  # five collisions in 2**40 codes: the space is full in practice

    async def _enter(self, code: str, member: Member) -> RoomHub:
        """The room's hub in this process, with `member` in it; started by the first to need it."""
        hub = self.hubs.get(code)
        if hub is None:
            hub = self.hubs[code] = RoomHub(self, code)
            self.running.add(hub)
            hub.begin()
        hub.members.add(member)
        try:
            await hub.started.wait()
            if hub.failed is not None:
                raise hub.failed
        except BaseException:
            if hub.failed is not None and self.hubs.get(code) is hub:
                del self.hubs[code]  # the next join tries afresh
            await self._leave(hub, member)
            raise
        return hub

    async def _leave(self, hub: RoomHub, member: Member) -> None:
        """Out of the hub at once; then, in a task of its own that a cancelled connection (the server
        ending it, a client gone) cannot cut short, uncounted and, for the last member, the hub stopped."""
        hub.members.discard(member)
        last = not hub.members
        if last and self.hubs.get(hub.code) is hub:
            del self.hubs[hub.code]  # a join from now on starts a new hub
        leaving = asyncio.create_task(self._left(hub, member, last))
        self._leaving.add(leaving)
        leaving.add_done_callback(self._leaving.discard)
        await asyncio.shield(leaving)

    async def _left(self, hub: RoomHub, member: Member, last: bool) -> None:
        if member.role == "student":
            with contextlib.suppress(Exception):
                await self.broker.remove_member(hub.code, member.id)
        if last:
            await hub.stop()

    async def serve(self, websocket: WebSocket) -> None:
        """One member's connection, from the join to the end."""
        settings = self.settings
        await websocket.accept()
        try:
            with anyio.fail_after(settings.room_join_seconds):
                message = await websocket.receive()
        except TimeoutError:
            return await _close(websocket, 4408, f"no join message within {settings.room_join_seconds:g} s")
        if message["type"] == "websocket.disconnect":
            return
        first = message.get("text")
        if first is None:
            return await _close(websocket, 4400, "send the join as a JSON text message, not a binary one")
        try:
            if len(first.encode("utf-8", "replace")) > settings.room_max_message_bytes:
                raise RoomProblem(f"the join message is over the limit of {settings.room_max_message_bytes:,} bytes")
            join = ClientMessage.validate_json(first)
            if not isinstance(join, JoinMessage):
                raise RoomProblem('the first message must be a join: {"type": "join", "code": ...}')
            code = normalise_code(join.code)
        except ValidationError as error:
            return await _close(websocket, 4400, _reason(f"bad join: {errors_text(error)}"))
        except RoomProblem as problem:
            return await _close(websocket, 4400, _reason(str(problem)))
        try:
            await self._admit(websocket, join, code)
        except BrokerUnavailable as down:
            await _close(websocket, 1013, outage_reason(down))
        except RoomGone:  # it expired while the join was being read
            await _close(websocket, 4404, _no_room(code))

    async def _admit(self, websocket: WebSocket, join: JoinMessage, code: str) -> None:
        settings, broker = self.settings, self.broker
        # Codes of no room are what a guesser sends; a school behind one address sends hundreds of
        # right ones. So distinct wrong codes are counted per address (a class retrying a room the
        # store lost counts once), and past the limit only the rooms this address already joined
        # are looked up (a right code seen from it still joins).
        client = client_key(websocket.client and websocket.client.host)
        wrong, seconds_left = await broker.count("wrong", client, window_seconds=WRONG_CODE_WINDOW, add=None)
        if wrong >= settings.room_wrong_codes_per_minute and not await broker.joined_before(client, code):
            wait = max(1, math.ceil(seconds_left))
            return await _close(
                websocket,
                4429,
                f"too many codes of no room from this address; try again in {wait} s (retry-after: {wait})",
            )
        record = await broker.get(code)
        if record is None:
            await broker.count("wrong", client, window_seconds=WRONG_CODE_WINDOW, add=code)
            return await _close(websocket, 4404, _no_room(code))
        role = "student"
        if join.token is not None:
            if not hmac.compare_digest(token_digest(join.token), record.teacher):
                return await _close(websocket, 1008, "the teacher token does not match this room")
            role = "teacher"
            await broker.touch(code, idle_seconds=settings.room_idle_seconds)
        elif record.locked:
            return await _close(websocket, 4423, "the teacher has locked this room: no new students")
        most = record.max_members or settings.room_max_members
        full = f"the room is full ({most} student{'s' * (most != 1)})"
        if role == "student" and await broker.count_members(code) >= most:
            return await _close(websocket, 1013, full)

        member = Member(websocket, role, settings.room_send_queue)
        try:
            hub = await self._enter(code, member)  # from here it hears every change; the welcome below comes first
        except RoomGone:
            return await _close(websocket, 4404, _no_room(code))
        writer = asyncio.create_task(member.run_writer())
        try:
            if role == "student":
                if not await broker.add_member(code, member.id, most=most):
                    member.close(1013, full)  # others got the last places first
                    return
                member.counted = True
                await broker.remember_join(client, code, seconds=settings.room_idle_seconds)
            record = await broker.get(code)
            if record is None:
                raise RoomGone
            welcome = {
                "type": "welcome",
                "role": role,
                "code": shown_code(code),
                "version": record.version,
                "state": record.state,
            }
            if role == "teacher":
                welcome.update(await hub.followers(record))
                # The teacher's page holds back a state over it (a big graph) and says why.
                welcome["max_message_bytes"] = settings.room_max_message_bytes
            member.welcome(json.dumps(welcome), record.version)
            await self._receive(websocket, member, code)
        except RoomGone:
            member.close(*EXPIRED)
        except BrokerUnavailable as down:
            member.close(1013, outage_reason(down))
        except (WebSocketDisconnect, RuntimeError):
            pass
        finally:
            member.close(1000, "bye")  # nothing when another close came first
            try:
                await self._leave(hub, member)
            finally:
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(writer, 2)

    async def _receive(self, websocket: WebSocket, member: Member, code: str) -> None:
        settings = self.settings
        bucket = TokenBucket(settings.room_messages_per_second, settings.room_message_burst)
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            if not bucket.take():
                member.close(1008, f"too many messages: more than {settings.room_messages_per_second:g} per second")
                return
            text = message.get("text")
            if text is None:
                member.send(_error("send JSON text messages, not binary ones"))
                continue
            if len(text.encode("utf-8", "replace")) > settings.room_max_message_bytes:
                member.close(1009, f"message too big: over the limit of {settings.room_max_message_bytes:,} bytes")
                return
            if member.role != "teacher":
                member.send(_error("only the teacher can drive this room; your message was ignored"))
                continue
            try:
                parsed = ClientMessage.validate_json(text)
                if isinstance(parsed, LockMessage):
                    await self.broker.set_locked(code, parsed.locked)
                    continue
                if not isinstance(parsed, StateMessage):
                    raise RoomProblem('already joined; send {"type": "state", "state": ...}')
                known = await self.broker.get(code)
                if known is None:
                    raise RoomGone
                stored, walk = await checked_state(parsed.state, self.service, known)
                await self.broker.update(code, stored, walk, idle_seconds=settings.room_idle_seconds)
            except ValidationError as error:
                member.send(_error(f"ignored: {_json_error(text) or errors_text(error)}"))
            except RoomProblem as problem:
                member.send(_error(f"ignored: {problem}"))
            except BrokerUnavailable:
                member.send(
                    _error("not sent: the room's store (Redis) is unreachable; your page sends it when it is back")
                )


class TokenBucket:
    """`rate` tokens a second, at most `burst` saved up; one per message."""

    def __init__(self, rate: float, burst: int, clock=time.monotonic):
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens = float(burst)
        self.at = clock()

    def take(self) -> bool:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


def _error(message: str) -> str:
    return json.dumps({"type": "error", "message": message})


def _json_error(text: str) -> str | None:
    """'not JSON: ... at line L, column C' when the text is not JSON at all."""
    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        return f"the message is not JSON: {error.msg} at line {error.lineno}, column {error.colno}"
    except (RecursionError, ValueError):
        return "the message is not JSON this server can read"
    return None


async def _close(websocket: WebSocket, code: int, reason: str) -> None:
    """Close with a reason; a client already gone is no error (it was only to be told)."""
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
        await websocket.close(code, reason)


def outage_reason(down: BrokerUnavailable) -> str:
    return _reason(f"the room's store (Redis) is unreachable; reconnecting in {math.ceil(down.retry_after)} s…")


def _reason(text: str) -> str:
    # A close frame's reason is at most 123 bytes.
    return text.encode("utf-8")[:123].decode("utf-8", "ignore")
