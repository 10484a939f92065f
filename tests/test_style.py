"""The code style CI enforces: ruff's lint and its formatter, configured in pyproject.toml. A test
rather than a separate CI step, so that it runs wherever the suite runs (README's test command,
both CI runs, a contributor's `python3 -m pytest`)."""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("command", [["check", "."], ["format", "--check", "."]], ids=" ".join)
def test_ruff_passes(command):
    run = subprocess.run(
        [sys.executable, "-m", "ruff", *command, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, f"ruff {' '.join(command)} found problems:\n{run.stdout}{run.stderr}"
