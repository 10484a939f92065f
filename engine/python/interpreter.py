"""A Python program, as a checked syntax tree, run by closures: each node of the tree is turned
once into a Python function of the frame it runs in, so running a loop body a thousand times
walks no tree. Only what the tree's node types say is done; a program reaches no Python object
of the server (names resolve to the program's own frames and the tables in builtins.py).

The compiler is written in the language's parts: statements.py, expressions.py, calls.py (and
the calling protocol), model.py (attributes and items); state.py holds what a run changes.
This module joins them and says where code is: the place errors are reported at, and the
place each new Value records as where it was made.

Besides the result, a run records where each Value came from, in side tables keyed by the
Value's creation number (Value itself stays small): `marks` says which code made every Value
created since the previous mark, `name_labels` which name a Value was first assigned to."""

from ..errors import ProgramError
from ..syntax import Span
from ..value import Value
from .calls import IN_PRELUDE, CallCompiler
from .expressions import ExpressionCompiler
from .objects import Instance
from .parse import Source
from .state import State, as_program_error
from .statements import StatementCompiler, shorten


class Compiler(StatementCompiler, ExpressionCompiler, CallCompiler):
    """Syntax tree to closures. `prelude` is true for the micrograd nn code valuegraph provides:
    its nodes show the program's call as their place and do not label by assignment."""

    def __init__(self, source: Source, state: State, builtins: dict, prelude: bool = False):
        self.source = source
        self.state = state
        self.builtins = builtins
        self.prelude = prelude
        self.nonlocals = frozenset()  # names the function being compiled declares nonlocal
        # names the frame of the code being compiled likely holds (None: the program's or a class's
        # frame, which holds its globals): a name read is looked for there first, or first outside
        self.locals = None
        self.walks = []  # the loops and comprehensions around the code being compiled, in its frame (calls.Walk)
        self.in_method = False  # compiling a method of a class (or a function inside one)
        self.method = None  # (first parameter, {"body": compiled body}) of the method being compiled, for super()
        self.top_level_loops = {}  # id of a `for` node at the program's top level -> its statement index
        self.assigned = {}  # id of a call -> the name its scope shows with the function's (calls.assigned_names)

    def span(self, node) -> Span:
        return IN_PRELUDE if self.prelude else self.source.node_span(node)

    def site(self, node):
        """(extent, expr) of a node, as a node made by it shows them."""
        extent = self.source.extent(node)
        return (None if self.prelude else extent, shorten(self.source.text_of(node, extent)))

    def failure(self):
        """failed(error, node): what to raise for `error`, which ended the code of `node` (the innermost
        statement or guarded expression around it). A ProgramError is already placed and passes on, but
        one placed IN_PRELUDE, and any other exception, is placed: in the program's code at the node, in
        the prelude's at the program's call into it."""
        if self.prelude:
            state = self.state

            def failed_in_prelude(error, node):
                if type(error) is ProgramError:
                    return ProgramError(error.message, state.entry_span()) if error.span is IN_PRELUDE else error
                return as_program_error(error, state.entry_span())

            return failed_in_prelude
        place = self.source.node_span  # computed when an error happens, not for every node up front
        return lambda error, node: error if type(error) is ProgramError else as_program_error(error, place(node))

    def guard(self, node, run):
        """run(frame), with any failure reported at the node's place. In the prelude the statement
        around it reports the failure at the program's call, the same place for every node: no guard."""
        if self.prelude:
            return run
        failed = self.failure()

        def guarded(frame):
            try:
                return run(frame)
            except Exception as error:
                raise failed(error, node) from None

        return guarded

    @property
    def places_instances(self):
        """Whether the recorder of the code being compiled places an instance of the program's class
        (the program's own code does; micrograd's nn code and the class's methods do not)."""
        return not self.prelude and not self.in_method

    def recorder(self, node):
        """A function that records a fresh Value as made by `node` (and returns it). An instance
        of the program's own class records the first code outside any class method that returns
        it: `a * b` in the program, not `Value(self.data * other.data, ...)` inside __mul__."""
        state = self.state
        extent, expr = self.site(node)
        marks = state.marks
        prelude = self.prelude
        places_instances = self.places_instances

        def record(result):
            kind = type(result)
            if kind is Value:
                serial = result._serial
                if serial > state.last_serial:
                    state.last_serial = serial
                    marks.append((serial, state.entry if prelude else extent, expr, state.scope))
            elif kind is Instance and places_instances and result.site is None:
                result.site = (extent, expr, state.scope)
            return result

        return record
