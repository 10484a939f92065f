"""The parser fuzz target in the test suite: every committed input replayed, then a short
coverage-guided run (VALUEGRAPH_FUZZ_SECONDS, default 10) in a subprocess."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import fuzz_parser
import pytest

from engine import ProgramError
from engine.syntax import Span

HERE = Path(__file__).resolve().parent
FUZZER = HERE / "fuzz_parser.py"
SEEDS = HERE / "seeds"
REGRESSIONS = HERE / "regressions"
DICTIONARY = HERE / "program.dict"
SECONDS = int(os.environ.get("VALUEGRAPH_FUZZ_SECONDS", "10"))

COMMITTED = sorted(SEEDS.iterdir()) + sorted(p for p in REGRESSIONS.iterdir() if p.name != "README.md")


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_inputs_pass(path):
    fuzz_parser.check_program(path.read_bytes())


def test_there_are_inputs_to_replay():
    assert len(list(SEEDS.iterdir())) >= 5


@pytest.mark.parametrize(
    "source, offset, line, column",
    [("a\nb $", 4, 2, 3), ("a\r\nb $", 5, 2, 3), ("", 0, 1, 1), ("ab", 2, 1, 3)],
)
def test_a_right_place_passes(source, offset, line, column):
    fuzz_parser.check_place(ProgramError("wrong", Span(offset, line, column, offset + 1)), source)


@pytest.mark.parametrize(
    "source, offset, line, column",
    [("a\nb $", 4, 1, 5), ("a\nb $", 4, 2, 4), ("abc", 4, 1, 5), ("abc", -1, 1, 0)],
)
def test_a_wrong_place_is_a_crash(source, offset, line, column):
    with pytest.raises(AssertionError):
        fuzz_parser.check_place(ProgramError("wrong", Span(offset, line, column, offset + 1)), source)


def test_an_engine_exception_is_a_crash(monkeypatch):
    def broken_parse(source, limits):
        raise IndexError("list index out of range")

    monkeypatch.setattr(fuzz_parser, "parse", broken_parse)
    with pytest.raises(IndexError):
        fuzz_parser.check_program(b"a = 1")


def test_coverage_guided_run_finds_no_crash(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    command = [
        sys.executable,
        str(FUZZER),
        f"-max_total_time={SECONDS}",
        "-timeout=10",
        "-rss_limit_mb=2048",
        f"-dict={DICTIONARY}",
        f"-artifact_prefix={tmp_path}/",
        f"--corpus={corpus}",
        str(SEEDS),
        str(REGRESSIONS),
    ]
    run = subprocess.run(command, capture_output=True, text=True, timeout=SECONDS + 120)
    crashes = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("crash-", "timeout-", "oom-")))
    assert run.returncode == 0 and not crashes, (
        f"the fuzzer found {crashes}: fix the bug, then copy the file into "
        f"tests/fuzz/regressions/\n{run.stderr[-3000:]}"
    )
    assert "Done" in run.stderr and "runs in" in run.stderr  # it really fuzzed, for the whole time
    assert any(corpus.iterdir()), "new inputs went to the corpus named"


def test_new_inputs_go_to_a_temporary_corpus_unless_one_is_named(tmp_path):
    arguments = fuzz_parser.libfuzzer_arguments(["fuzz", "-runs=5", str(SEEDS), str(REGRESSIONS)])
    new_inputs = Path(arguments[2])
    assert arguments[:2] == ["fuzz", "-runs=5"] and arguments[3:] == [str(SEEDS), str(REGRESSIONS)]
    assert new_inputs.is_dir() and not any(new_inputs.iterdir()) and not new_inputs.is_relative_to(HERE.parents[1])
    new_inputs.rmdir()
    named = tmp_path / "mine"
    assert fuzz_parser.libfuzzer_arguments(["fuzz", f"--corpus={named}", str(SEEDS)]) == [
        "fuzz",
        str(named),
        str(SEEDS),
    ]
    assert named.is_dir()
    crash = tmp_path / "crash-1"
    crash.write_bytes(b"a")
    assert fuzz_parser.libfuzzer_arguments(["fuzz", str(crash)]) == ["fuzz", str(crash)]  # replaying a crash


def test_the_command_by_hand_leaves_the_seeds_as_they_are(tmp_path):
    before = sorted(path.name for path in SEEDS.iterdir())
    command = [sys.executable, str(FUZZER), "-max_total_time=3", f"-artifact_prefix={tmp_path}/", str(SEEDS)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "new inputs go to " in run.stderr, run.stderr[-3000:]
    new_inputs = Path(run.stderr.split("new inputs go to ", 1)[1].splitlines()[0])
    assert sorted(path.name for path in SEEDS.iterdir()) == before
    assert any(new_inputs.iterdir()), "the run found inputs, and kept them outside the checkout"
    shutil.rmtree(new_inputs)
