"""Teach live soak: one long class on real parts, to see that delivery stays fast and memory flat.

200 students on two uvicorn processes sharing a real redis-server (the teacher on A, the
students spread over A and B), 5,000 steps at 20 a second (about 4 minutes). Each student notes
when each change arrives, by its version (the room's versions count the teacher's changes, so
version v is the teacher's change v - 1); the delay is arrival minus sending, one clock. Reports
delivery p50/p99/max, whether every student saw every change in order, and the resident memory
of both app processes and Redis's used memory at the start (everyone joined) and at the end.

    python -m benchmarks.bench_soak [--quick]
"""

import argparse
import asyncio
import json
import random
from pathlib import Path

import httpx
import websockets

from benchmarks.common import load, machine, ms, percentile, print_table
from tests.realservers import app_server, chain_program, redis_process, wait_until

PROGRAM = chain_program(20)
WALK_STEPS = 40  # the program's walk has more steps than this; the teacher cycles through them


class SoakStudent:
    def __init__(self, url: str, code: str):
        self.url, self.code = url, code
        self.arrived: dict[int, float] = {}  # version -> when
        self.versions: list[int] = []
        self.joined = asyncio.Event()
        self.task = asyncio.create_task(self._run())

    async def _run(self):
        async with websockets.connect(self.url, open_timeout=30, max_queue=None) as ws:
            await ws.send(json.dumps({"type": "join", "code": self.code}))
            loop = asyncio.get_running_loop()
            async for raw in ws:
                message = json.loads(raw)
                if message["type"] in ("welcome", "state"):
                    self.arrived.setdefault(message["version"], loop.time())
                    self.versions.append(message["version"])
                    self.joined.set()

    async def stop(self):
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def redis_mb(url: str) -> float:
    import redis

    client = redis.Redis.from_url(url)
    try:
        return client.info("memory")["used_memory"] / 2**20
    finally:
        client.close()


async def soak(a, b, redis_url, students: int, steps: int, rate: float):
    room = httpx.post(f"{a.url}/rooms", json={"state": {"expression": PROGRAM}}).json()
    class_ = []
    for n in range(students):
        class_.append(SoakStudent((a.ws_url, b.ws_url)[n % 2], room["code"]))
        await asyncio.sleep(0.005)
    teacher = await websockets.connect(a.ws_url, max_queue=None)
    await teacher.send(json.dumps({"type": "join", "code": room["code"], "token": room["token"]}))
    reader = asyncio.create_task(_drain(teacher))
    try:
        await wait_until(lambda: all(s.joined.is_set() for s in class_), 120, "every student to join")
        memory_start = (rss_mb(a.process.pid), rss_mb(b.process.pid), redis_mb(redis_url))
        loop = asyncio.get_running_loop()
        sent: dict[int, float] = {}
        started = previous = loop.time()
        for k in range(1, steps + 1):
            # One step every 1/rate s after the last; after a stall it does not catch up in a burst
            # (the room's rate limit would close the teacher, as it should).
            await asyncio.sleep(max(0.0, previous + 1 / rate - loop.time()))
            previous = loop.time()
            sent[k + 1] = loop.time()  # the room was made at version 1: change k is version k + 1
            state = {"expression": PROGRAM, "step": 1 + k % WALK_STEPS}
            await teacher.send(json.dumps({"type": "state", "state": state}))
        last = steps + 1
        await wait_until(lambda: all(last in s.arrived for s in class_), 120, "the last change everywhere")
        memory_end = (rss_mb(a.process.pid), rss_mb(b.process.pid), redis_mb(redis_url))
        delays = [s.arrived[v] - sent[v] for s in class_ for v in sent]
        in_order = all(s.versions == sorted(set(s.versions)) and s.versions[-1] == last for s in class_)
        every = all(all(v in s.arrived for v in sent) for s in class_)
        return delays, in_order and every, memory_start, memory_end, loop.time() - started
    finally:
        reader.cancel()
        await teacher.close()
        for student in class_:
            await student.stop()


async def _drain(ws):
    async for _ in ws:
        pass


def main(quick=False):
    students, steps, rate = (20, 200, 20.0) if quick else (200, 5000, 20.0)
    random.seed(1)
    print(f"\n## Teach live soak\n\n{machine()}; {load()}")
    with redis_process() as redis, app_server(redis_url=redis.url) as a, app_server(redis_url=redis.url) as b:
        delays, complete, start, end, took = asyncio.run(soak(a, b, redis.url, students, steps, rate))
    print_table(
        f"{students} students on two processes + redis-server, {steps:,} steps at {rate:g} a second "
        f"(took {took:.0f} s: {steps / took:.1f} a second)",
        [
            "deliveries",
            "p50 ms",
            "p99 ms",
            "max ms",
            "every change, in order",
            "memory at start (A, B, Redis) MB",
            "at end MB",
        ],
        [
            [
                f"{len(delays):,}",
                ms(percentile(delays, 0.5)),
                ms(percentile(delays, 0.99)),
                ms(max(delays)),
                "yes" if complete else "NO",
                ", ".join(f"{m:.0f}" for m in start),
                ", ".join(f"{m:.0f}" for m in end),
            ]
        ],
        [
            f"The servers, redis-server and the {students} clients (one asyncio loop) share the machine's cores. "
            f"{load()} after the run."
        ],
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
