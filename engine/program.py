"""A program's text to the Value to show: the course shorthand, or Python written for micrograd.

How the two are told apart: a program is Python when it calls `Value(...)`, `MLP(...)`,
`Neuron(...)`, `Layer(...)` or `print(...)`, or has a line starting with `import`, `from`,
`def`, `class`, `for`, `while` or `if`. Everything else is the shorthand, exactly as before
(`a = 2` makes a leaf labelled a)."""

import re
from dataclasses import dataclass, field

from .errors import ProgramError
from .evaluate import evaluate
from .limits import Limits
from .parser import parse
from .python import PythonRun, run_python
from .syntax import Span
from .value import Value

PYTHON_MARKERS = r"\b(?:Value|MLP|Neuron|Layer|print)\s*\(|^[ \t]*(?:import|from|def|class|for|while|if)\b"
WHOLE_PROGRAM = Span(0, 1, 1, 0)
PRIMES = ("", "′", "″", "‴", "⁗")
SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def is_python(text: str) -> bool:
    return re.search(PYTHON_MARKERS, text, re.MULTILINE) is not None


@dataclass
class NodeOrigin:
    label: str | None
    span: tuple | None  # (line, column, end_line, end_column), 1-based, end exclusive
    expr: str
    scope: list = field(default_factory=list)


@dataclass
class ProgramRun:
    output: Value
    runs: list = field(default_factory=list)  # (line, output data) per backward() call
    run: int | None = None  # which of them `output` is from
    printed: list = field(default_factory=list)
    python: PythonRun | None = None

    def origins(self, nodes) -> list:
        """NodeOrigin per node (in the given order, creation order for distinct labels)."""
        if self.python is None:
            found = [NodeOrigin(node.label, None, "", []) for node in nodes]
        else:
            found = []
            for node in nodes:
                name, extent, expr, scope = self.python.origin(node)
                found.append(NodeOrigin(node.label or name, extent, expr, scope))
        for origin, label in zip(found, distinct_labels([o.label for o in found])):
            origin.label = label
        return found


def run_program(text: str, variables=None, limits: Limits = Limits(), seed: int = 0, run: int | None = None) -> ProgramRun:
    if is_python(text):
        if variables:
            raise ProgramError("variables are for the course shorthand; in Python write the leaves in the program, as in a = Value(2.0)", WHOLE_PROGRAM)
        result = run_python(text, limits, seed, run)
        return ProgramRun(result.output, result.runs, result.run, result.printed, result)
    if run is not None:
        raise ProgramError(f"run {run} does not exist: the program calls backward() never (runs are numbered from 0)", WHOLE_PROGRAM)
    return ProgramRun(evaluate(parse(text, limits), variables))


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
