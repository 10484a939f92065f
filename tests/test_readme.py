"""The README's two commands stay true: CI runs exactly the README's test command, and the
start command installs the package and runs the console script pyproject.toml declares."""

import re
import shlex
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def readme_commands():
    blocks = re.findall(r"```sh\n(.*?)\n```", (REPO / "README.md").read_text(), re.S)
    return blocks[0].strip(), blocks[1].strip()


def test_ci_runs_the_readme_test_command():
    _, test_command = readme_commands()
    ci = (REPO / ".ci" / "run").read_text()
    (assigned,) = re.findall(r"^TEST_COMMAND=(.*)$", ci, re.M)
    assert shlex.split(assigned) == [test_command]
    assert 'bash -c "$TEST_COMMAND"' in ci
    assert "apt-get install -y chromium" in test_command and "pytest" in test_command


def test_the_start_command_runs_the_declared_console_script():
    start_command, _ = readme_commands()
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert start_command == "pip install -e . && valuegraph"
    assert scripts["valuegraph"] == "app.cli:main"
