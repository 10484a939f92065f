"""Run a Python program for micrograd: parse, compile, run, and keep what the response needs
(the output Value as it was at the chosen backward() call, the loss curve, what it printed,
and where each Value came from)."""

import ast
import math
from functools import lru_cache
from operator import attrgetter

from ..errors import ProgramError
from ..limits import Limits
from ..syntax import NO_ORIGIN, WHOLE_PROGRAM
from ..value import Value
from . import builtins as B
from .calls import assigned_names
from .interpreter import Compiler
from .objects import Frame
from .observe import NodeProblem, as_engine_graph, node_fields, observe
from .parse import parse_python
from .prelude import NAMES as NN_NAMES
from .prelude import NN_SOURCE
from .snapshots import NO_RUN, UNLOADABLE, Taker, live_names, load
from .state import ReplayDone, State


class PythonRun:
    def __init__(self, output: Value | None, state: State):
        self._output = output  # None for the program's own value class: `output` makes its Values when asked
        self.runs = state.runs  # [(line, data)] per backward() call
        self.run = state.snapshot[2] if state.snapshot else state.observed_run
        # valuegraph's Value: how many of the shown graph's nodes (the output aside) held a grad other than 0 when
        # the call began
        self.grads_carried = state.snapshot[3] if state.snapshot else None
        # The program's own value class, observed (see observe.py), or None: its nodes with the
        # learner's grads, and the walk its backward() took; `output` is then that graph as Values.
        self.graph = state.observed
        self.printed = state.printed()
        self.serials = [mark[0] for mark in state.marks] + [
            math.inf
        ]  # the last Value each mark made, as ProgramRun.origin_parts reads them
        self.made = MadeByMarks(state.marks)
        self._names = state.name_labels
        self.replayed_from = 0  # a replay from a snapshot: the backward() calls that came before it

    @property
    def output(self) -> Value | None:
        """The Value to show. The graph of the program's own value class is made into Values only when
        asked: the server's answer reads the observed graph itself (app.service.own_class_graph)."""
        if self._output is None and self.graph is not None:
            self._output = as_engine_graph(self.graph)
        return self._output

    def names(self, nodes):
        """The name each Value was first assigned to, or None."""
        return map(self._names.get, map(attrgetter("_serial"), nodes))


class MadeByMarks:
    """made[i]: (extent (line, column, end_line, end_column) or None, expr, scope tuple) of mark i,
    and NO_ORIGIN one past the last mark, as ProgramRun.origin_parts reads them. Worked out
    when asked: a run's marks are mostly of Values that the graph shown does not reach."""

    def __init__(self, marks):
        self._marks = marks

    def __getitem__(self, i):
        marks = self._marks
        return marks[i][1:] if i < len(marks) else NO_ORIGIN


BUILTINS = B.builtin_names()  # stateless: shared by every run (random is per run: it holds the seed)
MATH = B.math_module()
OS = B.os_module()


@lru_cache(maxsize=1)
def _prelude():
    return parse_python(NN_SOURCE)  # valuegraph's own text, parsed once


def run_python(
    text: str,
    limits: Limits = Limits(),
    seed: int = 0,
    run: int | None = None,
    files: dict | None = None,
    progress=None,
    snapshots: Taker | None = None,
    shows_graph: bool = True,
) -> PythonRun:
    """files: {name: text} the program may open() and os.path.exists() (read only).
    progress(state), if given: see State; called first once the program's own work starts.
    snapshots: a job's snapshots.Taker, offered the program at each pass of a top-level loop.
    shows_graph: false for a job, which only reports: no backward() call's graph is kept (the
    PythonRun's output is None)."""
    state, program, frame, tree = _prepared(text, limits, seed, run, files, shows_graph)
    if snapshots is not None:
        snapshots.live = live_names(tree)
        state.snapshots = snapshots
    if progress is not None:  # from here on: the prelude's own prints and steps are not the program's
        state.progress = progress
        progress(state)
    _run(state, program, frame)
    return PythonRun(_output(state, run) if shows_graph else None, state)


def replay_python(
    text: str,
    limits: Limits,
    seed: int,
    run: int,
    files: dict | None,
    runs: list,
    printed: list,
    snapshot: bytes | None = None,
) -> PythonRun:
    """run_python(..., run=run) for a program whose whole run is known (a finished job's `runs` and
    `printed`): the same answer, but the program only runs from the snapshot given (taken by a
    snapshots.Taker in that run, at or before the run wanted), or from its start, to the first pass
    of a top-level loop after the wanted run."""
    state, program, frame, _ = _prepared(text, limits, seed, run, files)
    if run >= len(runs):
        _no_such_run(run, len(runs))
    start, replayed_from = 0, 0
    if snapshot is not None:
        try:
            load(state, snapshot, frame)
            if len(state.runs) > run:
                raise ValueError("a snapshot taken after the run wanted")
            start, replayed_from = state.resume[0], len(state.runs)
        except UNLOADABLE:  # not a snapshot of this program before that run, as this version compiles it
            # (or one taken after it): from the start
            state, program, frame, _ = _prepared(text, limits, seed, run, files)
    state.stop_after = run
    try:
        _run(state, program, frame, start)
    except ReplayDone:
        pass
    result = PythonRun(_output(state, run), state)
    result.runs = [tuple(point) for point in runs]
    result.printed = list(printed)
    result.replayed_from = replayed_from
    return result


