"""The README's two commands stay true: CI runs exactly the README's test command, and the
start command installs the package and runs the console script pyproject.toml declares."""

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / ".ci"))
import lock_dependencies as lock  # noqa: E402  (a script, not a package)


def readme_commands():
    blocks = re.findall(r"```sh\n(.*?)\n```", (REPO / "README.md").read_text(), re.S)
    return blocks[0].strip(), blocks[1].strip()


def test_ci_runs_the_readme_test_command_in_the_base_interpreter_and_in_a_venv():
    _, test_command = readme_commands()
    ci = (REPO / ".ci" / "run").read_text()
    (assigned,) = re.findall(r"^TEST_COMMAND=(.*)$", ci, re.M)
    assert shlex.split(assigned) == [test_command]
    assert 'bash -c "$TEST_COMMAND"' in ci
    # ... and again in a fresh virtual environment, where pip and python3 are the environment's.
    assert re.search(r'^python3 -m venv "\$VENV"$', ci, re.M)
    assert ci.rstrip().endswith("""bash -c "source '$VENV/bin/activate' && $TEST_COMMAND\"""")
    assert "apt-get update && apt-get install -y chromium redis-server mono-mcs mono-runtime" in test_command
    assert "npm ci --prefix tests" in test_command and "pytest" in test_command
    assert "pip install -c constraints.txt -e '.[test]'" in test_command


def test_the_start_command_runs_the_declared_console_script():
    start_command, _ = readme_commands()
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert start_command == "pip install -c constraints.txt -e . && valuegraph"
    assert scripts["valuegraph"] == "app.cli:main"


def test_the_lock_pins_every_declared_requirement_within_its_range():
    pins = lock.read_lock()
    for requirement in lock.project_requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in constraints.txt: run python3 .ci/lock_dependencies.py"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt pins {name}=={pins[name]}, outside {requirement}"
        )


def test_the_suite_runs_with_the_locked_versions():
    """What the test command installed (the package, its test extra and their dependencies) is
    what constraints.txt records: a dependency added or upgraded without relocking fails here."""
    installed = lock.resolved(lock.project_requirements(extras=("test",)))
    pins = lock.read_lock()
    assert {name: pins.get(name) for name in installed} == installed


def test_the_lock_script_runs_in_the_test_environment(tmp_path):
    """The test command installs every extra the lock covers (the test extra includes the others), so
    the lock script runs where the suite runs, and finds constraints.txt up to date."""
    written = tmp_path / "constraints.txt"
    run = subprocess.run(
        [sys.executable, str(REPO / ".ci" / "lock_dependencies.py"), "-o", str(written)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert written.read_text() == (REPO / "constraints.txt").read_text()


def test_the_lock_header_names_the_lock_script():
    (named,) = re.findall(r"`python3 (\S+)`", (REPO / "constraints.txt").read_text().splitlines()[1])
    assert (REPO / named).is_file(), named


def test_the_benchmark_runner_answers_help_in_the_test_environment():
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--help"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0 and "--only" in run.stdout, run.stderr
