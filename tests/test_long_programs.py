"""Issue 21, done when: a one-file character transformer in the style of the course's last program
(benchmarks/programs/char_transformer.py: its own __slots__ Value class, Adam, names from input.txt)
runs as written through POST /runs, as a job in a real worker process of the local pool, and the
job's printed text is CPython's, character for character, every loss line included: as written,
with `n_layer = 2`, and with another seed and step count. Few steps each: the program is the
benchmark's, only its top-level settings change."""

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import httpx
import pytest

from app.config import Settings
from app.main import create_app
from tests.test_jobs import finished, wait_for

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).parent.parent
PROGRAM = (ROOT / "benchmarks" / "programs" / "char_transformer.py").read_text(encoding="utf-8")
NAMES = (ROOT / "static" / "data" / "names.txt").read_text(encoding="utf-8")
# A bound on a hang (a two-layer step through the interpreter on a loaded machine), not a timing.
PATIENCE = 600.0


def variant(seed: int = 42, **settings: int) -> str:
    """The program with `random.seed(seed)` and each top-level `name = value` line set as given."""
    text = PROGRAM.replace("random.seed(42)\n", f"random.seed({seed})\n")
    assert f"random.seed({seed})\n" in text
    for name, value in settings.items():
        text, count = re.subn(rf"^{name} = \d+$", f"{name} = {value}", text, flags=re.MULTILINE)
        assert count == 1, name
    return text


def cpython_stdout(program: str, files: dict[str, str]) -> str:
    """What CPython writes to stdout running the program as a script in a folder holding `files`."""
    with tempfile.TemporaryDirectory() as folder:
        for name, text in files.items():
            Path(folder, name).write_text(text, encoding="utf-8", newline="")
        Path(folder, "program.py").write_text(program, encoding="utf-8")
        done = subprocess.run([sys.executable, "program.py"], cwd=folder, capture_output=True, timeout=PATIENCE)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return done.stdout.decode("utf-8")


@pytest.fixture
async def jobs_client():
    app = create_app(Settings())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as client:
        yield client
    await app.state.jobs.close()


@pytest.mark.parametrize(
    ("program", "steps", "parameters"),
    [
        (variant(steps=2), 2, 4192),
        # A second layer: six more 16-wide matrices. One step (the longest of the three runs): the
        # other two variants check the steps after the first.
        (variant(steps=1, n_layer=2), 1, 4192 + 3072),
        (variant(seed=7, steps=3), 3, 4192),
    ],
    ids=["as_written", "n_layer_2", "seed_7_steps_3"],
)
async def test_the_transformer_job_prints_what_cpython_prints(jobs_client, program, steps, parameters):
    files = {"input.txt": NAMES}
    response = await jobs_client.post("/runs", json={"expression": program, "files": files})
    assert response.status_code == 202, response.text
    expected = await anyio.to_thread.run_sync(cpython_stdout, program, files)  # while the job runs
    status = await wait_for(jobs_client, response.json()["id"], finished, seconds=PATIENCE)
    assert status["status"] == "done", status
    assert "".join(line + "\n" for line in status["printed"]) == expected
    assert expected.startswith(f"200 names, 27 tokens, {parameters} parameters\n")
    loss_lines = re.findall(rf"^step +\d+ / +{steps} \| loss \d+\.\d{{4}}$", expected, flags=re.MULTILINE)
    assert len(loss_lines) == steps
    assert len(status["runs"]) == status["progress"]["backward_calls"] == steps


def test_the_variants_differ_in_cpython():
    """Each variant changes the losses CPython prints, so each comparison above checks a run of its own."""
    files = {"input.txt": NAMES}
    firsts = [
        cpython_stdout(program, files).splitlines()[1]
        for program in (variant(steps=1), variant(steps=1, n_layer=2), variant(seed=7, steps=1))
    ]
    assert len(set(firsts)) == 3, firsts


async def test_a_job_holds_collections_up_to_its_own_limit_not_the_requests():
    """VALUEGRAPH_JOB_MAX_COLLECTION_LENGTH replaces VALUEGRAPH_MAX_COLLECTION_LENGTH for jobs."""
    app = create_app(Settings(max_collection_length=10, job_max_collection_length=20))
    program = "xs = [Value(1.0) for _ in range({n})]\nprint(len(xs))\n"
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as client:
        refused = await client.post("/backward", json={"expression": program.format(n=15)})
        assert refused.status_code == 400 and "the limit is 10" in refused.json()["detail"]["message"]
        statuses = []
        for n in (15, 25):
            response = await client.post("/runs", json={"expression": program.format(n=n)})
            assert response.status_code == 202, response.text
            statuses.append(await wait_for(client, response.json()["id"], finished))
    await app.state.jobs.close()
    held, past = statuses
    assert held["status"] == "done" and held["printed"] == ["15"], held
    assert past["status"] == "failed", past
    assert "the limit is 20" in past["error"]["message"] and past["error"]["line"] == 1, past
