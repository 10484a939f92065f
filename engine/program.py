"""A program's text to the Value to show: the course shorthand, or Python written for micrograd.

How the two are told apart: a program is Python when it calls `Value(...)`, `MLP(...)`,
`Neuron(...)`, `Layer(...)` or `print(...)`, or has a line starting with `import`, `from`,
`def`, `class`, `for`, `while` or `if`. Everything else is the shorthand, exactly as before
(`a = 2` makes a leaf labelled a)."""

import bisect
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from .errors import ProgramError
from .evaluate import evaluate
from .limits import Limits
from .parser import parse
from .python import PythonRun, run_python
from .syntax import Span
from .trace import format_number
from .value import Value

PYTHON_MARKERS = r"\b(?:Value|MLP|Neuron|Layer|print)\s*\(|^[ \t]*(?:import|from|def|class|for|while|if)\b"
WHOLE_PROGRAM = Span(0, 1, 1, 0)
PRIMES = ("", "′", "″", "‴", "⁗")
SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def is_python(text: str) -> bool:
    return re.search(PYTHON_MARKERS, text, re.MULTILINE) is not None


class NodeOrigin(NamedTuple):
    label: str | None
    span: tuple | None  # (line, column, end_line, end_column), 1-based, end exclusive
    expr: str
    scope: list


@dataclass
class ProgramRun:
    output: Value
    runs: list = field(default_factory=list)  # (line, output data) per backward() call
    run: int | None = None  # which of them `output` is from
    printed: list = field(default_factory=list)
    python: PythonRun | None = None
    shorthand: "ShorthandOrigins | None" = None

    def origins(self, nodes) -> list:
        """NodeOrigin per node (in the given order, creation order for distinct labels)."""
        where = self.python or self.shorthand or NOWHERE
        found = [where.origin(node) for node in nodes]  # (name label or None, span, expr, scope)
        labels = distinct_labels([node.label or name for node, (name, _, _, _) in zip(nodes, found)])
        return [
            # a constant that an operation made from a plain number shows its value
            NodeOrigin(label, span, format_number(node.data) if node.op is None and label is None else expr, scope)
            for node, label, (_, span, expr, scope) in zip(nodes, labels, found)
        ]


def run_program(text: str, variables=None, limits: Limits = Limits(), seed: int = 0, run: int | None = None) -> ProgramRun:
    if is_python(text):
        if variables:
            raise ProgramError("variables are for the course shorthand; in Python write the leaves in the program, as in a = Value(2.0)", WHOLE_PROGRAM)
        result = run_python(text, limits, seed, run)
        return ProgramRun(result.output, result.runs, result.run, result.printed, result)
    if run is not None:
        raise ProgramError(f"run {run} does not exist: the program calls backward() never (runs are numbered from 0)", WHOLE_PROGRAM)
    marks = []
    output = evaluate(parse(text, limits), variables, marks)
    return ProgramRun(output, shorthand=ShorthandOrigins(text, marks))


class Nowhere:
    """The origin of every node of a graph built without program text."""

    @staticmethod
    def origin(node):
        return None, None, "", []


NOWHERE = Nowhere()


class ShorthandOrigins:
    """Where each node of a shorthand program came from, from evaluate()'s marks."""

    def __init__(self, text: str, marks: list):
        self.text = text
        self.marks = marks
        self.serials = [mark[0] for mark in marks]
        self.line_starts = [0] + [match.end() for match in re.finditer("\n", text)]

    def origin(self, node):
        """As PythonRun.origin: (None, span, expr, scope); a shorthand name is the node's own label."""
        i = bisect.bisect_left(self.serials, node._serial)
        if i == len(self.marks):
            return None, None, "", []
        start, end = _balanced(self.text, self.marks[i][1], self.marks[i][2])
        written = self.text[start:end]
        line, column = self._place(start)
        if "\n" in written:
            span = (line, column) + self._place(end)
        else:
            span = (line, column, line, column + end - start)
        return None, span, _shorten(written), []

    def _place(self, offset):
        line = bisect.bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1


_EMPTY_CALL = re.compile(r"[ \t]*\(\)")


def _balanced(text, start, end):
    """Widen [start, end) over the parentheses its operands were written in: `(a + b) * c` is
    found as `a + b) * c`, `exp(a)` as `exp(a`, `a.tanh()` as `a.tanh`."""
    written = text[start:end]
    empty_call = "." in written and _EMPTY_CALL.match(text, end)
    if empty_call:
        end = empty_call.end()
        written = text[start:end]
    if "(" not in written and ")" not in written:
        return start, end
    depth = lowest = 0
    for char in written:
        if char == "(" or char == ")":
            depth += 1 if char == "(" else -1
            lowest = min(lowest, depth)
    for _ in range(-lowest):  # a ')' closes a '(' written before start
        preceding = text.rfind("(", 0, start)
        if preceding < 0:
            break
        start = preceding
    for _ in range(depth - lowest):  # a '(' is closed after end
        following = text.find(")", end)
        if following < 0:
            break
        end = following + 1
    return start, end


def _shorten(text, longest=40):
    text = " ".join(text.split())
    return text if len(text) <= longest else text[: longest - 1] + "…"


def distinct_labels(labels: list) -> list:
    """Repeated labels become x, x′, x″, … in order, so every node reads differently."""
    seen = {}
    out = []
    for label in labels:
        if label is None:
            out.append(None)
            continue
        count = seen.get(label, 0)
        seen[label] = count + 1
        out.append(label + (PRIMES[count] if count < len(PRIMES) else f"⁽{str(count).translate(SUPERSCRIPT)}⁾"))
    return out
