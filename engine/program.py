"""A program's text to the Value to show: the course shorthand, or Python written for micrograd.

How the two are told apart: a program is Python when it calls `Value(...)`, `MLP(...)`,
`Neuron(...)`, `Layer(...)` or `print(...)`, or has a line starting with `import`, `from`,
`def`, `class`, `for`, `while` or `if`. Everything else is the shorthand, exactly as before
(`a = 2` makes a leaf labelled a)."""

import bisect
import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate, repeat
from typing import NamedTuple

from .errors import ProgramError
from .evaluate import evaluate
from .limits import Limits
from .parser import parse
from .python import PythonRun, replay_python, run_python
from .syntax import NO_ORIGIN, WHOLE_PROGRAM
from .trace import format_number
from .value import Value

PYTHON_MARKERS = r"\b(?:Value|MLP|Neuron|Layer|print)\s*\(|^[ \t]*(?:import|from|def|class|for|while|if)\b"
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
    shown: Value | None  # the Value to show, where `python` does not make it (see output)
    runs: list = field(default_factory=list)  # (line, output data) per backward() call
    run: int | None = None  # which of them `output` is from
    printed: list = field(default_factory=list)
    python: PythonRun | None = None
    shorthand: "ShorthandOrigins | None" = None

    @property
    def output(self) -> Value | None:
        """The Value to show: a Python program's is its PythonRun's, made only when asked for the graph of
        the program's own value class (the server's answer reads that graph as observed)."""
        return self.python.output if self.python is not None else self.shown

    def origins(self, nodes) -> list:
        """NodeOrigin per node (nodes in creation order, as a Trace holds them)."""
        labels, made = self.origin_parts(nodes)
        return [NodeOrigin(label, span, expr, list(scope)) for label, (span, expr, scope) in zip(labels, made)]

    def origin_parts(self, nodes) -> tuple:
        """origins() as two lists, what app.serialize builds the wire records from without a
        NodeOrigin per node: each node's label, and the (span, expr, scope) of the code that made it
        (scope a tuple).

        A node was made by the first mark at or after its serial (the operation that made it, or
        the one that made a constant on the way). Marks and nodes are both in creation order, so
        one pass finds them, and a mark's span, text and scope are worked out once however many
        nodes it made (its nodes share the tuple). The marks are read through `where` (a
        PythonRun, ShorthandOrigins or NOWHERE): `serials`, the last serial each mark made, then
        math.inf; `made[i]`, mark i's (span, expr, scope), and at one past the last mark
        NO_ORIGIN; and `names(nodes)`, the name each node was first assigned to, or None."""
        own = self.python.graph if self.python is not None else None
        if own is not None:
            return _own_class_origins(nodes, own["nodes"])
        where = self.python or self.shorthand or NOWHERE
        marks = where.serials  # the last serial each mark made, then math.inf: past the last mark, no origin
        of_mark = where.made
        labels, made = [], []
        i, origin = 0, None
        for node, name in zip(nodes, where.names(nodes)):
            serial = node._serial
            if marks[i] < serial:  # made by a later mark: mostly the next one, else a bisect finds it
                i += 1
                if marks[i] < serial:
                    i = bisect.bisect_left(marks, serial, i)
                origin = of_mark[i]
            elif origin is None:
                origin = of_mark[i]
            label = node.label or name
            if (
                label is None and node.op is None
            ):  # a constant that an operation made from a plain number shows its value
                made.append((origin[0], format_number(node.data), origin[2]))
            else:
                made.append(origin)
            labels.append(label)
        if where is NOWHERE:  # no code made these nodes: each is called by its operation on its inputs' names
            made = composed_names(nodes, labels, made)
        return distinct_labels(labels), made


def _own_class_origins(nodes, observed) -> tuple:
    """origin_parts() for the graph of a program's own value class: `nodes` are its Values,
    made one per observed node in the same order, so each takes its observed node's origin."""
    labels, made = [], []
    for node, seen in zip(nodes, observed):
        origin = seen["origin"]
        labels.append(node.label)
        if node.label is None and not seen["children"]:  # a constant made from a plain number shows its value
            origin = (origin[0], format_number(node.data), origin[2])
        made.append(origin)
    return distinct_labels(labels), made


def run_program(
    text: str,
    variables=None,
    limits: Limits = Limits(),
    seed: int = 0,
    run: int | None = None,
    files: dict | None = None,
    progress=None,
    snapshots=None,
    shows_graph: bool = True,
) -> ProgramRun:
    """files: {name: text} a Python program may read with open() (the course shorthand reads none).
    progress(state), snapshots and shows_graph, for Python programs: see engine.python.run_python
    (a job reports with them)."""
    if is_python(text):
        if variables:
            raise ProgramError(
                "variables are for the course shorthand; in Python write the leaves in the program, as in a = "
                "Value(2.0)",
                WHOLE_PROGRAM,
            )
        result = run_python(text, limits, seed, run, files, progress, snapshots, shows_graph)
        return ProgramRun(None, result.runs, result.run, result.printed, result)
    if files:
        raise ProgramError(
            "files are read by Python programs, with open('input.txt'); this is the course shorthand", WHOLE_PROGRAM
        )
    if run is not None:
        raise ProgramError(
            f"run {run} does not exist: the course shorthand makes no backward() calls to choose from; leave run out",
            WHOLE_PROGRAM,
        )
    marks = []
    output = evaluate(parse(text, limits), variables, marks)
    return ProgramRun(output, shorthand=ShorthandOrigins(text, marks))


