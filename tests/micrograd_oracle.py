"""The reference: run a program with PyPI micrograd in a separate CPython process and report
the graph of each backward() call, to compare with what valuegraph builds from the same text.

PyPI micrograd 0.1.0 has no tanh, exp, log or label=; programs that use them run against a
subclass of its Value that adds them (written here; micrograd's own code comes from the installed
package), installed as micrograd.engine.Value and micrograd.nn.Value before the program starts."""

import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

from engine import run_program, trace

HARNESS = r'''
import itertools, json, math, random, runpy, sys
import micrograd.engine, micrograd.nn

LECTURE = sys.argv[3] == "1"

MicrogradValue = micrograd.engine.Value

class LectureValue(MicrogradValue):
    """PyPI micrograd's Value, its code as the installed package has it, plus what 0.1.0 lacks and
    programs written for the course use: label=, tanh, exp and log. micrograd's operations build
    their results through the module's name Value, which is rebound to this class below."""
    def __init__(self, data, _children=(), _op='', label=''):
        super().__init__(data, _children, _op)
        self.label = label
    def _unary(self, data, op, local):
        result = LectureValue(data, (self,), op)
        def _backward():
            self.grad += local * result.grad
        result._backward = _backward
        return result
    def tanh(self):
        t = math.tanh(self.data)
        return self._unary(t, 'tanh', 1 - t * t)
    def exp(self):
        e = math.exp(self.data)
        return self._unary(e, 'exp', e)
    def log(self):
        return self._unary(math.log(self.data), 'log', 1 / self.data)

if LECTURE:
    micrograd.engine.Value = micrograd.nn.Value = LectureValue
Value = micrograd.engine.Value
serials = itertools.count()
plain_init = Value.__init__
def numbered_init(self, *args, **kwargs):
    plain_init(self, *args, **kwargs)
    self._serial = next(serials)
Value.__init__ = numbered_init

calls = []
plain_backward = Value.backward
def recorded_backward(self):
    plain_backward(self)
    seen, stack, nodes = {id(self)}, [self], []
    while stack:
        node = stack.pop()
        nodes.append(node)
        for child in node._prev:
            if id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    nodes.sort(key=lambda n: n._serial)
    op = lambda n: None if not n._op else "**" if n._op.startswith("**") else "relu" if n._op == "ReLU" else n._op
    calls.append({"data": float(self.data), "nodes": [[op(n), float(n.data), float(n.grad)] for n in nodes]})
Value.backward = recorded_backward

random.seed(int(sys.argv[2]))
# notebook cells use the Value defined above them
runpy.run_path(sys.argv[1], init_globals={"Value": Value}, run_name="__main__")
print("\n@@ORACLE@@" + json.dumps(calls))
'''

LECTURE_WORDS = ("tanh", ".exp(", ".log(", "label")


def micrograd_calls(
    program: str, seed: int = 0, lecture: bool | None = None, arithmetic_errors: bool = False
) -> list | None:
    """[{"data", "nodes": [[op, data, grad] in creation order]}] per backward() call, from CPython.
    arithmetic_errors: return None where CPython raises ZeroDivisionError or OverflowError (valuegraph
    follows IEEE there instead), rather than failing."""
    if lecture is None:
        lecture = any(word in program for word in LECTURE_WORDS)
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "program.py"
        script.write_text(program, encoding="utf-8")
        harness = Path(folder) / "harness.py"
        harness.write_text(HARNESS, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(harness), str(script), str(seed), "1" if lecture else "0"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    if (
        arithmetic_errors
        and done.returncode != 0
        and ("ZeroDivisionError" in done.stderr or "OverflowError" in done.stderr)
    ):
        return None
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.rsplit("@@ORACLE@@", 1)[1])


def valuegraph_graph(program: str, seed: int = 0, run: int | None = None) -> dict:
    """The same record for valuegraph's run of the program (the chosen backward() call)."""
    result = run_program(program, seed=seed, run=run)
    steps = trace(result.output)
    return {
        "data": result.output.data,
        "nodes": [[n.op, n.data, n.grad] for n in steps.nodes],
        "runs": result.runs,
        "printed": result.printed,
    }


def close(a: float, b: float, rel: float = 1e-12, absolute: float = 1e-14) -> bool:
    """rel 1e-12, NaN for NaN. The absolute 1e-14 is for gradients that are sums of terms of both
    signs: micrograd adds them in the order of a set's iteration, valuegraph in its sort's order,
    and a sum that nearly cancels keeps only the rounding of its terms (seen: 9e-16 on 8e-4)."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= max(rel * max(abs(a), abs(b)), absolute)


def assert_same_graph(program: str, seed: int = 0, run: int = -1, oracle_calls: list | None = None) -> dict:
    """Node count, op multiset, every node's data and grad (rel 1e-12, NaN for NaN) as micrograd."""
    calls = oracle_calls if oracle_calls is not None else micrograd_calls(program, seed)
    assert calls, "micrograd saw no backward() call"
    index = run if run >= 0 else len(calls) + run
    expected = calls[index]
    ours = valuegraph_graph(program, seed, index)
    assert len(ours["runs"]) == len(calls)
    assert all(close(mine[1], theirs["data"]) for mine, theirs in zip(ours["runs"], calls)), "the loss curve differs"
    assert len(ours["nodes"]) == len(expected["nodes"]), (len(ours["nodes"]), len(expected["nodes"]))
    assert sorted(map(str, (n[0] for n in ours["nodes"]))) == sorted(map(str, (n[0] for n in expected["nodes"])))
    for i, (mine, theirs) in enumerate(zip(ours["nodes"], expected["nodes"])):
        assert mine[0] == theirs[0], f"node {i}: op {mine[0]} != {theirs[0]}"
        assert close(mine[1], theirs[1]), f"node {i}: data {mine[1]} != {theirs[1]}"
        if mine[0] is None:  # leaves: the gradients the program reads
            assert close(mine[2], theirs[2]), f"leaf {i}: grad {mine[2]} != {theirs[2]}"
    return ours
