"""The page's record of a job (static/js/jobs.js, run by node): how events and status answers fold
into it, the printed lines as a terminal shows them, progress and time left, and the expected
number of backward() calls read from a program, checked against the count the server's own run
gives for the same programs."""

import json
import pathlib
import shutil
import subprocess

import pytest
from fastapi.testclient import TestClient

from app.main import create_app

JOBS_JS = pathlib.Path(__file__).resolve().parent.parent / "static" / "js" / "jobs.js"


def run_js(body: str):
    """`body` run as a module with jobs.js's exports in scope; what it prints, as JSON."""
    node = shutil.which("node")
    assert node, "node is not installed"
    script = f"import * as jobs from {json.dumps(JOBS_JS.as_uri())};\n{body}"
    done = subprocess.run([node, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


COUNTED = {
    "x = Value(2.0)\ny = x * x\ny.backward()\n": 1,
    # As microgpt states its steps: a name set once at the top, a range() loop over it.
    "num_steps = 12\nx = Value(1.0)\nfor step in range(num_steps):\n    y = x * x\n    y.backward()\n": 12,
    # Nested loops multiply; range(a, b) counts b - a; comments and blank lines do not matter.
    (
        "x = Value(1.0)\nfor epoch in range(3):  # epochs\n\n    for i in range(2, 6):\n"
        "        # one step\n        loss = x * x\n        loss.backward()\n"
    ): 12,
}
UNKNOWN = [
    # Inside an if, a while, a function: the count depends on the run.
    "x = Value(1.0)\nfor i in range(5):\n    if i % 2:\n        y = x * x\n        y.backward()\n",
    "x = Value(1.0)\nn = 0\nwhile n < 4:\n    y = x * x\n    y.backward()\n    n += 1\n",
    "x = Value(1.0)\ndef step():\n    y = x * x\n    y.backward()\nfor i in range(3):\n    step()\n",
    # A bound the program computes, or sets twice; two backward() calls.
    "x = Value(1.0)\nsteps = 2\nsteps = 3\nfor i in range(steps):\n    y = x * x\n    y.backward()\n",
    "x = Value(1.0)\nfor i in range(len([1, 2])):\n    y = x * x\n    y.backward()\n",
    "x = Value(1.0)\ny = x * x\ny.backward()\nz = x + x\nz.backward()\n",
]


def test_the_expected_calls_are_the_servers_count_or_unknown():
    got = run_js(f"console.log(JSON.stringify({json.dumps(list(COUNTED) + UNKNOWN)}.map(jobs.expectedCalls)))")
    assert got == list(COUNTED.values()) + [None] * len(UNKNOWN)
    with TestClient(create_app()) as client:
        for program, count in COUNTED.items():
            assert len(client.post("/backward", json={"expression": program}).json()["runs"]) == count


def test_events_fold_into_the_job_and_a_status_gives_the_line_being_printed():
    shown = run_js(
        """
const created = {id: "j", status_url: "/runs/j", events_url: "/runs/j/events"};
let job = jobs.newJob(created, {expression: "..."}, 4, 0);
const steps = [];
const seen = (job, now) => ({status: job.status, runs: job.runs.map((r) => String(r.data)),
  lines: jobs.shownLines(job), progress: jobs.progressOf(job, now)});
job = jobs.withEvent(job, "loss", {run: 0, line: 5, data: 4.0}, 100);
job = jobs.withEvent(job, "loss", {run: 1, line: 5, data: "NaN"}, 200);
job = jobs.withEvent(job, "printed", {line: "start"}, 200);
const progress = {status: "running", statements: 40, backward_calls: 2, elapsed_seconds: 2.0};
job = jobs.withEvent(job, "progress", progress, 1000);
steps.push(seen(job, 1000));
// The status has one more line than the stream: the line being printed (end='\\r'), not ended yet.
const running = {status: "running", progress: {statements: 50, backward_calls: 2, elapsed_seconds: 3.0},
  runs: [], printed: ["start", "step 1\\rstep 2"], error: null};
job = jobs.withStatus(job, running, 2000);
steps.push({lines: jobs.shownLines(job), progress: jobs.progressOf(job, 2500)});
// A printed event means the stream caught up: the line is the stream's now.
job = jobs.withEvent(job, "printed", {line: "step 1\\rstep 2\\rstep 3"}, 2600);
steps.push({lines: jobs.shownLines(job)});
const ended = {status: "done", progress: {statements: 90, backward_calls: 3, elapsed_seconds: 4.0},
  runs: [{line: 5, data: 4.0}, {line: 5, data: "NaN"}, {line: 5, data: "-Infinity"}],
  printed: ["start", "x\\rdone"], error: null};
job = jobs.withEvent(job, "end", ended, 3000);
steps.push(seen(job, 99999));
console.log(JSON.stringify(steps));
"""
    )
    assert shown[0] == {
        "status": "running",
        "runs": ["4", "NaN"],
        "lines": ["start"],
        # 2 of the expected 4 calls in 2 s: 2 s left.
        "progress": {"done": 2, "total": 4, "fraction": 0.5, "elapsed": 2.0, "secondsLeft": 2.0},
    }
    # The clock runs on between two answers: 3 s at the answer, 3.5 s half a second later.
    assert shown[1] == {
        "lines": ["start", "step 2"],
        "progress": {"done": 2, "total": 4, "fraction": 0.5, "elapsed": 3.5, "secondsLeft": 3.5},
    }
    assert shown[2] == {"lines": ["start", "step 3"]}
    # Done: the total is the real count (3, not the expected 4), nothing is left, the clock stops.
    assert shown[3] == {
        "status": "done",
        "runs": ["4", "NaN", "-Infinity"],
        "lines": ["start", "done"],
        "progress": {"done": 3, "total": 3, "fraction": 1, "elapsed": 4.0, "secondsLeft": None},
    }


@pytest.mark.parametrize(
    ("expected", "status", "total"),
    [(None, "running", None), (2, "running", None), (10, "cancelled", 10), (None, "failed", None)],
    ids=["unknown", "past-the-estimate", "cancelled", "failed"],
)
def test_a_total_only_when_known_and_no_time_left_without_one_or_after_the_end(expected, status, total):
    progress = run_js(
        f"""
let job = jobs.newJob({{id: "j"}}, {{}}, {json.dumps(expected)}, 0);
for (const run of [0, 1, 2]) job = jobs.withEvent(job, "loss", {{run, line: 1, data: 1}}, 0);
job = {{...job, status: {json.dumps(status)}, elapsed: 1.5}};
console.log(JSON.stringify(jobs.progressOf(job, 0)));
"""
    )
    assert progress["done"] == 3 and progress["total"] == total
    assert progress["secondsLeft"] is None
