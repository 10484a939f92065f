"""Snapshots of a running program, so that the graph of any backward() call of a long run (a job)
opens without running the program again from its start.

Python's own call stack cannot be saved, but at the start of a pass of a `for` loop at the
program's top level nothing is running except that loop: the program's state is its globals,
the loop's iterator and where it is, the random generator, and the run's records (runs so far,
printed text, the places Values were made). A job offers the program to a Taker at each such
pass (State.at_pass); every `every` backward() calls the Taker pickles that state and hands the
bytes on. A replay (run.replay_python) compiles the program again, loads the nearest snapshot
at or before the wanted run, and continues from that pass.

What is pickled: only the globals still read after the pass starts (live_names: a name the rest
of the program assigns before it reads it is left out, so the last step's graph of a training
loop is not saved again and again); the program's functions by where their code is written
(the replay's compile has the same code there); valuegraph's built-ins and modules by their
names. Anything else that cannot be saved (a generator, a built-in's bound method) ends the
run's snapshots: its graphs are replayed from the start, as before."""

import ast
import importlib
import io
import pickle
import zlib

from ..value import Value, next_serial, serials_from
from .objects import (
    BoundMethod,
    Builtin,
    BuiltinType,
    Class,
    Frame,
    Function,
    Instance,
    Module,
    ProgramFile,
    ProgramSet,
)

# Built-ins that see every global by name: a program using one keeps all its globals in a snapshot.
SEES_ALL_NAMES = frozenset({"globals", "vars", "locals", "dir", "eval", "exec"})
PLAIN = (int, float, bool, str, type(None))  # saved as they are, never by name
FORMAT = 4  # bumped when the pickled payload changes shape
NO_RUN = -1  # State.wanted_run of a job, which keeps no graph


# What loading a snapshot that is not one of this program (or of this version's compile) may raise
UNLOADABLE = (pickle.UnpicklingError, zlib.error, EOFError, ValueError, TypeError, KeyError, AttributeError, IndexError)


class Unsnapshottable(Exception):
    """The program holds something a snapshot cannot save, or the snapshot is past its limit."""