def replay_program(
    text: str, limits: Limits, seed: int, run: int, files: dict | None, runs: list, printed: list, snapshot=None
) -> ProgramRun:
    """run_program(text, None, limits, seed, run, files) for a Python program whose whole run is known
    (its `runs` and `printed`), replayed from a snapshot of it, or from its start, only as far as
    that run: see engine.python.replay_python."""
    result = replay_python(text, limits, seed, run, files, runs, printed, snapshot)
    return ProgramRun(None, result.runs, result.run, result.printed, result)


class Nowhere:
    """The origin of every node of a graph built without program text."""

    serials = [math.inf]
    made = [NO_ORIGIN]

    @staticmethod
    def names(nodes):
        return repeat(None)


NOWHERE = Nowhere()


class ShorthandOrigins:
    """Where each node of a shorthand program came from, from evaluate()'s marks
    (serials, made and names as ProgramRun.origin_parts reads them). A shorthand program
    has no calls: every scope is empty."""

    def __init__(self, text: str, marks: list):
        self.text = text
        self.marks = marks
        self.serials = [mark[0] for mark in marks] + [math.inf]  # as ProgramRun.origin_parts reads them
        self.line_starts = [0] + [match.end() for match in re.finditer("\n", text)]
        # Looked at once for the whole text, so that most marks need no closer look:
        self.empty_calls = "()" in text  # `a.tanh()` is marked as `a.tanh`: without any `()`, no mark is
        self.single_spaced = (
            "  " not in text and text.replace("\n", " ").isprintable()
        )  # no whitespace but " " and "\n"

    @cached_property
    def made(self) -> list:
        """(span, expr, scope) of each mark, then NO_ORIGIN: its text, widened over its
        parentheses. One pass, in mark order, so the line is found by moving on from the last
        mark's (a bisect only where a mark starts on another line). A mark is never read whole:
        the partial sums of a line of terms are marks as long as the line so far."""
        text, line_starts = self.text, self.line_starts
        single_spaced, empty_calls = self.single_spaced, self.empty_calls
        made = []
        line, line_start, next_line_start = 0, 1, 0  # no line yet: the first mark looks its line up
        for _, start, end in self.marks:
            written = text[start:end] if end - start <= NAME_LENGTH else None  # most marks: a few characters
            if written is None or "(" in written or ")" in written or empty_calls and "." in written:
                start, end = self._balanced(start, end)
                written = text[start:end] if end - start <= NAME_LENGTH else None
            if not line_start <= start < next_line_start:
                line = bisect.bisect_right(line_starts, start)
                line_start = line_starts[line - 1]
                next_line_start = line_starts[line] if line < len(line_starts) else math.inf
            column = start - line_start + 1
            if end >= next_line_start:  # its text holds the line's "\n"
                made.append(((line, column) + self._place(end), self._name(start, end), ()))
                continue
            if written is None:
                name = self._name(start, end)
            elif single_spaced and written[:1] != " " != written[-1:]:
                name = written  # _shorten would change nothing
            else:
                name = _shorten(written)
            made.append(((line, column, line, column + end - start), name, ()))
        made.append(NO_ORIGIN)
        return made

    names = staticmethod(Nowhere.names)  # None for every node: a shorthand name is the node's own label

    def _balanced(self, start, end):
        """Widen [start, end) over the parentheses its operands were written in: `(a + b) * c` is
        found as `a + b) * c`, `exp(a)` as `exp(a`, `a.tanh()` as `a.tanh`."""
        text = self.text
        empty_call = self.empty_calls and _EMPTY_CALL.match(text, end)
        if empty_call and text.find(".", start, end) >= 0:
            end = empty_call.end()
        if end - start <= SHORT_MARK:  # most marks: a walk over a few characters
            depth = lowest = 0
            for char in text[start:end]:
                if char == "(" or char == ")":
                    depth += 1 if char == "(" else -1
                    lowest = min(lowest, depth)
        else:
            # The depth after each parenthesis of the text, found once: a long mark's depth and lowest
            # point are then look-ups, not a walk over its characters (the sums of a long line of terms
            # are marks as long as the line: walked, 4,000 terms took 7 s).
            positions, depths = self._parens
            first, stop = bisect.bisect_left(positions, start), bisect.bisect_left(positions, end)
            if first == stop:
                return start, end
            before = depths[first - 1] if first else 0
            depth = depths[stop - 1] - before
            lowest = min(0, self._lowest(first, stop) - before)
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

    @cached_property
    def _parens(self):
        """(where each parenthesis of the text is, the depth after it)."""
        positions = [match.start() for match in re.finditer("[()]", self.text)]
        return positions, list(accumulate(1 if self.text[at] == "(" else -1 for at in positions))

    def _lowest(self, i, j):
        """The lowest of the parentheses' depths from the i-th to before the j-th (i < j), from a sparse table."""
        k = (j - i).bit_length() - 1
        return min(self._lowest_table[k][i], self._lowest_table[k][j - (1 << k)])

    @cached_property
    def _lowest_table(self):
        """Row k: the lowest of each 2**k depths in a row (made only for a text with a long mark)."""
        table, width = [self._parens[1]], 1
        while 2 * width <= len(table[0]):
            row = table[-1]
            table.append(list(map(min, row[: len(row) - width], row[width:])))
            width *= 2
        return table

    def _name(self, start, end):
        """_shorten(text[start:end]), from the text with its blank runs made one space (found once):
        at most NAME_LENGTH + 2 of its characters are read, however long the span and its blanks."""
        blanked, run_starts, run_ends, taken_out = self._blanked
        at, to = _blanked_at(start, run_starts, run_ends, taken_out), _blanked_at(end, run_starts, run_ends, taken_out)
        if to - at > NAME_LENGTH + 2:  # more than NAME_LENGTH characters, whatever its ends' blanks
            return blanked[at : at + NAME_LENGTH + 2].lstrip(" ")[: NAME_LENGTH - 1] + "…"
        return _shorten(blanked[at:to])

    @cached_property
    def _blanked(self):
        """(the text with each run of blanks one space, where each run starts, ends, and how many
        characters the runs before the i-th took out)."""
        run_starts, run_ends, taken_out = [], [], [0]
        for run in re.finditer(r"\s+", self.text):
            run_starts.append(run.start())
            run_ends.append(run.end())
            taken_out.append(taken_out[-1] + run.end() - run.start() - 1)
        return re.sub(r"\s+", " ", self.text), run_starts, run_ends, taken_out

    def _place(self, offset):
        line = bisect.bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1


