"""What one run of a program changes besides its own objects: the statements it has run (the
one statement-limit check), the calls open, the scope a new node is made in, where each Value
came from, what it printed, its backward() calls, and the files it may read."""

import math
import random
import sys
import threading

from ..autograd import propagate, topological_order
from ..errors import ProgramError
from ..limits import Limits
from ..syntax import NO_ORIGIN, WHOLE_PROGRAM, Span
from ..value import Value
from . import builtins as B
from . import model
from .calls import Calls
from .idioms import ONE_STEP
from .objects import Function, Instance, show, type_name
from .observe import NodeProblem, node_fields, observe


class State(Calls):
    def __init__(self, limits: Limits, seed: int, wanted_run, files=None):
        self.limits = limits
        self.files = files or {}  # {name: text} given with the request: open() reads them, nothing writes
        # progress(state), or None: called as the program starts, after each backward() call and each
        # print, so a caller (a job's worker) can report steps, runs and printed text as they grow
        self.progress = None
        self.seed = seed
        self.rng = random.Random(seed)  # the same draws as CPython after random.seed(seed)
        self.steps = 0
        # Python frames one thread may hold before the program's next call moves to a fresh
        # stack (calls.py): half the recursion limit leaves the other half for that call's own nesting
        self.hop_frames = max(50, sys.getrecursionlimit() // 2)
        self.hops = 0  # fresh stacks the running call is on
        self.stacks = []  # the threads of those stacks, kept for the run (calls.FreshStack)
        # orders a stop (the time budget, from the thread the run started in) against a hop: once
        # stopped, no call moves to a fresh stack, so none is left waiting after the run is closed
        self.hopping = threading.Lock()
        self.depth = 0
        self.scope = ()
        self.call_site = None  # extent of the call expression being made (calls.py call_name)
        self.calls_made = {}  # scope depth -> the calls made in the scope instance there (Calls.call_name)
        self.entry = None  # extent of the program's call that is running micrograd's nn code
        self.entry_node = None  # and its syntax node, to place errors inside that code
        self.source = None  # the program's Source
        self.site = NO_ORIGIN  # (extent, expr, scope) of the built-in being called
        self.marks = []  # (last serial, extent, expr, scope), serials increasing
        self.last_serial = -1
        self.name_labels = {}  # serial -> the name the Value was first assigned to
        self.last_value = None  # the last Value a statement of the program computed
        self.last_instance = None  # the last instance of a program's class a statement computed
        self.runs = []  # (line, output data) per backward() call
        self.wanted_run = wanted_run  # None: the last
        self.snapshot = None  # (order, data, index, grads carried) of the chosen backward() call
        self.chunks = []
        self.printed_characters = 0
        self.instances = 0  # instances of the program's classes made so far (their serials)
        # a class of the program defines __eq__: `in` and == on lists and tuples then ask it (model.compare)
        self.own_equality = False
        self.walk = None  # while the program's own backward() runs: what it does, in order
        self.in_learner_backward = False  # the program's own backward() is running (learner_backward)
        self.in_step = False  # a node's _backward closure is running
        self.sorting = ONE_STEP  # how a backward's textbook topological sort runs (idioms.py)
        self.observed = None  # the graph of the program's own class at the chosen backward() call
        self.observed_run = None
        self.code = {}  # compiled function bodies by where they are written (calls.py): a snapshot names them
        self.fills = {}  # compiled __init__ body -> its calls.field_filler, for those that only store fields
        self.operators = {}  # compiled body of a class's + or * -> idioms.operator_in_one_step's run
        self.inits = {}  # class -> its __init__ (or MISSING), looked up at its first call
        self.snapshots = None  # a snapshots.Taker while a job runs: offered the program at each top-level pass
        self.resume = None  # (statement index, iterator, pass index) of the top-level loop a replay resumes
        self.stop_after = None  # a replay's wanted run: it stops at the first top-level pass after that run

    def at_pass(self, position, frame, iterator, index):
        """The start of a pass of the top-level `for` at `position` of the program (statements.py):
        the program's whole state is its globals, the loop's iterator and the run's records."""
        if self.stop_after is not None and len(self.runs) > self.stop_after:
            raise ReplayDone
        if self.snapshots is not None:
            self.snapshots.offer(self, position, frame, iterator, index)

    def count(self, statements, place: Span | None = None):
        """The statement limit, checked in this one place. Statements run, loop tests, items of
        comprehensions and items a single statement builds at once (`[0] * n`, `xs + ys`,
        list(...)) all count, so no loop can run or fill memory past it. Without a place, the
        error is placed by the statement that is running."""
        self.steps += statements
        if self.steps > self.limits.max_statements:
            limit = self.limits.max_statements
            message = (
                f"the program ran more than {limit:,} statements; the limit is {limit:,} "
                "(an endless loop? each item a statement builds at once counts as one)"
            )
            raise B.RunError(message) if place is None else ProgramError(message, place)

    def entry_span(self) -> Span:
        if self.entry_node is None or self.source is None:
            return WHOLE_PROGRAM
        return self.source.node_span(self.entry_node)

    def text_of(self, value, budget=None) -> str:
        """str(value): what print shows, with each instance's own __repr__ where its class has one."""
        if type(value) is Instance:
            return self.describe(value)
        return show(value, budget or self.limits.max_collection_length + 1, describe=self.describe)

    def describe(self, instance) -> str:
        try:
            method = instance.cls.lookup("__repr__")
        except KeyError:
            return repr(instance)
        if type(method) is not Function:
            return repr(instance)
        text = self.call_function(method, (instance,), {})
        if type(text) is not str:
            raise B.RunError(f"__repr__ of {instance.cls.name} must return a string, not {type_name(text)}")
        return text

    # the operators and attributes of the object model, for built-ins that apply them (sum, min, hasattr)
    def binary(self, kind, a, b):
        return model.binary(self, kind, a, b)

    def compare(self, kind, a, b):
        return model.compare(self, kind, a, b)

    def same(self, a, b):
        return model.same(self, a, b)

    def get_attribute(self, obj, name):
        return model.get_attribute(obj, name)

    def mark(self, value, site):
        if type(value) is Value and value._serial > self.last_serial:
            self.last_serial = value._serial
            self.marks.append((value._serial, site[0], site[1], site[2]))

    def write(self, text):
        room = self.limits.max_printed_characters - self.printed_characters
        if room <= 0:
            return
        if len(text) > room:
            text = (
                text[:room]
                + f"\n… (print output stops here: the limit is {self.limits.max_printed_characters:,} characters)\n"
            )
        self.printed_characters += len(text)
        self.chunks.append(text)
        if self.progress is not None:
            self.progress(self)

    def printed(self):
        text = "".join(self.chunks)
        if not text:
            return []
        lines = text.split("\n")
        return lines[:-1] if text.endswith("\n") else lines

    def backward(self, value, line):
        if len(self.runs) >= self.limits.max_backward_calls:
            raise B.RunError(
                f"the program calls backward() more than {self.limits.max_backward_calls:,} times; "
                f"the limit is {self.limits.max_backward_calls:,}"
            )
        order = topological_order(value)
        index = len(self.runs)
        self.runs.append((line, value.data))
        if self.wanted_run is None or self.wanted_run == index:
            grads = [node.grad for node in order]
            grads.pop()  # the output's: the seed sets it, whatever it held
            carried = len(grads) - grads.count(0)  # left by earlier calls (NaN too): the walk shown starts from 0
            self.snapshot = (order, [node.data for node in order], index, carried)
            self.observed = None  # the shown graph is this call's, not an earlier call's of the program's own class
        propagate(order)  # micrograd's backward(): gradients accumulate until the program zeroes them
        if self.progress is not None:
            self.progress(self)

    # ---- the program's own value class ----

    def learner_backward(self, node, method, args, kwargs, line):
        """node.backward() of the program's own class (or a program's `backward(node)`): run as written,
        recording its walk; at the chosen call, the graph is observed as the program's backward left it.
        A backward that calls backward() again (on a node's inputs, recursively) is one run: the calls it
        makes are steps of its walk."""
        if self.in_learner_backward:
            return self.call_function(method, (node, *args), kwargs)
        if len(self.runs) >= self.limits.max_backward_calls:
            raise B.RunError(
                f"the program calls backward() more than {self.limits.max_backward_calls:,} times; "
                f"the limit is {self.limits.max_backward_calls:,}"
            )
        index = len(self.runs)
        wanted = self.wanted_run is None or self.wanted_run == index
        outer, self.walk = self.walk, ([] if wanted else None)
        self.in_learner_backward = True
        try:
            result = self.call_function(method, (node, *args), kwargs)
            walk = self.walk
        finally:
            self.walk = outer
            self.in_learner_backward = False
        try:
            graph = observe(node, walk, self.limits) if wanted else None
        except NodeProblem as problem:
            raise self.made_at(problem) from None
        data = graph["nodes"][-1]["data"] if graph else node.fields[node_fields(node)[0]]
        self.runs.append((line, float(data) if type(data) in (int, float, bool) else math.nan))
        if wanted:
            self.observed = graph
            self.snapshot = None  # the shown graph is the learner's, not an earlier built-in Value's
            self.observed_run = index
        if self.progress is not None:
            self.progress(self)
        return result

    def made_at(self, problem: "NodeProblem") -> ProgramError:
        """observe's problem with a node as the program's error, at the code that made the node."""
        site = problem.node.site
        if site is None or site[0] is None or self.source is None:
            return ProgramError(str(problem), self.entry_span())
        return ProgramError(str(problem), self.source.extent_span(site[0]))

    def backward_step(self, node, closure, args, kwargs):
        """node._backward(): one step of the program's own walk."""
        self.walk.append(("step", node))
        outer, self.in_step = self.in_step, True
        try:
            return self.call(closure, args, kwargs)
        finally:
            self.in_step = outer

    def grad_written(self, obj, value, old, added):
        """obj.grad set to value from old, what it held (observe._steps reads what an earlier backward()
        left from it). added: written with +=, not =."""
        if self.walk is not None and type(obj) is Instance:
            self.walk.append(("grad", obj, value, self.in_step, old, added))


class ReplayDone(BaseException):
    """A replay has made the run it was asked for (a BaseException: no guard turns it into the program's error)."""


def as_program_error(error: Exception, span: Span) -> ProgramError:
    """Any failure inside the interpreter as the engine's one error type, at the code's place."""
    if isinstance(error, B.RunError):
        return ProgramError(str(error), span)
    if isinstance(error, RecursionError):
        return ProgramError("the program nests or calls too deeply to run", span)
    if isinstance(error, MemoryError):
        return ProgramError("the program needs more memory than valuegraph gives one program", span)
    if isinstance(error, TypeError) and "Value" in str(error):
        return ProgramError(str(error), span)
    if isinstance(error, (OverflowError, ZeroDivisionError)):
        return ProgramError("a number is too large for this operation", span)
    if isinstance(error, TypeError) and "unhashable" in str(error):
        return ProgramError("a dict key must be a number, string, tuple or Value, not a list or dict", span)
    return ProgramError(
        f"this operation is not possible here ({type(error).__name__.replace('Error', '').lower() or 'error'})", span
    )
