"""The code style CI enforces: ruff's lint and its formatter, configured in pyproject.toml, and the
files the code's comments name, which must exist. A test rather than a separate CI step, so that it
runs wherever the suite runs (README's test command, both CI runs, a contributor's `python3 -m pytest`)."""

import pathlib
import re
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


# A repository file named in the code's comments and docstrings (`app/export/options.py`), not a URL path
# (`/static/js/...`): a file that moved leaves such a mention pointing nowhere.
NAMED_FILE = re.compile(
    r"(?<![\w/.-])((?:app|engine|static|tests|benchmarks|templates|docs)/[\w./-]*\.(?:py|js|mjs|html|css|md|json|txt))\b"
)


def test_every_file_the_code_names_exists():
    tracked = subprocess.run(
        ["git", "ls-files", "app", "engine", "static/js", "templates", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    sources = [
        name
        for name in tracked
        if name.endswith((".py", ".js", ".mjs", ".html", ".css")) and "/corpus/" not in name and "/vendor/" not in name
    ]
    named = [
        (source, match[1])
        for source in sources
        for match in NAMED_FILE.finditer((ROOT / source).read_text(encoding="utf-8", errors="replace"))
    ]
    assert len(named) > 100, "the code does name files: the pattern finds them"
    missing = [f"{source} names {path}" for source, path in named if not (ROOT / path).exists()]
    assert not missing, missing