class Taker:
    """Takes a job's snapshots: at a top-level pass once `every` backward() calls have run since
    the last one, calls deliver(run, data, dropped): `run` is how many backward() calls came
    before (the snapshot serves the graphs of runs `run` and later), `data` its bytes (None when
    it is not kept), and `dropped` the runs of earlier snapshots to forget. The kept snapshots'
    bytes stay within `keep_bytes`: when the next would pass it, the spacing doubles and only
    the first snapshot at or after each multiple of it stays, so the kept ones stay evenly spread
    over the whole run."""

    def __init__(self, every: int, keep_bytes: int, deliver):
        self.every = every
        self.keep_bytes = keep_bytes
        self.deliver = deliver
        self.next_at = every
        self.kept = {}  # run -> size in bytes
        self.live = None  # statement position -> names live at its passes (live_names), set by run_python
        self.stopped = None  # why snapshots stopped, or None

    def offer(self, state, position, frame, iterator, index):
        runs = len(state.runs)
        if self.stopped is not None or runs < self.next_at:
            return
        try:
            data = dump(state, position, frame, iterator, index, self.live[position])
        except (Unsnapshottable, pickle.PicklingError, TypeError, AttributeError, RecursionError) as error:
            self.stopped = f"{type(error).__name__}: {error}"
            return
        if len(data) > self.keep_bytes:
            self.stopped = f"one snapshot is {len(data):,} bytes, more than the {self.keep_bytes:,} kept"
            return
        dropped = []
        while sum(self.kept.values()) + len(data) > self.keep_bytes:
            self.every *= 2
            spaced = {}
            for run in sorted(self.kept):
                if run >= self.every and run // self.every not in map(self._slot, spaced):
                    spaced[run] = self.kept[run]
            dropped.extend(run for run in self.kept if run not in spaced)
            self.kept = spaced
        self.next_at = (runs // self.every + 1) * self.every
        if self._slot(runs) in map(self._slot, self.kept):  # the spacing grew past it: an earlier one serves
            data = None
        else:
            self.kept[runs] = len(data)
        self.deliver(runs, data, dropped)

    def _slot(self, run):
        return run // self.every


def live_names(tree: ast.Module) -> dict:
    """{statement index of each top-level `for`: the names live at the start of its passes, or None
    for all}. A name is live there when some path from there reads it before assigning it: the
    rest of the loop's body, its later passes and the program after the loop. Reads inside any
    function, lambda or class count everywhere (they run when called), as do names a loop with
    break or continue, a try or any statement not analysed here touches."""
    if any(type(node) is ast.Name and node.id in SEES_ALL_NAMES for node in ast.walk(tree)):
        return {i: None for i, node in enumerate(tree.body) if type(node) is ast.For}
    always = set()
    for node in ast.walk(tree):
        if type(node) in (ast.FunctionDef, ast.Lambda, ast.ClassDef):
            always |= _reads(node)
    result = {}
    after = set()
    for i in range(len(tree.body) - 1, -1, -1):
        node = tree.body[i]
        if type(node) is ast.For:
            result[i] = frozenset(_loop_head(node, after) | always)
        after = _live_in_statement(node, after)
    return result


def _reads(node) -> set:
    names = set()
    for inner in ast.walk(node):
        if type(inner) is ast.Name and type(inner.ctx) is not ast.Store:
            names.add(inner.id)
        elif type(inner) is ast.AugAssign and type(inner.target) is ast.Name:
            names.add(inner.target.id)
    return names


def _assigned(target) -> set:
    """Names a store to `target` surely binds (a name, or names in a tuple or list)."""
    if type(target) is ast.Name:
        return {target.id}
    if type(target) in (ast.Tuple, ast.List):
        names = set()
        for element in target.elts:
            names |= _assigned(element)
        return names
    return set()


def _live_in(statements, out: set) -> set:
    live = set(out)
    for statement in reversed(statements):
        live = _live_in_statement(statement, live)
    return live


def _breaks(loop) -> bool:
    """Whether the loop's own body (not an inner loop's or function's) has break or continue."""
    pending = list(loop.body) + list(loop.orelse)
    while pending:
        node = pending.pop()
        if type(node) in (ast.Break, ast.Continue):
            return True
        if type(node) not in (ast.For, ast.While, ast.FunctionDef, ast.Lambda, ast.ClassDef):
            pending.extend(ast.iter_child_nodes(node))
    return False


def _loop_head(loop, out: set) -> set:
    """Names live at the start of a pass of a `for` loop, before it takes its next item."""
    if _breaks(loop):
        return _reads(loop) | out
    exit_live = _live_in(loop.orelse, out)
    targets = _assigned(loop.target)
    target_reads = _reads(loop.target)
    head = set(exit_live)
    while True:
        grown = exit_live | target_reads | (_live_in(loop.body, head) - targets)
        if grown == head:
            return head
        head = grown


def _live_in_statement(node, out: set) -> set:
    kind = type(node)
    if kind is ast.Assign:
        killed = set().union(*map(_assigned, node.targets))
        return (out - killed) | _reads(node)
    if kind is ast.AnnAssign and node.value is not None:
        return (out - _assigned(node.target)) | _reads(node)
    if kind in (ast.Import, ast.ImportFrom):
        bound = {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        return out - bound
    if kind in (ast.FunctionDef, ast.ClassDef):
        return (out - {node.name}) | _reads(node)
    if kind in (ast.Expr, ast.AugAssign, ast.Pass, ast.Assert, ast.Delete):
        return out | _reads(node)
    if kind is ast.If:
        return _reads(node.test) | _live_in(node.body, out) | _live_in(node.orelse, out)
    if kind is ast.For:
        return _reads(node.iter) | _loop_head(node, out)
    if kind is ast.While and not _breaks(node):
        head = _reads(node.test) | _live_in(node.orelse, out)
        while True:
            grown = head | _live_in(node.body, head)
            if grown == head:
                return head
            head = grown
    if kind is ast.With:
        bound = set().union(*(_assigned(item.optional_vars) for item in node.items if item.optional_vars))
        return set().union(*(_reads(item.context_expr) for item in node.items)) | (_live_in(node.body, out) - bound)
    return out | _reads(node)


# ---- pickling ----

# The classes and functions a snapshot's pickle may name (the program's objects, iterators' rebuilders).
ALLOWED = {
    ("engine.value", "Value"),
    *(("engine.python.objects", cls.__name__) for cls in (Function, Class, Instance, ProgramSet, ProgramFile, Frame)),
    ("engine.python.objects", "BoundMethod"),
    ("engine.python.objects", "Super"),
    *(("builtins", name) for name in ("iter", "enumerate", "zip", "reversed", "range", "getattr", "object")),
    ("copyreg", "_reconstructor"),
}
ALLOWED_OBJECTS = {id(getattr(importlib.import_module(module), name)) for module, name in ALLOWED}


def _shared(state) -> list:
    """[(persistent name, object)] for what the replay's compile makes anew: compiled function bodies,
    built-ins, modules and their members, the program's and the prelude's top-level frames."""
    shared = [(("code", key), body) for key, body in state.code.items()]
    for name, value in state.snapshot_names.items():
        if type(value) not in PLAIN:
            shared.append((("name", name), value))
        if type(value) is Module:
            shared.extend((("member", name, attribute), member) for attribute, member in value.attributes.items())
    shared.extend((("frame", name), frame) for name, frame in state.snapshot_frames.items())
    return shared


class _Pickler(pickle.Pickler):
    def __init__(self, file, shared):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.shared = shared
        self.serials = set()  # of the Values saved: which places (marks) and names the replay needs

    def reducer_override(self, obj):
        if type(obj) is Frame:  # without its walks: passes of loops that have ended (see calls.Walk)
            return Frame, (None, None), (None, {"vars": obj.vars, "parent": obj.parent})
        return NotImplemented

    def persistent_id(self, obj):
        kind = type(obj)
        if kind is Value:
            self.serials.add(obj._serial)
            return None
        name = self.shared.get(id(obj))
        if name is not None:
            return name
        if id(obj) in ALLOWED_OBJECTS:
            return None
        if kind in (Builtin, BuiltinType, Module) or callable(obj) and kind not in (Class, Function, BoundMethod):
            raise Unsnapshottable(f"the program holds {obj!r}, which a snapshot cannot save")
        return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, shared):
        super().__init__(file)
        self.shared = shared

    def persistent_load(self, name):
        try:
            return self.shared[name]
        except KeyError:
            raise pickle.UnpicklingError(f"the snapshot names {name!r}, which this compile does not have") from None

    def find_class(self, module, name):
        if (module, name) not in ALLOWED:
            raise pickle.UnpicklingError(f"a snapshot holds no {module}.{name}")
        return super().find_class(module, name)


def dump(state, position, frame, iterator, index, live) -> bytes:
    """The program's state at the start of pass `index` of the top-level loop at `position`."""
    shared = {}
    for name, obj in _shared(state):
        shared.setdefault(id(obj), name)
    variables = frame.vars if live is None else {name: value for name, value in frame.vars.items() if name in live}
    buffer = io.BytesIO()
    pickler = _Pickler(buffer, shared)
    pickler.dump((variables, iterator))
    serials = pickler.serials
    marks = state.marks
    needed, i = [], 0  # the mark of a Value is the first at or after its serial
    for serial in sorted(serials):
        while i < len(marks) and marks[i][0] < serial:
            i += 1
        if i < len(marks) and (not needed or needed[-1] is not marks[i]):
            needed.append(marks[i])
    records = {
        "format": FORMAT,
        "position": position,
        "index": index,
        "rng": state.rng.getstate(),
        "serial": next_serial(),
        "instances": state.instances,
        "steps": state.steps,
        "runs": state.runs,
        "printed": "".join(state.chunks),
        "printed_characters": state.printed_characters,
        "marks": needed,
        "last_serial": state.last_serial,
        "name_labels": {serial: name for serial, name in state.name_labels.items() if serial in serials},
    }
    if state.wanted_run == NO_RUN:
        # A job keeps no graph: the places and names of Values it can no longer reach are forgotten
        # (in place: the compiled program holds them), or a long run of built-in Values would keep
        # one record per Value it ever made
        state.marks[:] = needed
        kept_labels = records["name_labels"]
        state.name_labels.clear()
        state.name_labels.update(kept_labels)
    return zlib.compress(pickle.dumps(records, protocol=pickle.HIGHEST_PROTOCOL) + buffer.getvalue(), 1)


def load(state, data: bytes, frame) -> None:
    """Puts a snapshot's state into a fresh run of the same program (same text, files and seed):
    its globals into `frame`, its records into `state`, and the pass to resume at into state.resume."""
    buffer = io.BytesIO(zlib.decompress(data))
    records = _Unpickler(buffer, {}).load()  # plain data: numbers, strings, lists, dicts, tuples
    if records.get("format") != FORMAT:
        raise pickle.UnpicklingError("a snapshot of another format")
    shared = dict(_shared(state))
    variables, iterator = _Unpickler(buffer, shared).load()
    frame.vars.update(variables)
    state.rng.setstate(records["rng"])
    serials_from(max(records["serial"], next_serial()))
    state.instances = records["instances"]
    state.steps = records["steps"]
    # In place: the compiled program holds these lists and dicts (interpreter.Compiler.recorder, store)
    state.runs[:] = records["runs"]
    state.chunks[:] = [records["printed"]] if records["printed"] else []
    state.printed_characters = records["printed_characters"]
    state.marks[:] = records["marks"]
    state.last_serial = records["last_serial"]
    state.name_labels.update(records["name_labels"])
    state.resume = (records["position"], iterator, records["index"])