def _prepared(text: str, limits: Limits, seed: int, run, files, shows_graph: bool = True):
    """(state, the program compiled, its top-level frame, its syntax tree) of a run about to start, keeping the graph
    of backward() call `run` (None: the last), or of none without shows_graph."""
    check_files(files or {}, limits)
    tree, source = parse_python(text, limits)
    if not tree.body:
        raise ProgramError(
            "the program is empty: write some micrograd code, such as x = Value(2.0); y = x * x", WHOLE_PROGRAM
        )
    if run is not None and run < 0:
        raise ProgramError(f"run must be 0 or more, not {run}", WHOLE_PROGRAM)
    state = State(limits, seed, run if shows_graph else NO_RUN, files)
    state.source = source
    math_module, random_module = MATH, B.random_module(state.rng)
    shared = dict(
        BUILTINS,
        **{"module math": math_module, "module random": random_module, "module os": OS},
        **{"module os.path": OS.attributes["path"]},
    )

    names = dict(shared, Value=B.VALUE_CLASS, math=math_module, random=random_module)
    names["micrograd Value"] = B.VALUE_CLASS
    frame = Frame({}, None)
    state.snapshot_names, state.snapshot_frames = names, {"program": frame}
    if any(name in text for name in NN_NAMES):  # micrograd's nn module, only for programs that name it
        prelude_names = dict(shared, Value=B.VALUE_CLASS, random=random_module, math=math_module)
        nn = Frame({}, None)
        state.steps = -(1 << 62)  # defining the classes is not the program's work: not counted
        tree_of_nn, source_of_nn = _prelude()
        Compiler(source_of_nn, state, prelude_names, prelude=True).block(tree_of_nn.body)(nn)
        state.steps = 0
        for name in NN_NAMES:
            names[name] = names["micrograd " + name] = nn.vars[name]
        state.snapshot_frames["prelude"] = nn
    compiler = Compiler(source, state, names)
    compiler.top_level_loops = {id(node): i for i, node in enumerate(tree.body) if type(node) is ast.For}
    compiler.assigned = assigned_names(tree)
    return state, compiler.program(tree.body), frame, tree


def _run(state: State, program, frame: Frame, start: int = 0) -> None:
    try:
        program(frame, start)
    except RecursionError:
        raise ProgramError("the program nests or calls too deeply to run", WHOLE_PROGRAM) from None
    except BaseException as error:
        if not isinstance(error, (Exception, ReplayDone)):  # stopped from outside (the time budget): on every stack
            state.stop()
        raise
    finally:
        try:
            state.close()
        except BaseException:  # the budget's one stop landed in the closing: close the rest, then go on stopping
            state.close()
            raise


def check_files(files: dict, limits: Limits) -> None:
    """The files given with a program: names and texts, their UTF-8 bytes within the limit."""
    size = 0
    for name, content in files.items():
        if type(name) is not str or type(content) is not str:
            raise ProgramError(
                "files maps file names to their text, as in {'input.txt': 'emma\\nolivia'}", WHOLE_PROGRAM
            )
        size += len(name.encode("utf-8", "surrogatepass")) + len(content.encode("utf-8", "surrogatepass"))
    if size > limits.max_files_bytes:
        raise ProgramError(
            f"the files given are {size:,} bytes; the limit is {limits.max_files_bytes:,} (give a shorter input.txt)",
            WHOLE_PROGRAM,
        )


def _no_such_run(run: int, runs: int):
    calls = f"calls backward() {runs} time{'s' if runs != 1 else ''}" if runs else "never calls backward()"
    raise ProgramError(f"run {run} does not exist: the program {calls} (runs are numbered from 0)", WHOLE_PROGRAM)


def _output(state: State, run):
    """The Value to show: the one the chosen backward() call started from, as it was then;
    without a backward() call, the last Value a statement of the program computed. None for the
    graph of the program's own value class (state.observed): PythonRun.output makes it when asked."""
    if run is not None and run >= len(state.runs):
        _no_such_run(run, len(state.runs))
    if state.observed is not None:
        return None
    if state.snapshot is not None:
        order, data, _, _ = state.snapshot
        for node, value in zip(order, data):  # undo later updates such as p.data += -0.1 * p.grad
            node.data = value
        return order[-1]
    if state.last_value is None and state.last_instance is not None and node_fields(state.last_instance):
        try:  # no backward() yet: the graph with the grads as made
            state.observed = observe(state.last_instance, None, state.limits)
        except NodeProblem as problem:
            raise state.made_at(problem) from None
        except B.RunError as error:
            raise ProgramError(str(error), WHOLE_PROGRAM) from None
        return None
    if state.last_value is None and state.marks:  # Values made, but none a statement's result (in a list, say)
        raise ProgramError(
            "no Value to show: no statement's result is a Value and the program calls no backward(); end with one "
            "that is, as in L = xs[0] + xs[1], or call L.backward()",
            WHOLE_PROGRAM,
        )
    if state.last_value is None:
        raise ProgramError(
            "the program makes no Value to show: start from Value(...), as in x = Value(2.0); y = x * x; y.backward()",
            WHOLE_PROGRAM,
        )
    return state.last_value