_EMPTY_CALL = re.compile(r"[ \t]*\(\)")
NAME_LENGTH = 40  # characters of a node's code its name shows (_shorten)
SHORT_MARK = 64  # characters of a mark read one by one; a longer one is read from tables of the whole text


# A composed name is kept to this many characters before its parents use it. Whole, a node used
# twice by each next one (x = x*w + x) doubles the name at every step: 60 nodes would spell 2**30
# characters. Only the first 40 are shown (_shorten), and a name's start is its first operand's.
COMPOSED_NAME_KEPT = 120


def composed_names(nodes, labels, made) -> list:
    """(span, expr, scope) per node of a graph built without program text, its expr the node's
    operation written on its inputs' names (`a*b`, `tanh(a*b+c)`, `(a+b)**2`), so that a node
    nobody labelled still has a name everywhere the page writes one. Nodes in creation order:
    a node's inputs are named before it."""
    name_of = {}  # node -> (its name, the operation its name ends in at the top, or None)
    composed = []
    for node, label, origin in zip(nodes, labels, made):
        if label is not None:
            name_of[node] = (label, None)
        elif node.op is None:  # a constant, called by its value
            name_of[node] = (origin[1], "-" if origin[1].startswith("-") else None)
        else:
            written, top = _written(node, [name_of[child] for child in node._children])
            if len(written) > COMPOSED_NAME_KEPT:  # only its start is ever shown
                written = written[:COMPOSED_NAME_KEPT] + "…"
            origin = (origin[0], _shorten(written), origin[2])
            name_of[node] = (written, top)
        composed.append(origin)
    return composed


_SUMS = ("+", "-")
_BELOW_POWER = ("+", "-", "*", "**")


def _written(node, inputs) -> tuple:
    """A node's operation on its inputs, each a (name, top operation) pair, parenthesised where
    the operation binds tighter than the input's own top one; and the result's top operation.
    (+ and * are most nodes of a large graph: written without a call per input.)"""
    op = node.op
    if op == "+":
        return "+".join([name for name, _ in inputs]), "+"
    if op == "*":
        return "*".join([f"({name})" if top in _SUMS else name for name, top in inputs]), "*"
    if op == "**":
        name, top = inputs[0]
        return f"{f'({name})' if top in _BELOW_POWER else name}**{format_number(node.exponent)}", "**"
    return f"{op}({inputs[0][0]})", None


def _shorten(text, longest=NAME_LENGTH):
    text = " ".join(text.split())
    return text if len(text) <= longest else text[: longest - 1] + "…"


def _blanked_at(offset, run_starts, run_ends, taken_out):
    """Where a text's offset falls once each of its blank runs is one space (ShorthandOrigins._blanked)."""
    run = bisect.bisect_right(run_starts, offset) - 1
    if run >= 0 and offset < run_ends[run]:  # inside a run: at its space, or just after it
        return run_starts[run] - taken_out[run] + (offset > run_starts[run])
    return offset - taken_out[run + 1]


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
