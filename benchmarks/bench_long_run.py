"""A long run (issue 21): benchmarks/programs/char_transformer.py, a character transformer on its own
scalar Value class at the size of the course's last program (4,192 parameters; one step on "emma"
builds 43,091 nodes), through valuegraph and through CPython in the same run:

- one training step on "emma": the program with `steps = 1` less the program with `steps = 0`, CPU
  seconds, run in this process as a job runs it (engine.python.run_python, no graph kept, the collector at
  a job's pace: app.jobs.worker.collect_as_jobs);
- N steps as a job (the local pool: a worker process, its snapshots sent to the server) against
  CPython running the file in a process of its own; the worker's peak RSS (VmHWM, read while it runs);
- opening the graph of step k of the finished job: from its nearest snapshot, from the program's start
  (no snapshot), and re-running the whole program (what the graph did before snapshots).

    python -m benchmarks.bench_long_run [--steps N] [--every S] [--snapshots-only] [--profile] [--one-step]

--snapshots-only opens step k's graph only from its snapshot: the other two ways re-run the program up to
step k, which at 1,000 steps takes longer than the job itself.

--one-step prints only the one-step row (the median of 5 differences, each side's runs in turns).

--profile prints where one step's time goes (cProfile, the program's deep recursion kept on the main
thread so the profile sees it)."""

import argparse
import cProfile
import gc
import io
import os
import pstats
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import anyio

from benchmarks.common import REPO, load, machine, median, print_table, ratio, verdict

PROGRAM = (REPO / "benchmarks" / "programs" / "char_transformer.py").read_text(encoding="utf-8")
NAMES = "emma\n" + (REPO / "static" / "data" / "names.txt").read_text(encoding="utf-8")


def with_steps(steps: int) -> str:
    text, count = re.subn(r"^steps = \d+$", f"steps = {steps}", PROGRAM, flags=re.MULTILINE)
    assert count == 1
    return text


