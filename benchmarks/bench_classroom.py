"""Teach live: how long a teacher's step takes to reach every student (loopback only).

Set-ups side by side in the same run: one uvicorn with the in-process broker, two uvicorns
sharing a real redis-server (the teacher on A, the students spread over A and B), and, as the
peer that decided `valuegraph`'s setting, one uvicorn with WebSocket per-message deflate on
(uvicorn's default; the clients offer it, as browsers do). The teacher sends a fixed number of
steps at a fixed pace (bounded loops); each student notes when each step arrives; the delay is
arrival minus sending, one clock (one process). The set-ups take turns, `rounds` times, so a
change in the machine's load falls on all of them.

    python -m benchmarks.bench_classroom [--quick]
"""

import argparse
import asyncio
import contextlib

import httpx

from benchmarks.common import load, machine, ms, percentile, print_table, verdict
from tests.realservers import Student, Teacher, app_server, chain_program, redis_server, wait_until

TARGET_P95 = 0.250  # seconds, the bound on loopback


async def lesson(teacher_url: str, student_urls: list[str], api: str, students: int, steps: int, pace: float):
    program = chain_program(steps)
    room = httpx.post(f"{api}/rooms", json={"state": {"expression": program}}).json()
    teacher = Teacher(teacher_url, room["code"], room["token"], program)
    await teacher.connect()
    members = [Student([student_urls[i % len(student_urls)]], room["code"]) for i in range(students)]
    for member in members:
        member.start()
    try:
        await wait_until(lambda: all(m.joined.is_set() for m in members), 60, "the students to join")
        for step in range(1, steps + 1):
            await teacher.step(step)
            await asyncio.sleep(pace)
        await wait_until(lambda: all(m.steps[-1:] == [steps] for m in members), 60, "the last step")
        delays = [m.times[k] - teacher.sent[k] for m in members for k in range(1, steps + 1)]
        in_order = all(m.steps == list(range(steps + 1)) for m in members)
        return delays, in_order
    finally:
        for member in members:
            await member.stop()
        await teacher.close()


SETUPS = {
    "in-process": "1 uvicorn, in-process broker",
    "redis": "2 uvicorns + redis-server (teacher on A, students on A and B)",
    "deflate": "peer: 1 uvicorn, in-process, per-message deflate on (uvicorn's default)",
}


def measure(setup: str, students: int, steps: int, pace: float):
    with contextlib.ExitStack() as stack:
        if setup == "redis":
            url = stack.enter_context(redis_server())
            a = stack.enter_context(app_server(redis_url=url))
            b = stack.enter_context(app_server(redis_url=url))
            servers = [a, b]
        else:
            a = stack.enter_context(app_server(deflate=setup == "deflate"))
            servers = [a]
        return asyncio.run(lesson(a.ws_url, [s.ws_url for s in servers], a.url, students, steps, pace))


def main(quick=False, students=None, steps=None, rounds=None):
    students = students or (20 if quick else 200)
    steps = steps or (10 if quick else 50)
    rounds = rounds or (1 if quick else 3)
    pace = 0.1
    print(f"\n## Teach live\n\n{machine()}; {load()}")
    delays = {setup: [] for setup in SETUPS}
    in_order = dict.fromkeys(SETUPS, True)
    for _ in range(rounds):
        for setup in SETUPS:
            measured, ordered = measure(setup, students, steps, pace)
            delays[setup] += measured
            in_order[setup] &= ordered
    rows, p95s = [], []
    for setup, name in SETUPS.items():
        p95 = percentile(delays[setup], 0.95)
        if setup != "deflate":
            p95s.append(p95)
        rows.append(
            [
                name,
                students,
                steps * rounds,
                f"{len(delays[setup]):,}",
                ms(percentile(delays[setup], 0.5)),
                ms(p95),
                ms(max(delays[setup])),
                "yes" if in_order[setup] else "NO",
            ]
        )
    print_table(
        f"A step from the teacher to {students} students, one step every {pace * 1e3:.0f} ms, {rounds} rounds taking "
        "turns",
        ["set-up", "students", "steps", "deliveries", "p50 ms", "p95 ms", "max ms", "every step, in order"],
        rows,
        [
            f"Target: p95 under {TARGET_P95 * 1e3:.0f} ms on loopback, as `valuegraph` serves: "
            f"{', '.join(f'{p * 1e3:.1f} ms' for p in p95s)}, {verdict(all(p < TARGET_P95 for p in p95s))}.",
            f"The servers, redis-server and the {students} clients (one asyncio loop) share the machine's cores. "
            f"{load()} after the runs.",
        ],
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
