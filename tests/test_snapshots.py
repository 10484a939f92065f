"""Snapshots of a job's program (issue 21, "any step's graph opens"): the graph of backward() call k,
replayed from the nearest snapshot at or before it, is byte for byte the answer /backward gives for
run k; the snapshots stay within their byte limit; what a snapshot cannot save ends them, and the
graphs then replay from the start; the names a snapshot keeps are the ones the program still reads."""

import ast
import os
import pickle
import zlib
from dataclasses import replace
from pathlib import Path

import pytest

from app import schemas
from app.service import answer_json, replayed_json
from engine import Limits, ProgramError, replay_program, run_program
from engine.python import Taker, replay_python
from engine.python.calls import Frame
from engine.python.snapshots import live_names, load
from engine.python.state import State

HERE = Path(__file__).parent
LIMITS = replace(Limits(), max_statements=50_000_000)


def program(path: str, **replacements) -> str:
    text = (HERE / path).read_text(encoding="utf-8")
    for old, new in replacements.items():
        assert old in text
        text = text.replace(old, new)
    return text


# Each: (text, files). The character model uses valuegraph's Value (micrograd.engine), the stack its own
# class, the MLP micrograd.nn (valuegraph's prelude): every kind of object a snapshot holds.
NAMES = {"input.txt": (HERE / "text_and_files" / "names.txt").read_text(encoding="utf-8")}
PROGRAMS = {
    "character model": (program("text_and_files/tiny_char_model.py", **{"steps = 3": "steps = 7"}), NAMES),
    "own class": (program("corpus/own_classes_mlp_training.py", **{"range(15)": "range(7)"}), {}),
    "micrograd.nn": (program("corpus/nn_training_loop.py", **{"range(20)": "range(7)"}), {}),
}


def job(text: str, files: dict, every: int, keep_bytes: int = 10_000_000):
    """A job's run of the program with snapshots: (its ProgramRun, {run: snapshot bytes}, the Taker)."""
    kept = {}

    def deliver(run, data, dropped):
        for gone in dropped:
            del kept[gone]
        if data is not None:
            kept[run] = data

    taker = Taker(every, keep_bytes, deliver)
    done = run_program(text, None, LIMITS, 0, None, files, snapshots=taker, shows_graph=False)
    return done, kept, taker


@pytest.mark.parametrize("name", PROGRAMS)
def test_every_run_replayed_from_its_nearest_snapshot_answers_what_backward_answers(name):
    text, files = PROGRAMS[name]
    done, kept, taker = job(text, files, every=2)
    assert taker.stopped is None
    assert done.output is None  # a job keeps no graph
    assert sorted(kept) == [2, 4, 6]
    for run in range(len(done.runs)):
        request = schemas.BackwardRequest(expression=text, files=files, run=run)
        expected, _ = answer_json(request, LIMITS)
        nearest = max((taken for taken in kept if taken <= run), default=None)
        replayed = replayed_json(request, LIMITS, done.runs, done.printed, kept.get(nearest))
        assert replayed == expected, (name, run)
        from_start = replayed_json(request, LIMITS, done.runs, done.printed, None)
        assert from_start == expected, (name, run)
        again = replay_program(text, LIMITS, 0, run, files, done.runs, done.printed, kept.get(nearest))
        assert again.python.replayed_from == (nearest or 0)


def test_a_snapshot_holding_a_super_object_loads():
    # an object that keeps super() in a field (rare, but a program may): its snapshots load and replay
    text = (
        "class A:\n    def f(self):\n        return 1.0\n"
        "class B(A):\n    def __init__(self):\n        self.up = super()\n"
        "b = B()\nx = Value(1.0)\nfor i in range(6):\n    y = x * b.up.f() * i\n    y.backward()\n"
    )
    done, kept, taker = job(text, {}, every=2)
    assert taker.stopped is None and sorted(kept) == [2, 4, 6]
    request = schemas.BackwardRequest(expression=text, run=5)
    again = replay_program(text, LIMITS, 0, 5, {}, done.runs, done.printed, kept[4])
    assert again.python.replayed_from == 4
    assert replayed_json(request, LIMITS, done.runs, done.printed, kept[4]) == answer_json(request, LIMITS)[0]


def test_a_replay_runs_only_from_its_snapshot_to_the_end_of_the_wanted_pass():
    text = "x = Value(1.0)\nfor i in range(40):\n    y = x * i\n    y.backward()\n    print(i)\nprint('end')\n"
    done, kept, _ = job(text, {}, every=10)
    assert sorted(kept) == [10, 20, 30, 40]
    replayed = replay_python(text, LIMITS, 0, 25, None, done.runs, done.printed, kept[20])
    assert replayed.replayed_from == 20
    assert replayed.printed == done.printed and replayed.printed[-1] == "end"
    assert replayed.run == 25 and replayed.output.data == 25.0
    assert replayed.runs == done.runs


def test_snapshots_stay_within_their_byte_limit_spread_over_the_whole_run():
    text, files = PROGRAMS["micrograd.nn"]
    text = text.replace("range(7)", "range(40)")
    _, everything, _ = job(text, files, every=1)
    size = max(map(len, everything.values()))
    limit = 5 * size
    done, kept, taker = job(text, files, every=1, keep_bytes=limit)
    assert sum(map(len, kept.values())) <= limit
    assert 2 <= len(kept) <= 5
    assert taker.every > 1  # the spacing doubled as snapshots were dropped
    assert max(kept) >= 30  # the latest part of the run still has one
    assert all(run % taker.every == 0 for run in kept), (taker.every, kept.keys())
    run = 33
    request = schemas.BackwardRequest(expression=text, run=run)
    nearest = max(taken for taken in kept if taken <= run)
    assert replayed_json(request, LIMITS, done.runs, done.printed, kept[nearest]) == answer_json(request, LIMITS)[0]


