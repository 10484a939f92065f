"""Jobs (issue 21, runs longer than a request): POST /runs, GET and DELETE /runs/{id}, GET
/runs/{id}/graph, on the real app in-process, each job in a real worker process (the local pool),
each limit named in the failure it causes."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
import pytest

from app import schemas
from app.config import Settings
from app.main import create_app
from app.serialize import COLUMNS_MEDIA_TYPE
from tests.realservers import valuegraph_server

pytestmark = pytest.mark.anyio

# Three steps of gradient descent on x*x: three backward() calls, a printed line per step.
DESCENT = """x = Value(2.0)
for step in range(3):
    loss = x * x
    x.grad = 0.0
    loss.backward()
    print(f"step {step} loss {loss.data}")
    x.data -= 0.1 * x.grad
"""
FOREVER = "n = 0\nwhile True:\n    n = n + 1\n"  # in constant memory: only a limit or a cancel ends it
# Several times the loaded machine's worst start of a job's process: a bound on a hang, not a timing.
PATIENCE = 60.0
COLUMNS = {"accept": COLUMNS_MEDIA_TYPE}  # the page's Accept asks for the columnar encoding first


@pytest.fixture
async def make_jobs_client():
    """make(**settings) -> an httpx client on a fresh app; its jobs are cancelled at the end."""
    apps, clients = [], []

    def make(**settings) -> httpx.AsyncClient:
        app = create_app(Settings(**settings))
        apps.append(app)
        clients.append(httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver"))
        return clients[-1]

    yield make
    for client in clients:
        await client.aclose()
    for app in apps:
        await app.state.jobs.close()


async def start(client, program: str) -> str:
    response = await client.post("/runs", json={"expression": program})
    assert response.status_code == 202, response.text
    created = response.json()
    assert created == {
        "id": created["id"],
        "status_url": f"/runs/{created['id']}",
        "events_url": f"/runs/{created['id']}/events",
    }
    return created["id"]


async def wait_for(client, job_id: str, condition, seconds: float = PATIENCE, reconnecting: bool = False) -> dict:
    """The job's status once `condition` holds. reconnecting: Redis has just come back, and until the app's
    client connects again (it retries every redis_retry_seconds) the API answers 503, "try again"."""
    deadline = time.monotonic() + seconds
    while True:
        response = await client.get(f"/runs/{job_id}")
        if reconnecting and response.status_code == 503 and time.monotonic() < deadline:
            await anyio.sleep(0.05)
            continue
        assert response.status_code == 200, response.text
        status = response.json()
        if condition(status):
            return status
        assert time.monotonic() < deadline, f"still {status}"
        await anyio.sleep(0.05)


def finished(status: dict) -> bool:
    return status["status"] in ("done", "failed", "cancelled")


async def test_a_deep_recursion_runs_in_a_job_and_its_graph_comes_back(make_jobs_client):
    """A job's process is forked: the thread that starts the threads a deep recursion moves to
    (engine.python.calls) is started anew in it."""
    client = make_jobs_client()
    program = "def f(n):\n    if n > 0:\n        return f(n - 1) + 1\n    return 0\nx = Value(f(2000))\nx.backward()\n"
    status = await wait_for(client, await start(client, program), finished)
    assert status["status"] == "done" and status["runs"] == [{"line": 6, "data": 2000.0}], status
    graph = await client.get(f"/runs/{status['id']}/graph", params={"run": 0}, headers=COLUMNS)
    assert graph.status_code == 200 and graph.headers["content-type"] == COLUMNS_MEDIA_TYPE


async def test_a_job_that_prints_a_lone_surrogate_answers_its_status(make_jobs_client):
    """JSON may carry a lone surrogate, UTF-8 cannot: the status writes it as its JSON escape, never a 500."""
    client = make_jobs_client()
    program = "x = Value(2.0)\nL = x * x\nL.backward()\nprint('a\\ud800b', L.data)\n"
    status = await wait_for(client, await start(client, program), finished)
    answer = await client.get(f"/runs/{status['id']}")
    assert answer.status_code == 200 and b'"a\\ud800b 4.0"' in answer.content
    assert answer.json()["printed"] == ["a\ud800b 4.0"]


async def test_a_job_runs_to_done_with_its_loss_curve_and_printed_lines(make_jobs_client):
    client = make_jobs_client()
    job_id = await start(client, DESCENT)
    status = await wait_for(client, job_id, finished)
    backward = (await client.post("/backward", json={"expression": DESCENT})).json()
    assert status["status"] == "done", status
    assert status["error"] is None
    assert (
        status["runs"]
        == backward["runs"]
        == [{"line": 5, "data": 4.0}, {"line": 5, "data": 2.5600000000000005}, {"line": 5, "data": 1.6384}]
    )
    assert (
        status["printed"]
        == backward["printed"]
        == [
            "step 0 loss 4.0",
            "step 1 loss 2.5600000000000005",
            "step 2 loss 1.6384",
        ]
    )
    assert status["progress"]["backward_calls"] == 3
    assert status["progress"]["statements"] > 3 * 5  # five statements a step, and the loop's tests
    assert status["progress"]["elapsed_seconds"] > 0


async def test_the_graph_of_a_run_is_what_backward_answers_for_that_run(make_jobs_client):
    client = make_jobs_client()
    job_id = await start(client, DESCENT)
    for run in (0, 1, 2):
        graph = await client.get(f"/runs/{job_id}/graph", params={"run": run})
        expected = await client.post("/backward", json={"expression": DESCENT, "run": run})
        assert graph.status_code == expected.status_code == 200
        assert graph.content == expected.content
        assert graph.headers["content-type"] == "application/json"
        # The columnar encoding, asked as the page asks: the same bytes as /backward's columns
        columns = await client.get(f"/runs/{job_id}/graph", params={"run": run}, headers=COLUMNS)
        expected = await client.post("/backward", json={"expression": DESCENT, "run": run}, headers=COLUMNS)
        assert columns.status_code == expected.status_code == 200
        assert columns.headers["content-type"] == COLUMNS_MEDIA_TYPE
        assert columns.headers["vary"].lower().startswith("accept,")  # Accept first, then what the middleware adds
        assert columns.content == expected.content != graph.content
    assert json.loads(graph.content)["runs"][2]["data"] == 1.6384
    # A run the program never reaches: the same 400 as /backward, with its place.
    missing = await client.get(f"/runs/{job_id}/graph", params={"run": 3})
    expected = await client.post("/backward", json={"expression": DESCENT, "run": 3})
    assert missing.status_code == expected.status_code == 400
    assert missing.json() == expected.json()
    assert (await client.get("/runs/no-such-job/graph", params={"run": 0})).status_code == 404


MODEL = (Path(__file__).parent / "text_and_files" / "tiny_char_model.py").read_text(encoding="utf-8")
NAMES = (Path(__file__).parent / "text_and_files" / "names.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("every", [2, 0])
async def test_the_graph_of_a_run_restored_from_a_snapshot_is_what_backward_answers(make_jobs_client, every):
    """A finished job's graph of run k replays the program from the job's snapshot at or before k
    (taken every VALUEGRAPH_JOB_SNAPSHOT_EVERY backward() calls; 0: none, from the start): the same
    bytes as /backward with run=k."""
    client = make_jobs_client(job_snapshot_every=every, time_budget=PATIENCE)  # /backward on a loaded machine
    body = {"expression": MODEL.replace("steps = 3", "steps = 5"), "files": {"input.txt": NAMES}}
    response = await client.post("/runs", json=body)
    assert response.status_code == 202, response.text
    job_id = response.json()["id"]
    status = await wait_for(client, job_id, finished)
    assert status["status"] == "done", status
    job = client._transport.app.state.jobs.jobs[job_id]
    assert sorted(job.snapshots) == ([2, 4] if every else [])
    for run in (0, 3, 4):  # from the start; from the snapshot at run 2; from the one at run 4
        graph = await client.get(f"/runs/{job_id}/graph", params={"run": run})
        expected = await client.post("/backward", json={**body, "run": run})
        assert graph.status_code == expected.status_code == 200, graph.text
        assert graph.content == expected.content, run
        columns = await client.get(f"/runs/{job_id}/graph", params={"run": run}, headers=COLUMNS)
        expected = await client.post("/backward", json={**body, "run": run}, headers=COLUMNS)
        assert columns.headers["content-type"] == expected.headers["content-type"] == COLUMNS_MEDIA_TYPE
        assert columns.content == expected.content, run
    missing = await client.get(f"/runs/{job_id}/graph", params={"run": 5})
    expected = await client.post("/backward", json={**body, "run": 5})
    assert missing.status_code == expected.status_code == 400
    assert missing.json() == expected.json()


async def test_a_graph_longer_than_the_request_budget_is_not_cut_by_it(make_jobs_client):
    """The graph re-runs under the job limits: a program that takes longer than the request's time
    budget still answers, where /backward answers 503."""
    client = make_jobs_client(time_budget=0.2)
    slow = "x = Value(1.0)\nfor i in range(300000):\n    y = i * 2\ny = x * x\ny.backward()\n"
    assert (await client.post("/backward", json={"expression": slow})).status_code == 503
    job_id = await start(client, slow)
    graph = await client.get(f"/runs/{job_id}/graph", params={"run": 0})
    assert graph.status_code == 200, graph.text
    assert graph.json()["runs"] == [{"line": 5, "data": 1.0}]


@pytest.mark.parametrize(("workers", "said"), [(1, "1 graph is"), (2, "2 graphs are")])
async def test_graphs_made_at_once_are_capped_by_the_job_workers(make_jobs_client, workers, said):
    """Each graph of a run is made again in a process: VALUEGRAPH_JOB_WORKERS bounds those too, and one more
    asked while they are made is a 429 that says so; the slots are free again once the graphs are answered."""
    client = make_jobs_client(job_workers=workers)
    job_id = await start(client, DESCENT)
    await wait_for(client, job_id, finished)
    answers = []

    async def ask(run):
        answers.append(await client.get(f"/runs/{job_id}/graph", params={"run": run}))

    async with anyio.create_task_group() as group:
        for run in range(workers + 1):  # each takes its slot before its process answers, so the last finds none
            group.start_soon(ask, run)
    assert sorted(answer.status_code for answer in answers) == [200] * workers + [429]
    refused = next(answer for answer in answers if answer.status_code == 429)
    assert refused.json()["detail"]["message"] == (
        f"{said} being made, the most at once (VALUEGRAPH_JOB_WORKERS); try again in a moment"
    )
    assert (await client.get(f"/runs/{job_id}/graph", params={"run": 2})).status_code == 200


async def test_cancel_ends_a_running_job_within_a_second(make_jobs_client):
    client = make_jobs_client(job_max_statements=10**12, job_wall_seconds=600)
    job_id = await start(client, FOREVER)
    running = await wait_for(client, job_id, lambda status: status["progress"]["statements"] > 0)
    assert running["status"] == "running"
    process = client._transport.app.state.jobs.jobs[job_id].process
    cancelled_at = time.monotonic()
    response = await client.delete(f"/runs/{job_id}")
    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"
    process.join(1.0)
    assert time.monotonic() - cancelled_at < 1.0
    assert process.exitcode is not None  # the worker process itself has ended
    status = (await client.get(f"/runs/{job_id}")).json()
    assert status["status"] == "cancelled" and status["error"] is None
    # Cancelling again changes nothing; an unknown job is a 404.
    assert (await client.delete(f"/runs/{job_id}")).json()["status"] == "cancelled"
    assert (await client.delete("/runs/no-such-job")).status_code == 404


async def test_a_job_past_its_wall_clock_limit_fails_naming_it(make_jobs_client):
    client = make_jobs_client(job_max_statements=10**12, job_wall_seconds=1.0)
    status = await wait_for(client, await start(client, FOREVER), finished)
    assert status["status"] == "failed"
    assert status["error"]["limit"] == "VALUEGRAPH_JOB_WALL_SECONDS"
    assert "VALUEGRAPH_JOB_WALL_SECONDS" in status["error"]["message"]
    assert status["progress"]["statements"] > 0


async def test_a_job_past_its_cpu_limit_fails_naming_it(make_jobs_client):
    client = make_jobs_client(job_max_statements=10**12, job_cpu_seconds=1, job_wall_seconds=600)
    status = await wait_for(client, await start(client, FOREVER), finished)
    assert status["status"] == "failed"
    assert status["error"]["limit"] == "VALUEGRAPH_JOB_CPU_SECONDS"
    assert "1 seconds of CPU time" in status["error"]["message"]


async def test_a_job_past_its_statement_limit_fails_naming_it_at_its_place(make_jobs_client):
    client = make_jobs_client(job_max_statements=1000)
    status = await wait_for(client, await start(client, FOREVER), finished)
    assert status["status"] == "failed"
    error = status["error"]
    assert error["limit"] == "VALUEGRAPH_JOB_MAX_STATEMENTS"
    assert "1,000 statements" in error["message"] and "VALUEGRAPH_JOB_MAX_STATEMENTS" in error["message"]
    assert error["line"] in (2, 3) and error["column"] >= 1  # in the loop


async def test_a_job_past_its_memory_limit_fails_naming_it_at_its_place(make_jobs_client):
    # 3,000 lists of 100,000 items: 2.4 GB, far past 1 GB (the worker itself takes a few hundred MB)
    hungry = "rows = []\nfor i in range(3000):\n    rows.append([0.5] * 100000)\nx = Value(1.0)\n"
    client = make_jobs_client(job_max_statements=10**12, job_memory_bytes=1_000_000_000)
    status = await wait_for(client, await start(client, hungry), finished)
    assert status["status"] == "failed"
    error = status["error"]
    assert error["limit"] == "VALUEGRAPH_JOB_MEMORY_BYTES"
    assert "1,000,000,000 bytes" in error["message"]
    assert (error["line"], error["column"]) == (3, 17)  # the list that did not fit


async def test_a_program_error_fails_the_job_with_its_line_and_column(make_jobs_client):
    client = make_jobs_client()
    program = "x = Value(2.0)\ny = x * x\ny.backward()\nprint('before')\nz = undefined + 1\n"
    status = await wait_for(client, await start(client, program), finished)
    expected = (await client.post("/backward", json={"expression": program})).json()["detail"]
    assert status["status"] == "failed"
    assert status["error"] == {**expected, "limit": None}
    assert status["runs"] == [{"line": 3, "data": 4.0}] and status["printed"] == ["before"]


async def test_jobs_per_client_and_in_all_are_capped(make_jobs_client):
    client = make_jobs_client(job_max_per_client=1, job_max_statements=10**12, job_wall_seconds=600)
    first = await start(client, FOREVER)
    refused = await client.post("/runs", json={"expression": DESCENT})
    assert refused.status_code == 429
    assert "VALUEGRAPH_JOB_MAX_PER_CLIENT" in refused.json()["detail"]["message"]
    await client.delete(f"/runs/{first}")  # a finished job no longer counts
    await start(client, DESCENT)

    everyone = make_jobs_client(job_max_jobs=1, job_max_per_client=5, job_max_statements=10**12)
    await start(everyone, FOREVER)
    refused = await everyone.post("/runs", json={"expression": DESCENT})
    assert refused.status_code == 429
    assert "VALUEGRAPH_JOB_MAX_JOBS" in refused.json()["detail"]["message"]


async def test_jobs_past_the_workers_wait_queued(make_jobs_client):
    client = make_jobs_client(job_workers=1, job_max_statements=10**12, job_wall_seconds=600)
    first = await start(client, FOREVER)
    await wait_for(client, first, lambda status: status["status"] == "running")
    second = await start(client, DESCENT)
    await anyio.sleep(0.3)
    assert (await client.get(f"/runs/{second}")).json()["status"] == "queued"
    await client.delete(f"/runs/{first}")
    assert (await wait_for(client, second, finished))["status"] == "done"


async def test_finished_jobs_expire(make_jobs_client):
    client = make_jobs_client(job_expire_seconds=0.5)
    job_id = await start(client, DESCENT)
    await wait_for(client, job_id, finished)
    await anyio.sleep(0.6)
    gone = await client.get(f"/runs/{job_id}")
    assert gone.status_code == 404
    assert "expired" in gone.json()["detail"]["message"]


async def test_a_job_runs_a_python_program_not_a_posted_graph_nor_the_shorthand(make_jobs_client):
    client = make_jobs_client()
    response = await client.post("/runs", json={"graph": schemas.CHAPTER_2_GRAPH})
    assert response.status_code == 400
    assert "expression" in response.json()["detail"]["message"]
    assert (await client.post("/runs", json={"expression": ""})).status_code == 422
    shorthand = await client.post("/runs", json={"expression": "a = 2; b = 3; c = a * b; L = c + a"})
    assert shorthand.status_code == 400
    assert "course shorthand" in shorthand.json()["detail"]["message"]


async def test_jobs_run_in_worker_processes_not_the_servers(make_jobs_client):
    client = make_jobs_client(job_max_statements=10**12, job_wall_seconds=600)
    job_id = await start(client, FOREVER)
    await wait_for(client, job_id, lambda status: status["progress"]["statements"] > 0)
    process = client._transport.app.state.jobs.jobs[job_id].process
    assert process.pid != os.getpid() and process.is_alive()
    await client.delete(f"/runs/{job_id}")


def read_events(text: str) -> list[tuple[str, dict]]:
    events = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        events.append((fields["event"], json.loads(fields["data"])))
    return events


async def test_events_stream_loss_points_printed_lines_and_the_end(make_jobs_client):
    client = make_jobs_client(time_budget=0.5)  # the stream outlives the request budget
    slow_descent = "for i in range(100000):\n    pass\n" + DESCENT + "print('last line, no newline', end='')\n"
    job_id = await start(client, slow_descent)
    async with client.stream("GET", f"/runs/{job_id}/events") as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        text = "".join([chunk async for chunk in response.aiter_text()])
    events = read_events(text)
    status = (await client.get(f"/runs/{job_id}")).json()
    assert status["status"] == "done"
    assert [data for name, data in events if name == "loss"] == [
        {"run": run, **point} for run, point in enumerate(status["runs"])
    ]
    assert len(status["runs"]) == 3
    assert [data["line"] for name, data in events if name == "printed"] == status["printed"]
    assert status["printed"][-1] == "last line, no newline"
    assert events[-1] == ("end", status)
    progress = [data for name, data in events if name == "progress"]
    assert progress and all(data["status"] in ("queued", "running") for data in progress)
    assert (await client.get("/runs/no-such-job/events")).status_code == 404


def test_events_stream_live_from_a_real_server_and_end_when_cancelled():
    """`valuegraph serve` in its own process: the stream's events arrive while the job runs (a
    loss point and a printed line before the end), and a cancel ends the stream within a second."""
    program = "x = Value(2.0)\ny = x * x\ny.backward()\nprint('started')\n" + FOREVER
    with valuegraph_server(job_max_statements=10**12, job_wall_seconds=600) as server:
        job_id = httpx.post(f"{server.url}/runs", json={"expression": program}).json()["id"]
        seen = []
        with httpx.stream("GET", f"{server.url}/runs/{job_id}/events", timeout=PATIENCE) as response:
            lines = response.iter_lines()
            for line in lines:
                if line.startswith("event: "):
                    seen.append(line.removeprefix("event: "))
                if "loss" in seen and "printed" in seen and "progress" in seen:
                    break
            cancelled_at = time.monotonic()
            assert httpx.delete(f"{server.url}/runs/{job_id}").json()["status"] == "cancelled"
            rest = list(lines)
        assert time.monotonic() - cancelled_at < 1.0
        assert (
            "event: end" in rest
            and json.loads(rest[rest.index("event: end") + 1].removeprefix("data: "))["status"] == "cancelled"
        )


async def test_a_job_reads_the_files_given_with_it(make_jobs_client):
    client = make_jobs_client()
    program = "names = open('input.txt').read().split()\nprint(len(names), names[0])\nx = Value(1.0)\n"
    response = await client.post("/runs", json={"expression": program, "files": {"input.txt": "emma\nolivia\n"}})
    assert response.status_code == 202
    status = await wait_for(client, response.json()["id"], finished)
    assert status["status"] == "done", status
    assert status["printed"] == ["2 emma"]


async def test_a_job_whose_process_cannot_start_fails_with_the_reason_and_the_next_one_runs(
    make_jobs_client, monkeypatch
):
    from app.jobs import processes

    client = make_jobs_client()
    real_start = processes.start
    starts = []

    def start_once_failing(*args):
        starts.append(args)
        if len(starts) == 1:
            raise OSError("no more processes")
        return real_start(*args)

    monkeypatch.setattr(processes, "start", start_once_failing)
    failed = await wait_for(client, await start(client, DESCENT), finished)
    assert failed["status"] == "failed"
    assert failed["error"]["message"] == "the job's process could not start: no more processes"
    done = await wait_for(client, await start(client, DESCENT), finished)
    assert done["status"] == "done", done


def test_a_jobs_process_keeps_the_collector_on_at_a_jobs_pace():
    """The bounds a job's process puts on itself leave the cyclic collector on (a micrograd-style class
    makes a cycle per node, which only it frees), collecting after COLLECT_AFTER_OBJECTS new objects."""
    from app.jobs.worker import COLLECT_AFTER_OBJECTS

    script = (
        "import gc; gc.disable(); from app.jobs.worker import limit_process; limit_process(100, 4_000_000_000); "
        "print(gc.isenabled(), gc.get_threshold()[0])"
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert ran.stdout.split() == ["True", str(COLLECT_AFTER_OBJECTS)]
