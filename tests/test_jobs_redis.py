"""Jobs on Redis (issue 21): a real redis-server, real `valuegraph worker` processes, and two app
instances sharing them, as two server processes would (each its own Redis connections): whichever
app took a job, the other answers its status, events, cancel and graphs."""

import os
import subprocess
import sys
import tempfile

import anyio
import httpx
import pytest
import redis

from app.config import Settings
from app.main import create_app
from tests.realservers import ROOT, RedisServer, job_worker, redis_process
from tests.test_jobs import DESCENT, FOREVER, MODEL, NAMES, PATIENCE, finished, read_events, start, wait_for
from tests.test_snapshots import PROGRAMS
from tests.test_snapshots import job as snapshot_job

pytestmark = pytest.mark.anyio


@pytest.fixture
def redis_url():
    with redis_process() as server:
        yield server.url


@pytest.fixture
async def make_client():
    """make(redis_url, **settings) -> an httpx client on a fresh app using that Redis. Its requests'
    time budget is long: a loaded machine's pause is no outage."""
    apps, clients = [], []

    def make(url: str, **settings) -> httpx.AsyncClient:
        app = create_app(Settings(redis_url=url, **{"time_budget": PATIENCE, **settings}))
        apps.append(app)
        clients.append(httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver"))
        return clients[-1]

    yield make
    for client in clients:
        await client.aclose()
    for app in apps:
        await app.state.jobs.close()


def record(url: str, job_id: str) -> dict:
    """The job's record in Redis, as the worker left it (which worker, which process)."""
    return redis.Redis.from_url(url, decode_responses=True).hgetall(f"vg:job:{job_id}")


async def process_ends(pid: int) -> None:
    for _ in range(int(PATIENCE / 0.05)):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        await anyio.sleep(0.05)
    raise AssertionError(f"the job's process {pid} still runs")


async def test_a_job_runs_on_a_worker_and_any_app_process_serves_it(redis_url, make_client):
    taking, asking = make_client(redis_url), make_client(redis_url)
    with job_worker(redis_url) as worker:
        job_id = await start(taking, DESCENT)
        status = await wait_for(asking, job_id, finished)
        backward = (await asking.post("/backward", json={"expression": DESCENT})).json()
        assert status["status"] == "done", status
        assert status["runs"] == backward["runs"] and len(status["runs"]) == 3
        assert status["printed"] == backward["printed"] == ["step 0 loss 4.0", "step 1 loss 2.5600000000000005",
                                                            "step 2 loss 1.6384"]  # fmt: skip
        assert status["progress"]["backward_calls"] == 3 and status["progress"]["statements"] > 15
        assert record(redis_url, job_id)["worker"].endswith(f":{worker.process.pid}")

        async with asking.stream("GET", f"/runs/{job_id}/events") as response:
            assert response.status_code == 200
            events = read_events("".join([chunk async for chunk in response.aiter_text()]))
        assert [data for name, data in events if name == "loss"] == [
            {"run": run, **point} for run, point in enumerate(status["runs"])
        ]
        assert [data["line"] for name, data in events if name == "printed"] == status["printed"]
        assert events[-1] == ("end", status)

        graph = await asking.get(f"/runs/{job_id}/graph", params={"run": 1})
        expected = await asking.post("/backward", json={"expression": DESCENT, "run": 1})
        assert graph.status_code == 200 and graph.content == expected.content
    assert (await asking.get("/runs/no-such-job")).status_code == 404


def stored_snapshots(url: str, job_id: str) -> dict[int, bytes]:
    """The snapshots Redis keeps for the job, by the run each was taken at."""
    return {int(run): data for run, data in redis.Redis.from_url(url).hgetall(f"vg:job:{job_id}:snapshots").items()}


async def test_a_finished_jobs_graphs_replay_from_its_snapshots_in_redis(redis_url, make_client):
    """The worker keeps in Redis the snapshots its job's process takes (every VALUEGRAPH_JOB_SNAPSHOT_EVERY
    backward() calls, as the worker is set); any app process, with no worker left, replays the graph of
    run k from the nearest one: the same bytes as /backward with run=k."""
    taking, asking = make_client(redis_url), make_client(redis_url, time_budget=PATIENCE)
    body = {"expression": MODEL.replace("steps = 3", "steps = 5"), "files": {"input.txt": NAMES}}
    with job_worker(redis_url, job_snapshot_every=2):
        response = await taking.post("/runs", json=body)
        assert response.status_code == 202, response.text
        job_id = response.json()["id"]
        status = await wait_for(asking, job_id, finished)
    assert status["status"] == "done", status
    assert sorted(stored_snapshots(redis_url, job_id)) == [2, 4]
    for run in (0, 3, 4):  # from the start; from the snapshot at run 2; from the one at run 4
        graph = await asking.get(f"/runs/{job_id}/graph", params={"run": run})
        expected = await asking.post("/backward", json={**body, "run": run})
        assert graph.status_code == expected.status_code == 200, graph.text
        assert graph.content == expected.content, run


async def test_snapshots_in_redis_are_thinned_within_their_byte_limit_as_the_local_pool_thins_them(
    redis_url, make_client
):
    """Past VALUEGRAPH_JOB_SNAPSHOT_BYTES (set on the worker) the worker forgets in Redis the snapshots its
    job's process drops: Redis keeps the runs an in-process Taker keeps, within the limit."""
    text, files = PROGRAMS["micrograd.nn"]
    text = text.replace("range(7)", "range(40)")
    _, everything, _ = snapshot_job(text, files, every=1)
    limit = 5 * max(map(len, everything.values()))
    _, kept, _ = snapshot_job(text, files, every=1, keep_bytes=limit)
    client = make_client(redis_url, time_budget=PATIENCE)
    with job_worker(redis_url, job_snapshot_every=1, job_snapshot_bytes=limit):
        job_id = await start(client, text)
        assert (await wait_for(client, job_id, finished))["status"] == "done"
    stored = stored_snapshots(redis_url, job_id)
    assert sorted(stored) == sorted(kept) and len(stored) < len(everything)
    assert sum(map(len, stored.values())) <= limit
    graph = await client.get(f"/runs/{job_id}/graph", params={"run": 33})
    expected = await client.post("/backward", json={"expression": text, "run": 33})
    assert graph.status_code == 200 and graph.content == expected.content


async def test_cancel_from_another_app_process_stops_the_job_on_its_worker(redis_url, make_client):
    taking, cancelling = make_client(redis_url), make_client(redis_url)
    program = "x = Value(2.0)\ny = x * x\ny.backward()\nprint('started')\n" + FOREVER
    with job_worker(redis_url, job_max_statements=10**12) as worker:
        job_id = await start(taking, program)
        streamed = []

        async def listen():  # (httpx's in-process transport hands over a stream only once it has ended)
            async with cancelling.stream("GET", f"/runs/{job_id}/events") as response:
                streamed.append("".join([chunk async for chunk in response.aiter_text()]))

        async with anyio.create_task_group() as listening:
            listening.start_soon(listen)
            await wait_for(cancelling, job_id, lambda status: status["printed"] and status["progress"]["statements"])
            pid = int(record(redis_url, job_id)["process"])
            cancelled = await cancelling.delete(f"/runs/{job_id}")
            assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
        events = read_events(streamed[0])
        assert [name for name, _ in events if name != "progress"] == ["loss", "printed", "end"]
        end = events[-1][1]
        assert end["status"] == "cancelled" and end["error"] is None
        assert (await taking.get(f"/runs/{job_id}")).json()["status"] == "cancelled"
        await process_ends(pid)  # the worker killed the job's process...
        assert worker.process.poll() is None  # ...and lives on, to take the next job
        assert (await wait_for(taking, await start(taking, DESCENT), finished))["status"] == "done"
        # A queued job cancelled before any worker took it never runs.
    job_id = await start(taking, DESCENT)
    assert (await cancelling.delete(f"/runs/{job_id}")).json()["status"] == "cancelled"
    with job_worker(redis_url):
        await anyio.sleep(1)
        assert (await taking.get(f"/runs/{job_id}")).json()["status"] == "cancelled"


async def test_two_workers_share_the_queue(redis_url, make_client):
    client = make_client(redis_url, job_max_per_client=3)
    with (
        job_worker(redis_url, job_max_statements=10**12) as first,
        job_worker(redis_url, job_max_statements=10**12) as second,
    ):
        jobs = [await start(client, FOREVER) for _ in range(3)]
        # Each worker runs one job at a time: two run, the third waits for a free worker.
        await wait_for(client, jobs[0], lambda status: status["status"] == "running")
        await wait_for(client, jobs[1], lambda status: status["status"] == "running")
        assert (await client.get(f"/runs/{jobs[2]}")).json()["status"] == "queued"
        workers = {record(redis_url, job_id)["worker"].rsplit(":", 1)[1] for job_id in jobs[:2]}
        assert workers == {str(first.process.pid), str(second.process.pid)}
        await client.delete(f"/runs/{jobs[0]}")
        await wait_for(client, jobs[2], lambda status: status["status"] == "running")
        for job_id in jobs:
            await client.delete(f"/runs/{job_id}")


async def test_kill_9_of_a_worker_mid_job_fails_the_job_saying_so(redis_url, make_client):
    client = make_client(redis_url, job_worker_timeout=5.0, job_max_per_client=1)
    with job_worker(redis_url, job_worker_timeout=5.0, job_max_statements=10**12) as worker:
        job_id = await start(client, FOREVER)
        await wait_for(client, job_id, lambda status: status["progress"]["statements"] > 0)
        pid = int(record(redis_url, job_id)["process"])
        worker.kill()
        status = await wait_for(client, job_id, finished)
    assert status["status"] == "failed"
    assert status["error"]["limit"] == "VALUEGRAPH_JOB_WORKER_TIMEOUT"
    assert "killed" in status["error"]["message"] and "not run again" in status["error"]["message"]
    await process_ends(pid)  # the job's process does not outlive its worker
    # The failed job no longer takes the client's one slot, and it is not run again by the next worker.
    with job_worker(redis_url):
        assert (await wait_for(client, await start(client, DESCENT), finished))["status"] == "done"
        assert (await client.get(f"/runs/{job_id}")).json()["status"] == "failed"


async def test_a_job_on_a_worker_fails_at_its_limits_naming_them(redis_url, make_client):
    client = make_client(redis_url)
    with job_worker(redis_url, job_max_statements=1000):
        status = await wait_for(client, await start(client, FOREVER), finished)
    assert status["status"] == "failed"
    assert status["error"]["limit"] == "VALUEGRAPH_JOB_MAX_STATEMENTS" and status["error"]["line"] in (2, 3)
    with job_worker(redis_url, job_max_statements=10**12, job_wall_seconds=1.0):
        status = await wait_for(client, await start(client, FOREVER), finished)
    assert status["status"] == "failed"
    assert status["error"]["limit"] == "VALUEGRAPH_JOB_WALL_SECONDS"
    program = "x = Value(2.0)\ny = x * x\ny.backward()\nz = undefined + 1\n"
    with job_worker(redis_url):
        status = await wait_for(client, await start(client, program), finished)
    expected = (await client.post("/backward", json={"expression": program})).json()["detail"]
    assert status["status"] == "failed" and status["error"] == {**expected, "limit": None}
    # A job that fails after its process took snapshots keeps none: its graphs run the program from the start.
    failing = DESCENT + "z = undefined + 1\n"
    with job_worker(redis_url, job_snapshot_every=1):
        job_id = await start(client, failing)
        assert (await wait_for(client, job_id, finished))["status"] == "failed"
    assert stored_snapshots(redis_url, job_id) == {}


async def test_jobs_per_client_and_in_all_are_capped_across_app_processes(redis_url, make_client):
    first, second = make_client(redis_url, job_max_per_client=1), make_client(redis_url, job_max_per_client=1)
    job_id = await start(first, FOREVER)  # no worker: it stays queued, and counts
    refused = await second.post("/runs", json={"expression": DESCENT})
    assert refused.status_code == 429 and "VALUEGRAPH_JOB_MAX_PER_CLIENT" in refused.json()["detail"]["message"]
    await second.delete(f"/runs/{job_id}")
    await start(second, DESCENT)
    everyone = make_client(redis_url, job_max_jobs=1, job_max_per_client=5)
    refused = await everyone.post("/runs", json={"expression": DESCENT})
    assert refused.status_code == 429 and "VALUEGRAPH_JOB_MAX_JOBS" in refused.json()["detail"]["message"]


async def test_finished_jobs_expire_from_redis(redis_url, make_client):
    client = make_client(redis_url, job_expire_seconds=1)
    with job_worker(redis_url, job_expire_seconds=1):
        job_id = await start(client, DESCENT)
        await wait_for(client, job_id, finished)
    await anyio.sleep(1.5)
    assert (await client.get(f"/runs/{job_id}")).status_code == 404
    assert not redis.Redis.from_url(redis_url).keys(f"vg:job:{job_id}*")


async def test_a_redis_outage_answers_503_for_jobs_while_backward_answers(make_client):
    with tempfile.TemporaryDirectory() as directory:
        server = RedisServer(directory)
        server.start()
        try:
            client = make_client(server.url, redis_timeout=0.5, redis_retry_seconds=1.0)
            job_id = await start(client, DESCENT)
            server.kill()
            for _ in range(2):  # the first finds Redis gone; the next is refused at once by the breaker
                refused = await client.post("/runs", json={"expression": DESCENT})
                assert refused.status_code == 503
                assert refused.headers["retry-after"] == "1"
                assert "job queue (Redis) cannot be reached" in refused.json()["detail"]["message"]
            assert (await client.get(f"/runs/{job_id}")).status_code == 503
            assert (await client.delete(f"/runs/{job_id}")).status_code == 503
            backward = await client.post("/backward", json={"expression": DESCENT})
            assert backward.status_code == 200 and len(backward.json()["runs"]) == 3
            server.start()  # back (empty: it kept nothing): jobs start again once the breaker lets them
            await anyio.sleep(1.1)
            await start(client, DESCENT)
        finally:
            server.stop()


def test_worker_without_redis_says_what_to_set():
    env = {key: value for key, value in os.environ.items() if key != "VALUEGRAPH_REDIS_URL"}
    finished_worker = subprocess.run(
        [sys.executable, "-m", "app.cli", "worker"],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    assert finished_worker.returncode != 0
    assert "VALUEGRAPH_REDIS_URL" in finished_worker.stderr


async def test_a_worker_outlives_a_redis_outage_and_its_job_ends_failed(make_client):
    """Redis (with its append-only file) killed mid-job and started again: the worker's job cannot report,
    so its process is killed and the job ends failed as lost; the worker reconnects and takes the next job."""
    with tempfile.TemporaryDirectory() as directory:
        server = RedisServer(directory, persistent=True)
        server.start()
        try:
            client = make_client(server.url, job_worker_timeout=5.0, redis_retry_seconds=0.5)
            with job_worker(server.url, job_worker_timeout=5.0, redis_retry_seconds=0.5) as worker:
                job_id = await start(client, FOREVER)
                await wait_for(client, job_id, lambda status: status["progress"]["statements"] > 0)
                pid = int(record(server.url, job_id)["process"])
                server.kill()
                await process_ends(pid)
                server.start()
                status = await wait_for(client, job_id, finished, reconnecting=True)
                assert status["status"] == "failed" and status["error"]["limit"] == "VALUEGRAPH_JOB_WORKER_TIMEOUT"
                assert (await wait_for(client, await start(client, DESCENT), finished))["status"] == "done"
                assert worker.process.poll() is None
        finally:
            server.stop()


@pytest.mark.parametrize(
    "failure",
    [
        redis.exceptions.ConnectionError("Connection reset by peer"),
        redis.exceptions.ReadOnlyError("You can't write against a read only replica."),  # a failover
    ],
)
async def test_a_job_whose_enqueue_fails_answers_503_and_gives_back_its_place(redis_url, monkeypatch, failure):
    """The submit script counted the job, then RQ's enqueue could not reach Redis, or Redis would not queue
    it: the client is told to retry (503, Retry-After), and the job is ended, so it no longer holds the
    client's one place."""
    app = create_app(Settings(redis_url=redis_url, time_budget=PATIENCE, job_max_per_client=1, redis_retry_seconds=0.5))
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
    enqueue, enqueued = app.state.jobs.queue.enqueue, []

    def failing_enqueue(function, *arguments, **options):
        enqueued.append(options["job_id"])  # the job's own id is RQ's
        raise failure

    try:
        monkeypatch.setattr(app.state.jobs.queue, "enqueue", failing_enqueue)
        refused = await client.post("/runs", json={"expression": DESCENT})
        assert refused.status_code == 503, refused.text
        assert refused.headers["retry-after"] == "1"
        assert "job queue (Redis) cannot be reached" in refused.json()["detail"]["message"]
        [job_id] = enqueued
        assert record(redis_url, job_id)["status"] == "failed"
        assert redis.Redis.from_url(redis_url).hlen("vg:jobs:unfinished") == 0

        monkeypatch.setattr(app.state.jobs.queue, "enqueue", enqueue)
        await anyio.sleep(0.6)  # the breaker's 0.5 s
        queued = await start(client, DESCENT)  # no worker: it stays queued, and holds the one place
        assert (await client.get(f"/runs/{queued}")).json()["status"] == "queued"
        assert (await client.post("/runs", json={"expression": DESCENT})).status_code == 429
    finally:
        await client.aclose()
        await app.state.jobs.close()


async def test_a_job_stored_when_redis_died_before_it_was_queued_is_ended_and_gives_back_its_place(monkeypatch):
    """Redis (with its append-only file) dies after the submit script stored the job and before RQ's enqueue:
    the client gets a 503, and the job's best-effort end fails too. Once Redis is back, the job is `queued`
    with no RQ job behind it; the next submit ends it `failed`, saying so, and it no longer holds the place."""
    with tempfile.TemporaryDirectory() as directory:
        server = RedisServer(directory, persistent=True)
        server.start()
        settings = Settings(
            redis_url=server.url,
            time_budget=PATIENCE,
            job_max_per_client=1,
            redis_retry_seconds=0.5,
            job_enqueue_seconds=2,
        )
        app = create_app(settings)
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
        enqueue, enqueued = app.state.jobs.queue.enqueue, []
        try:

            def crash_then_enqueue(function, *arguments, **options):
                enqueued.append(options["job_id"])
                server.kill()
                return enqueue(function, *arguments, **options)

            monkeypatch.setattr(app.state.jobs.queue, "enqueue", crash_then_enqueue)
            assert (await client.post("/runs", json={"expression": DESCENT})).status_code == 503
            monkeypatch.setattr(app.state.jobs.queue, "enqueue", enqueue)
            server.start()
            [lost] = enqueued
            assert record(server.url, lost)["status"] == "queued"  # stored, never queued: the AOF kept it
            await anyio.sleep(0.6)  # the breaker's 0.5 s
            early = await client.post("/runs", json={"expression": DESCENT})
            assert early.status_code == 429, early.text  # within 2 s of being stored, it may still be on its way
            await anyio.sleep(2.0)  # past VALUEGRAPH_JOB_ENQUEUE_SECONDS since it was stored
            queued = await start(client, DESCENT)  # no worker: it stays queued
            ended = record(server.url, lost)
            assert ended["status"] == "failed" and "never reached the queue" in ended["error"]
            assert (await client.get(f"/runs/{queued}")).json()["status"] == "queued"  # RQ holds this one
            assert (await client.post("/runs", json={"expression": DESCENT})).status_code == 429
        finally:
            await client.aclose()
            await app.state.jobs.close()
            server.stop()