def test_a_snapshot_bigger_than_the_limit_ends_the_snapshots():
    text, files = PROGRAMS["character model"]
    _, kept, taker = job(text, files, every=1, keep_bytes=100)
    assert kept == {}
    assert "bytes" in taker.stopped


def test_a_program_holding_a_generator_takes_no_snapshot_and_its_graphs_replay_from_the_start():
    text = (
        "x = Value(2.0)\nsquares = (i * i for i in range(100))\n"
        "for step in range(6):\n    y = x * step\n    y.backward()\n    held = squares\n"
    )
    done, kept, taker = job(text, {}, every=1)
    assert kept == {} and "generator" in taker.stopped
    request = schemas.BackwardRequest(expression=text, run=4)
    assert replayed_json(request, LIMITS, done.runs, done.printed, None) == answer_json(request, LIMITS)[0]


def test_a_snapshot_names_only_the_classes_it_may_hold():
    text = "x = Value(1.0)\nfor i in range(3):\n    y = x * i\n    y.backward()\n"
    runs = [(4, 0.0), (4, 1.0), (4, 2.0)]
    forged = zlib.compress(pickle.dumps({"format": 1, "call": os.getcwd}))
    with pytest.raises(pickle.UnpicklingError, match="no posix.getcwd"):
        load(State(LIMITS, 0, None), forged, Frame({}, None))
    # A replay given it runs the program from its start instead, as it does given a later run's snapshot.
    replayed = replay_python(text, LIMITS, 0, 2, None, runs, [], forged)
    assert replayed.replayed_from == 0 and replayed.output.data == 2.0
    _, kept, _ = job(text, {}, every=1)
    replayed = replay_python(text, LIMITS, 0, 1, None, runs, [], kept[2])
    assert replayed.replayed_from == 0 and replayed.output.data == 1.0


def test_a_run_past_the_last_is_the_error_backward_gives():
    text = "x = Value(1.0)\nfor i in range(3):\n    y = x * i\n    y.backward()\n"
    done, kept, _ = job(text, {}, every=1)
    with pytest.raises(ProgramError) as replayed:
        replay_python(text, LIMITS, 0, 3, None, done.runs, done.printed, kept[2])
    with pytest.raises(ProgramError) as direct:
        run_program(text, None, LIMITS, 0, 3)
    assert replayed.value.message == direct.value.message
    assert "run 3 does not exist" in direct.value.message


def live(text: str) -> set:
    (names,) = live_names(ast.parse(text)).values()
    return names


def test_a_snapshot_keeps_the_names_read_before_they_are_assigned():
    # `loss` and `probs` are assigned before any read in the pass, and never read after the loop:
    # the last step's graph is not saved. `total` is read before it is assigned; `w` by a function.
    text = (
        "w = 1\ntotal = 0\nprobs = 0\ndef f(a):\n    return a * w\n"
        "for step in range(3):\n    probs = [f(step)]\n    loss = probs[0]\n    total = total + loss\n"
        "    for p in probs:\n        seen = p\n"
        "print(total)\n"
    )
    assert live(text) >= {"total", "w", "f"}
    assert not live(text) & {"loss", "probs", "step", "seen"}


def test_names_read_after_the_loop_or_under_a_condition_are_kept():
    text = "for step in range(3):\n    if step:\n        print(last)\n    last = step\nprint(after)\n"
    assert {"last", "after"} <= live(text)


def test_a_loop_that_breaks_keeps_every_name_it_reads():
    text = "for step in range(3):\n    loss = step\n    if loss > 1:\n        break\n"
    assert "loss" in live(text)


def test_a_program_that_can_see_all_its_names_keeps_them_all():
    assert live_names(ast.parse("for i in range(2):\n    x = i\n    print(dir())\n")) == {0: None}


def test_a_job_forgets_the_places_of_values_it_can_no_longer_reach():
    text = "w = Value(0.5)\nfor step in range(60):\n    loss = sum(w * i for i in range(50))\n    loss.backward()\n"
    whole = run_program(text, None, LIMITS)
    done, kept, _ = job(text, {}, every=5)
    assert len(whole.python.serials) > 60 * 50
    assert len(done.python.serials) < 6 * 100  # the marks of the last passes since a snapshot, and w's
    request = schemas.BackwardRequest(expression=text, run=57)
    assert replayed_json(request, LIMITS, done.runs, done.printed, kept[55]) == answer_json(request, LIMITS)[0]


def test_a_snapshot_of_a_program_with_functions_and_classes_is_replayed_from():
    """A closure's frame (scaler's, which scaled keeps) and an instance of the program's class are in the
    snapshot, and load back."""
    text = (
        "class Box:\n    def __init__(self, v):\n        self.v = v\n\n"
        "def scaler(k):\n    def scaled(x, i):\n        return x * k * i\n    return scaled\n\n"
        "box = Box(Value(1.0))\nscaled = scaler(1.0)\n"
        "for i in range(30):\n    y = scaled(box.v, i)\n    y.backward()\nprint('end')\n"
    )
    done, kept, _ = job(text, {}, every=10)
    assert sorted(kept) == [10, 20, 30]
    replayed = replay_python(text, LIMITS, 0, 25, None, done.runs, done.printed, kept[20])
    assert replayed.replayed_from == 20 and replayed.output.data == 25.0
