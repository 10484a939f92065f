"""Issue 20: a program's own value class runs as CPython runs it. Every program of
tests/own_classes/ (learner-style classes written for valuegraph: the course's, micrograd's and
microgpt's styles, correct and broken) and micrograd's own engine.py, read from the installed
PyPI package at test time, print the same lines under valuegraph as under CPython, and the
graph valuegraph observes has the same nodes, data and grads (1e-12 relative) as the objects
CPython made."""

import contextlib
import importlib.util
import io
import math
import random
import sys
from pathlib import Path

import pytest

from engine import ProgramError, run_program
from engine.python import run_python

OWN_CLASSES = sorted((Path(__file__).parent / "own_classes").glob("*.py"))
MICROGRAD_README = """
a = Value(-4.0)
b = Value(2.0)
c = a + b
d = a * b + b**3
c += c + 1
c += 1 + c + (-a)
d += d * 2 + (b + a).relu()
d += 3 * d + (b - a).relu()
e = c - d
f = e**2
g = f / 2.0
g += 10.0 / f
print(f'{g.data:.4f}')
g.backward()
print(f'{a.grad:.4f}')
print(f'{b.grad:.4f}')
print(g)
out = g
"""
DATA_FIELDS = ("data", "Data", "value")
INPUT_FIELDS = ("_children", "children", "_prev", "_inputs", "inputs")


def micrograd_engine() -> str:
    return Path(importlib.util.find_spec("micrograd.engine").origin).read_text(encoding="utf-8")


def programs():
    yield from ((path.stem, path.read_text(encoding="utf-8")) for path in OWN_CLASSES)
    yield "micrograd_engine_readme", micrograd_engine() + MICROGRAD_README


def _field(obj, names):
    return next((getattr(obj, name) for name in names if hasattr(obj, name)), None)


def cpython_graph(text):
    """Run the text with CPython; (printed lines, [(data, grad)] of the nodes `out` reaches)."""
    random.seed(0)
    namespace = {"__name__": "__main__"}
    printed = io.StringIO()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)  # CPython's default of 1,000 stops the 3,000-deep chain; valuegraph's does not
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(text, "<program>", "exec"), namespace)  # the test's own corpus, run as CPython would
    finally:
        sys.setrecursionlimit(limit)
    out = namespace["out"]
    seen, pending = {id(out): out}, [out]
    while pending:
        for child in _field(pending.pop(), INPUT_FIELDS):
            if id(child) not in seen:
                seen[id(child)] = child
                pending.append(child)
    nodes = [(float(_field(n, DATA_FIELDS)), _grad(getattr(n, "grad", None))) for n in seen.values()]
    return printed.getvalue().splitlines(), nodes


def _grad(grad):
    return float(grad) if isinstance(grad, (int, float)) else None


def _close(a, b):
    if a is None or b is None:
        return a is b
    return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300)


def assert_same(text):
    expected_printed, expected_nodes = cpython_graph(text)
    result = run_python(text)
    assert result.printed == expected_printed
    graph = result.graph
    assert graph is not None
    assert len(graph["nodes"]) == len(expected_nodes)
    ours = sorted((n["data"], n["grad"]) for n in graph["nodes"])
    theirs = sorted(expected_nodes)
    for (data, grad), (expected_data, expected_grad) in zip(ours, theirs):
        assert _close(data, expected_data) and _close(grad, expected_grad), (data, grad, expected_data, expected_grad)
    return result


def test_the_corpus_has_at_least_20_classes_of_the_three_styles():
    texts = [path.read_text(encoding="utf-8") for path in OWN_CLASSES]
    assert len(texts) >= 20
    assert sum("_local_grads" in t for t in texts) >= 5 and sum("_backward" in t for t in texts) >= 4
    assert sum("__slots__" in t for t in texts) >= 3 and sum("set()" in t for t in texts) >= 5
    assert all(t.startswith("# Written") for t in texts)


@pytest.mark.parametrize(("name", "text"), list(programs()), ids=[name for name, _ in programs()])
def test_the_program_runs_as_cpython_runs_it(name, text):
    assert_same(text)


HEAD = (
    "class V:\n    def __init__(self, data, children=()):\n"
    "        self.data = data\n        self.grad = 0\n        self._children = children\n"
)


@pytest.mark.parametrize(
    ("program", "message"),
    [
        (HEAD + "    def __add__(self, o):\n        while True:\n            pass\nV(1) + V(2)", "statements"),
        (
            HEAD + "    def __add__(self, o):\n        return self + o\nV(1) + V(2)",
            "calls nest deeper than 4000",
        ),
        (
            HEAD + "    def __repr__(self):\n        return 1 / 0 + ''\nprint(V(1))",
            "`+` does not work on float and string",
        ),
        (HEAD + "    def __repr__(self):\n        return 5\nprint(V(1))", "__repr__ of V must return a string"),
        (HEAD + "    def backward(self):\n        self.grad = 1\nout = V('x', ())\nout.backward()", "holds a string"),
        (HEAD + "a = V(1)\nb = V(2)\nc = a - b", "unsupported operand type(s) for -: 'V' and 'V'"),
        (HEAD + "__slots__ = ('data',)\nclass W:\n    __slots__ = ('data',)\nW().grad = 1", "__slots__ lists data"),
    ],
)
def test_hostile_classes_end_in_the_one_error_type(program, message):
    with pytest.raises(ProgramError) as caught:
        run_program(program)
    assert message in caught.value.message


def test_recursion_is_bounded_by_the_programs_own_call_depth_not_pythons():
    deep = (OWN_CLASSES[0].parent / "deep_chain_recursion.py").read_text(encoding="utf-8")
    assert run_python(deep).graph is not None  # 3,000 deep, past CPython's default recursion limit
    from engine import Limits

    with pytest.raises(ProgramError, match="calls nest deeper than 500"):
        run_python(deep, Limits(max_call_depth=500))


def test_the_walk_of_micrograds_backward_is_recorded_in_the_order_its_closures_ran():
    result = run_python(micrograd_engine() + "a = Value(2.0)\nb = Value(3.0)\nc = a * b\nout = c + a\nout.backward()")
    walk = result.graph["walk"]
    ids = {n["data"]: n["id"] for n in result.graph["nodes"]}
    assert walk[0] == {"node": None, "updates": [[ids[8.0], 1.0]]}  # the seed: self.grad = 1
    assert walk[1]["node"] == ids[8.0] and sorted(u[0] for u in walk[1]["updates"]) == sorted([ids[6.0], ids[2.0]])
    ops = {n["data"]: n["op"] for n in result.graph["nodes"]}
    assert ops[8.0] == "+" and ops[6.0] == "*" and result.graph["inputs_are_sets"]
    locals_of_c = next(n["local_grads"] for n in result.graph["nodes"] if n["data"] == 6.0)
    assert locals_of_c == [3.0, 2.0]  # derived from _op '*' and the inputs in the order __mul__ passed them
