"""A WebSocket client that talks to the ASGI app in this process, with timeouts everywhere: a
test that would wait for ever fails instead. Each socket can say which address it comes from."""

import asyncio
import json
import threading


class Closed(Exception):
    """The server closed the socket; args: (code, reason)."""


class AsgiSocket:
    def __init__(self, app, path: str = "/rooms/ws", client: tuple[str, int] = ("203.0.113.7", 40000), headers=()):
        self.scope = {
            "type": "websocket",
            "asgi": {"version": "3.0"},
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "headers": [(b"host", b"testserver"), *headers],
            "client": client,
            "server": ("testserver", 80),
            "scheme": "ws",
            "subprotocols": [],
        }
        self.app = app
        self._to_app: asyncio.Queue = asyncio.Queue()
        self._from_app: asyncio.Queue = asyncio.Queue()
        self._task = None
        self.close_code: int | None = None
        self.close_reason = ""

    async def connect(self, seconds: float = 5) -> "AsgiSocket":
        self._task = asyncio.create_task(self.app(self.scope, self._to_app.get, self._from_app.put))
        await self._to_app.put({"type": "websocket.connect"})
        message = await self._next(seconds)
        assert message["type"] == "websocket.accept", message
        return self

    async def _next(self, seconds: float) -> dict:
        return await asyncio.wait_for(self._from_app.get(), seconds)

    async def send_json(self, value) -> None:
        await self._to_app.put({"type": "websocket.receive", "text": json.dumps(value)})

    async def receive_json(self, seconds: float = 5):
        """The next message; Closed(code, reason) if the server closed instead; TimeoutError after `seconds`."""
        message = await self._next(seconds)
        if message["type"] == "websocket.close":
            self.close_code, self.close_reason = message.get("code", 1000), message.get("reason", "")
            raise Closed(self.close_code, self.close_reason)
        return json.loads(message["text"])

    async def join(self, code: str, token: str | None = None, seconds: float = 5) -> dict:
        await self.send_json({"type": "join", "code": code, **({"token": token} if token else {})})
        welcome = await self.receive_json(seconds)
        assert welcome["type"] == "welcome", welcome
        return welcome

    async def closed_with(self, seconds: float = 5) -> tuple[int, str]:
        """Read until the server closes: its (code, reason)."""
        async with asyncio.timeout(seconds):
            while True:
                try:
                    await self.receive_json(seconds)
                except Closed as closed:
                    return closed.args

    async def leave(self, seconds: float = 5) -> None:
        """Disconnect as a browser does, and wait for the server's side of it to end."""
        await self._to_app.put({"type": "websocket.disconnect", "code": 1000})
        await asyncio.wait_for(asyncio.shield(self._task), seconds)

    def abandon(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()


def run_bounded(main, seconds: float):
    """asyncio.run(main()) in a thread of its own; fails if it has not ended within `seconds`,
    even when the server under test wedges its event loop for ever (the thread is then left)."""
    outcome: list = []

    def run():
        try:
            outcome.append(("ok", asyncio.run(main())))
        except BaseException as error:  # handed to the test's thread
            outcome.append(("error", error))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise AssertionError(f"still waiting after {seconds} s: the server never let it finish")
    kind, value = outcome[0]
    if kind == "error":
        raise value
    return value