def cpython_seconds(text: str, folder: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of CPython running the text as a script, in a process of its own."""
    (folder / "program.py").write_text(text, encoding="utf-8")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "program.py"], cwd=folder, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def cpu(function) -> float:
    started = time.process_time()
    function()
    return time.process_time() - started


def one_step(folder: Path, limits, runs: int = 5) -> list:
    from app.jobs.worker import collect_as_jobs
    from engine.python import run_python

    files = {"input.txt": NAMES}
    collect_as_jobs()

    def ours(steps):
        return cpu(lambda: run_python(with_steps(steps), limits, files=files, shows_graph=False))

    def theirs(steps):
        return cpython_seconds(with_steps(steps), folder)[1]

    gc.collect()
    samples = ([], [])
    for _ in range(runs):  # in turns; a single difference of two short CPython runs moves by 2x under load
        samples[0].append(ours(1) - ours(0))
        samples[1].append(theirs(1) - theirs(0))
    ours_step, theirs_step = median(samples[0]), median(samples[1])
    return [
        [
            f'one step on "emma" (CPU s, median of {runs})',
            f"{theirs_step:.3f}",
            f"{ours_step:.3f}",
            ratio(ours_step, theirs_step),
            verdict(ours_step <= 5 * theirs_step),
        ]
    ]


def cpu_so_far(pid: int) -> float:
    """CPU seconds (user + system) the process has used, or 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime: fields 14 and 15


def peak_rss(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    match = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(match.group(1)) * 1024 if match else 0


async def as_job(steps: int, every: int, folder: Path):
    from app import schemas
    from app.config import Settings
    from app.jobs import LocalJobs

    settings = Settings(job_snapshot_every=every, job_cpu_seconds=100_000, job_wall_seconds=100_000.0)
    jobs = LocalJobs(settings)
    request = schemas.BackwardRequest(expression=with_steps(steps), files={"input.txt": NAMES})
    started = time.perf_counter()
    job = jobs.jobs[await jobs.submit(request, "benchmark")]
    peak = used = 0
    while (await jobs.status(job.id))["status"] in ("queued", "running"):
        if job.process is not None and job.process.pid:
            peak = max(peak, peak_rss(job.process.pid))
            used = max(used, cpu_so_far(job.process.pid))  # read every 0.2 s: the last reading is the job's
        await anyio.sleep(0.2)
    wall = time.perf_counter() - started
    status = await jobs.status(job.id)
    assert status["status"] == "done", status["error"]
    return jobs, job, wall, peak, used


async def graph_seconds(jobs, job, run: int, how: str) -> float:
    """Wall seconds to answer GET /runs/{id}/graph?run=k: from the nearest snapshot, from the start, or
    re-running the whole program (as before snapshots)."""
    from app.jobs import processes

    saved = dict(job.snapshots)
    if how != "snapshot":
        job.snapshots.clear()
    started = time.perf_counter()
    try:
        if how == "whole run":
            kind, _ = await processes.graph(jobs.settings, job.request.model_copy(update={"run": run}))
        else:
            kind, _ = await jobs.graph(job.id, run)
    finally:
        job.snapshots.update(saved)
    assert kind == "graph", kind
    return time.perf_counter() - started


def graph_cpu(jobs, job, run: int, how: str) -> float:
    """CPU seconds of the same work done in this process (the graph process's share, without its start
    and without the other processes that share the machine's cores)."""
    from app.jobs.base import lines
    from app.service import answer_json, replayed_json

    request = job.request.model_copy(update={"run": run})
    limits = jobs.settings.job_limits
    if how == "whole run":
        return cpu(lambda: answer_json(request, limits))
    nearest = max((taken for taken in job.snapshots if taken <= run), default=None)
    snapshot = job.snapshots.get(nearest) if how == "snapshot" else None
    return cpu(lambda: replayed_json(request, limits, job.runs, lines(job.text), snapshot))


async def long_run(steps: int, every: int, folder: Path, snapshots_only: bool):
    jobs, job, wall, peak, used = await as_job(steps, every, folder)
    cpython_wall, cpython_cpu = cpython_seconds(with_steps(steps), folder)
    rows = [
        [
            f"{steps} steps as a job (wall s)",
            f"{cpython_wall:.2f}",
            f"{wall:.2f}",
            ratio(wall, cpython_wall),
            verdict(wall <= 5 * cpython_wall),
        ],
        [  # what the machine's other work does not move
            f"{steps} steps as a job (CPU s of the worker process)",
            f"{cpython_cpu:.2f}",
            f"{used:.2f}",
            ratio(used, cpython_cpu),
            verdict(used <= 5 * cpython_cpu),
        ],
        ["peak RSS of the job's worker (MB)", "", f"{peak / 1e6:.0f}", "", verdict(peak <= 400e6)],
    ]
    sizes = list(map(len, job.snapshots.values()))
    print(
        f"snapshots kept: {len(sizes)}, at runs {sorted(job.snapshots)[:6]}..., "
        f"{sum(sizes) / 1e6:.1f} MB in all, {max(sizes, default=0) / 1e3:.0f} kB the largest"
    )
    graph_rows = []
    last = steps - 1
    for run in sorted({max(0, every - 1), last // 2, last}):
        nearest = max((taken for taken in job.snapshots if taken <= run), default=0)
        from_snapshot = await graph_seconds(jobs, job, run, "snapshot")
        cpu_snapshot = graph_cpu(jobs, job, run, "snapshot")
        from_start = whole = whole_cpu = ""
        if not snapshots_only:
            seconds, cpu_seconds = await graph_seconds(jobs, job, run, "start"), graph_cpu(jobs, job, run, "start")
            from_start = f"{seconds:.2f} / {cpu_seconds:.2f}"
        if run == last and not snapshots_only:  # as long for any k
            whole = f"{await graph_seconds(jobs, job, run, 'whole run'):.2f}"
            whole_cpu = f"{graph_cpu(jobs, job, run, 'whole run'):.2f}"
        graph_rows.append(
            [
                f"step {run + 1} (snapshot at run {nearest})",
                f"{from_snapshot:.2f} / {cpu_snapshot:.2f}",
                from_start,
                f"{whole} / {whole_cpu}" if whole else "",
                verdict(min(from_snapshot, cpu_snapshot) <= 10),
            ]
        )
    await jobs.close()
    return rows, graph_rows


def profile_step(limits) -> None:
    from engine.python import run_python

    sys.setrecursionlimit(200_000)  # the program's recursion stays on this thread, where the profile sees it
    text = with_steps(1)
    profile = cProfile.Profile()
    profile.runcall(run_python, text, limits, files={"input.txt": NAMES}, shows_graph=False)
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(25)
    print(out.getvalue())


def main(steps: int, every: int, snapshots_only: bool, profile: bool, only_one_step: bool = False) -> None:
    from engine import Limits

    limits = replace(Limits(), max_statements=10**9)
    print(machine() + "; " + load())
    if profile:
        resource.setrlimit(resource.RLIMIT_STACK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        profile_step(limits)
        return
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "input.txt").write_text(NAMES, encoding="utf-8")
        rows = one_step(folder, limits)
        if only_one_step:
            print_table(
                "One training step of the character transformer, valuegraph against CPython",
                ["what", "CPython", "valuegraph", "ratio", "target 5x"],
                rows,
                [load()],
            )
            return
        job_rows, graph_rows = anyio.run(long_run, steps, every, folder, snapshots_only)
    print_table(
        "A long run: the character transformer, valuegraph against CPython",
        ["what", "CPython", "valuegraph", "ratio", "target (5x; 400 MB)"],
        rows + job_rows,
        [f"Snapshots every {every} backward() calls (VALUEGRAPH_JOB_SNAPSHOT_EVERY). {load()}."],
    )
    print_table(
        "Opening step k's graph of the finished job (wall s through the job pool / CPU s of the same work here)",
        ["step", "from its snapshot", "from the start", "whole run re-run", "target <= 10 s"],
        graph_rows,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--every", type=int, default=2)
    parser.add_argument("--snapshots-only", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--one-step", action="store_true", help="only the one-step row (no job)")
    arguments = parser.parse_args()
    main(arguments.steps, arguments.every, arguments.snapshots_only, arguments.profile, arguments.one_step)
