"""Calls: a call's frame of variables, the calling protocol (arguments bound to parameters, the
call-depth limit, the scope a node made inside shows), and the compiling of what makes and calls
functions (`def`, `lambda`, `f(...)`, `obj.method(...)`)."""

import ast
import queue
import sys
import threading

from ..errors import ProgramError
from ..syntax import Span
from ..threads import Workers
from ..value import Value
from . import builtins as B
from . import model
from .idioms import operator_in_one_step, sort_in_one_step
from .objects import (
    MISSING,
    BoundMethod,
    Builtin,
    BuiltinType,
    Class,
    Frame,
    Function,
    Instance,
    ProgramFile,
    ProgramSet,
    Super,
    type_name,
)
from .observe import node_fields

IN_PRELUDE = Span(-1, 0, 0, -1)  # the place of prelude code: replaced by the program's call into it
NO_KEYWORDS = {}  # the keyword arguments of a call without any (never changed)


class Walk:
    """A `for` loop or a comprehension, as compiled: the names its target binds, and whether its
    body calls one of them (`n(x)`, `n.forward(x)`). Such a call of a program's instance, item i
    of the walk, shows in nodes' scopes as `Class[i]` in place of the loop's own pass scope, so
    `for layer in self.layers: x = layer(x)` reads `MLP.__call__ › Layer[1]` and
    `[n(x) for n in self.neurons]` inside it `… › Layer[1] › Neuron[3]`, in any program."""

    __slots__ = ("names", "called")

    def __init__(self, target):
        # the names it binds (`for i, n in ...`), not those it only reads (`for self.x in ...`)
        self.names = frozenset(
            node.id for node in ast.walk(target) if type(node) is ast.Name and type(node.ctx) is ast.Store
        )
        self.called = False


def walked_scope(frame, walk, instance):
    """The scope of a call of `instance`, the item of `walk`'s pass that is running: the scope
    the walk runs in, then `Class[index]`. The pass is recorded in the frame the walk stores its
    items in, this frame or one around it (a comprehension's own frame is inside its function's)."""
    while frame is not None:
        passes = frame.walks
        if passes is not None and walk in passes:
            index, scope = passes[walk]
            return scope + (f"{instance.cls.name}[{index}]",)
        frame = frame.parent
    return None


class Return:
    """What a `return` statement hands back up through the blocks around it."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class Calls:
    """The calling protocol, part of the run's State (built-ins call back into the program:
    min(key=...), map(f, ...))."""

    def call(self, callee, args, kwargs, scope=None):
        """scope: that of an instance's __call__, when the caller names it (see Walk)."""
        kind = type(callee)
        if kind is Function:
            return self.call_function(callee, args, kwargs)
        if kind is BoundMethod:
            return self.call_function(callee.function, (callee.instance, *args), kwargs)
        if kind is Builtin or kind is BuiltinType:
            return callee.run(self, args, kwargs)
        if kind is Class:
            return self.instance_of(callee, args, kwargs)
        if kind is Instance:
            try:
                method = callee.cls.lookup("__call__")
            except KeyError:
                raise B.RunError(f"a {callee.cls.name} cannot be called: its class has no __call__") from None
            return self.call_function(method, (callee, *args), kwargs, scope)
        raise B.RunError(f"{type_name(callee)} cannot be called")

    def instance_of(self, cls, args, kwargs=NO_KEYWORDS):
        """cls(*args, **kwargs): a new instance, its __init__ run (or its fields filled as it would fill them)."""
        self.instances += 1
        instance = Instance(cls, self.instances)
        init = self.inits.get(cls)
        if init is None:  # a class's attributes are fixed once its body has run
            if len(self.inits) >= CLASSES_KEPT:
                self.inits.clear()
            init = self.inits[cls] = cls.get("__init__", MISSING)
        if init is MISSING:
            if args or kwargs:
                raise B.RunError(f"{cls.name}() takes no arguments: the class has no __init__")
            return instance
        fill = self.fills.get(init.body) if type(init) is Function and not kwargs else None
        if fill is None or not fill(self, instance, init, args):
            self.call_function(init, (instance, *args), kwargs)
        return instance

    def call_function(self, function, args, kwargs, scope=None, name=None):
        """scope: the scope the nodes made in the call show (a walked item's, see Walk); None:
        the caller's, then `name` (the name the code gives the result and the function's: `q = linear`,
        see assigned_names), else the function's name ("f", "MLP.__call__")."""
        params = function.params
        if function.plain and not kwargs and len(args) == len(params):  # f(a, b) of def f(a, b)
            variables = dict(zip(params, args))
        else:
            variables = _bind(function, args, kwargs)
        if self.depth >= self.limits.max_call_depth:
            limit = self.limits.max_call_depth
            raise B.RunError(
                f"calls nest deeper than {limit} (a function that calls itself without end?); the limit is {limit}"
            )
        frame = Frame(variables, function.closure)
        outer = self.scope
        site = self.call_site
        self.depth += 1
        if scope is not None and len(outer) < LONGEST_SCOPE:
            self.scope = scope
        else:
            self.scope = self.scope_of_call(outer, function.scope_name if name is None else name, site)
        if self.depth >= HOP_CHECK_DEPTH and not self.depth % HOP_CHECK_EVERY and _stack_is_deep(self.hop_frames):
            result = self.on_fresh_stack(function.body, frame)
        else:
            result = function.body(frame)
        if function.defines_functions:
            free_if_unreachable(frame)
        self.scope = outer
        self.call_site = site  # a built-in that calls again (map) calls from the same place
        self.depth -= 1
        return result

    def scope_of_call(self, outer, name, site):
        """The scope inside a call of the function `name` from scope `outer` at `site`, the call recorded
        among those made in `outer` (call_name numbers them); `outer` itself past LONGEST_SCOPE."""
        if len(outer) >= LONGEST_SCOPE:
            return outer
        made = self.calls_made.get(len(outer))
        if made is None or made[0] is not outer:  # the first call in this scope instance
            self.calls_made[len(outer)] = (outer, name, site)
            return outer + (name,)
        return outer + (self.call_name(made, name, site),)

    def call_name(self, made, name, site):
        """The name a call shows in its nodes' scopes: the function's, numbered by the place in the
        code that calls it among the places that called it in the same call or loop pass (`outer`):
        `table`, `table (2)`, ... Calls from one place (a comprehension's, map's) share its name;
        calls from different places would otherwise read as one scope when made back to back, as
        a page groups a scope's nodes by consecutive runs. `site`: the call's extent. `made`:
        self.calls_made[len(outer)], the calls made in `outer` so far: (outer, name, site) after its
        first (call_function records it), (outer, {name: {site: number}}) after more."""
        if len(made) == 3:  # one call so far
            if made[1] == name and made[2] == site:
                return name
            outer = made[0]
            made = self.calls_made[len(outer)] = (outer, {made[1]: {made[2]: 1}})
        places = made[1].get(name)
        if places is None:
            made[1][name] = {site: 1}
            return name
        number = places.get(site)
        if number is None:
            number = places[site] = len(places) + 1
        return name if number == 1 else f"{name} ({number})"

    def on_fresh_stack(self, run, *args):
        """run(*args) on another thread's stack: each thread has its own stack and its own count
        of Python's recursion limit, so the program's recursion is bounded by max_call_depth,
        never by the server's recursion limit, which stays as it is for the server's other
        threads. The threads are kept for the run, one per level (a wide walk crosses the same
        level many times), and ended with it (State.close)."""
        with self.hopping:
            self.count(0)  # a stopped run (see stop) ends here, before handing over a call
            level = self.hops
            stack = self.stacks[level] if level < len(self.stacks) else None
            if stack is None or stack.no_thread:  # a new level, or one whose thread could not start
                stack = FreshStack()
                self.stacks[level : level + 1] = [stack]
                stack.start()  # once listed: closing the run ends the thread, whatever stops it
            self.hops += 1  # before the call runs: a call it makes moves to the next level
            stack.calls.put((run, args))
        try:
            return stack.wait(level == 0, self.stop)
        finally:
            self.hops -= 1

    def stop(self):
        """End the program: its running thread's next statement ends it, and no call moves to a
        fresh stack after this (the thread that stops it unwinds and closes the run meanwhile)."""
        with self.hopping:
            self.steps = STOPPED

    def close(self):
        with self.hopping:
            for stack in self.stacks:
                stack.close()
            self.stacks = []


class FreshStack:
    """A thread that runs the calls handed to it one at a time, in order, until it is closed; the
    thread that hands over a call waits for its outcome."""

    def __init__(self):
        self.calls = queue.SimpleQueue()  # (function, args), then None once closed
        self.outcomes = queue.SimpleQueue()  # (finished, value or error) of each call
        self.no_thread = False  # its thread could not be started: the call handed over fails

    def start(self):
        try:
            _thread_starter.put(self)
        except RuntimeError as error:  # the starter itself could not start (in a forked process)
            self.no_thread_started(error)

    def no_thread_started(self, error):
        self.no_thread = True
        self.outcomes.put((False, B.RunError(f"the program calls too deeply to run here ({error})")))

    def serve(self):
        for function, args in iter(self.calls.get, None):  # until closed
            try:
                outcome = (True, function(*args))
            except BaseException as error:  # handed to the waiting thread, which raises it
                outcome = (False, error)
            function = args = None  # the call's frame is the caller's alone before it wakes (see free_if_unreachable)
            self.outcomes.put(outcome)
            outcome = None  # nor is what it returned kept here

    def wait(self, poll, stop):
        """The outcome of the call handed over. `poll`: the waiting thread is the one the run started
        in, which the time budget may stop: it waits in short turns so the stop arrives, then `stop`
        ends the call it handed over."""
        try:
            if poll:
                while True:
                    try:
                        finished, value = self.outcomes.get(timeout=0.05)
                        break
                    except queue.Empty:
                        pass
            else:
                finished, value = self.outcomes.get()
        except BaseException:
            stop()
            raise
        if finished:
            return value
        raise value

    def close(self):
        self.calls.put(None)  # after the call it runs, if any: then the thread ends


# The fresh stacks' threads are started by one thread of their own, never by the thread a run started in, which
# the time budget may stop (engine.threads says why).
def _start_threads(stacks):
    while True:
        stack = stacks.get()
        try:
            threading.Thread(target=stack.serve, name="valuegraph program", daemon=True).start()
        except BaseException as error:  # a limit on threads or memory: the call fails, the starter goes on
            stack.no_thread_started(error)


_thread_starter = Workers("valuegraph thread starter", _start_threads)


# A deep recursion's nodes show the scope of its first calls: each call copies the scope, so an
# unbounded one would make a recursion n deep cost n² (a 10,000-deep recursion: 50 million copies)
LONGEST_SCOPE = 256
HOP_CHECK_DEPTH = 8  # program calls open before the stack's depth is checked
# ... and then at every fourth level only: the check walks the stack (up to hop_frames frames), a
# tenth of a deep recursion's time when done at every call; three unchecked levels fit in the other
# half of the recursion limit that hop_frames leaves
HOP_CHECK_EVERY = 4
STOPPED = 1 << 62  # a step count past every statement limit
# classes (and their __init__s) whose look-ups a run keeps: a program that makes classes in a loop
# does not keep every one of them alive
CLASSES_KEPT = 64


def free_if_unreachable(frame):
    """Empty a finished call's variables when nothing but the functions it defined refers to its frame
    and nothing refers to those functions but the frame: then the frame and they are a reference cycle
    that only the cyclic collector would free, holding all the call made (a backward's inner `visit`
    keeps its frame's list of every node of the step). Read from reference counts, so a frame that a
    returned or stored closure, a class, a generator or another frame still reaches is left as it is."""
    variables = frame.vars
    inner = 0
    for value in variables.values():
        if type(value) is Function and value.closure is frame:
            if sys.getrefcount(value) != 3:  # the dict's, `value`'s and getrefcount's argument's
                return
            inner += 1
    if sys.getrefcount(frame) == 3 + inner:  # the caller's, `frame`'s, getrefcount's argument's, and the closures
        variables.clear()


def _stack_is_deep(frames):
    """Whether this thread runs more than `frames` Python frames (a walk of at most that many)."""
    try:
        sys._getframe(frames)
    except ValueError:
        return False
    return True


def values_of(arguments, names):
    """values(frame): the list of the arguments' (or a list display's) values, built in one step
    for the usual few. names[i]: the name argument i reads inline (Compiler.local_read), or None:
    `None in variables` is false, so that argument's own code runs."""
    if not arguments:
        return lambda frame: []
    if len(arguments) == 1:
        (first,), (first_name,) = arguments, names

        def one(frame):
            variables = frame.vars
            return [variables[first_name] if first_name in variables else first(frame)]

        return one
    if len(arguments) == 2:
        (first, second), (first_name, second_name) = arguments, names

        def two(frame):
            variables = frame.vars
            return [
                variables[first_name] if first_name in variables else first(frame),
                variables[second_name] if second_name in variables else second(frame),
            ]

        return two
    if len(arguments) == 3:
        first, second, third = arguments
        return lambda frame: [first(frame), second(frame), third(frame)]
    return lambda frame: [argument(frame) for argument in arguments]


def _local_names(function) -> frozenset:
    """The names a function's (or lambda's) frame is likely to hold when its code reads them: its
    parameters and the names its own statements assign (a guess that only orders a name's lookup)."""
    arguments = function.args
    names = {arg.arg for arg in arguments.args + arguments.kwonlyargs}
    names.update(arg.arg for arg in (arguments.vararg, arguments.kwarg) if arg is not None)
    pending = list(function.body) if type(function.body) is list else [function.body]
    while pending:
        node = pending.pop()
        if type(node) is ast.Name and type(node.ctx) is ast.Store:
            names.add(node.id)
        elif type(node) in (ast.FunctionDef, ast.ClassDef):
            names.add(node.name)
        elif type(node) not in (ast.Lambda, ast.ListComp, ast.DictComp, ast.GeneratorExp):
            pending.extend(ast.iter_child_nodes(node))
    return frozenset(names)


def _defines_functions(function) -> bool:
    """Whether a function's own code (not that of a function inside it) has a def, lambda or class."""
    pending = list(function.body)
    while pending:
        node = pending.pop()
        if type(node) in (ast.FunctionDef, ast.Lambda, ast.ClassDef):
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False


def _nonlocal_names(function) -> frozenset:
    """The names a function's own `nonlocal` statements declare (not those of functions inside it)."""
    names, pending = set(), list(function.body)
    while pending:
        node = pending.pop()
        if type(node) is ast.Nonlocal:
            names.update(node.names)
        elif type(node) not in (ast.FunctionDef, ast.Lambda, ast.ClassDef):
            pending.extend(ast.iter_child_nodes(node))
    return frozenset(names)


def _bind(function, args, kwargs) -> dict:
    """The call's variables: each parameter bound to its argument or default, as Python binds them."""
    params = function.params
    extra = ()
    if len(args) > len(params):
        if function.star is None:
            raise B.RunError(
                f"{function.name}() takes {len(params)} argument{'s' if len(params) != 1 else ''}, got {len(args)}"
            )
        extra, args = tuple(args[len(params) :]), args[: len(params)]
    variables = dict(zip(params, args))
    named = {}
    keyword_only = function.keyword_only
    for key, value in kwargs.items():
        if key not in params and key not in keyword_only:
            if function.double_star is None:
                raise B.RunError(f"{function.name}() has no parameter named {key[:40]!r}")
            named[key] = value
        elif key in variables:
            raise B.RunError(f"{function.name}() got {key!r} twice")
        else:
            variables[key] = value
    if len(variables) < len(params):
        for name in params:
            if name not in variables:
                if name not in function.defaults:
                    raise B.RunError(f"{function.name}() is missing its argument {name!r}")
                variables[name] = function.defaults[name]
    for name in keyword_only:
        if name not in variables:
            if name not in function.defaults:
                raise B.RunError(f"{function.name}() is missing its argument {name}=")
            variables[name] = function.defaults[name]
    if function.star is not None:
        variables[function.star] = extra
    if function.double_star is not None:
        variables[function.double_star] = named
    return variables


ASSIGNED_NAME_LENGTH = 30  # characters of an assigned name a call's scope shows, then "…"


def assigned_names(tree) -> dict:
    """id(call) -> the name the code gives the call's result (`q = linear(x, w)`: q; `{"tokens":
    table(2, 3)}` and `w["tokens"] = table(2, 3)`: tokens; `self.w = table(2, 3)`: w), for the calls of a
    function that one body (the program's, a function's, a class's) calls from more than one place: their
    scopes show it (`q = linear`, `k = linear`) where a number alone (`linear (2)`) would say less."""
    named = {}
    bodies = [tree]
    while bodies:
        owner = bodies.pop()
        sites, given = {}, {}  # callee's name -> its calls here; id(call) -> the name given its result
        pending = list(owner.body) if type(owner.body) is list else [owner.body]
        while pending:
            node = pending.pop()
            kind = type(node)
            if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda):
                bodies.append(node)
                pending.extend(getattr(node, "decorator_list", ()))  # run where it is defined
                continue
            if kind is ast.Assign and len(node.targets) == 1:
                _give(given, node.targets[0], node.value)
            elif kind is ast.Dict:
                for key, value in zip(node.keys, node.values):
                    if type(key) is ast.Constant and type(key.value) is str and type(value) is ast.Call:
                        given[id(value)] = key.value
            elif kind is ast.Call:
                callee = node.func.id if type(node.func) is ast.Name else getattr(node.func, "attr", None)
                sites.setdefault(callee, []).append(node)
            pending.extend(ast.iter_child_nodes(node))
        for callee, calls in sites.items():
            if callee is not None and len(calls) > 1:
                shown = ((id(call), _shown(given[id(call)])) for call in calls if id(call) in given)
                named.update((call, name) for call, name in shown if name)
    return named


def _give(given, target, value):
    """The name `target = value` gives a call's result (each of `q, k = f(x), g(x)`'s pairwise)."""
    if type(target) is ast.Tuple and type(value) is ast.Tuple and len(target.elts) == len(value.elts):
        for one_target, one_value in zip(target.elts, value.elts):
            _give(given, one_target, one_value)
        return
    if type(value) is not ast.Call:
        return
    kind = type(target)
    if kind is ast.Name:
        given[id(value)] = target.id
    elif kind is ast.Attribute:
        given[id(value)] = target.attr
    elif kind is ast.Subscript and type(target.slice) is ast.Constant and type(target.slice.value) is str:
        given[id(value)] = target.slice.value
    elif kind is ast.Subscript and type(target.slice) is ast.JoinedStr:  # w[f"layer{i}.query"]: layer{i}.query
        given[id(value)] = "".join(map(_written, target.slice.values))


def _written(part) -> str:
    """A part of an f-string as written: its text, a name's field as {name}, any other field as {…}."""
    if type(part) is ast.Constant:
        return str(part.value)
    return "{" + (part.value.id if type(part.value) is ast.Name else "…") + "}"


def _shown(name: str) -> str | None:
    """The name on one line, its control characters as spaces, cut to ASSIGNED_NAME_LENGTH; None for one that
    says nothing or would read as a loop pass (`for i = 3`): that call is numbered instead."""
    name = " ".join("".join(c if c.isprintable() else " " for c in name).split())
    if not name or name.startswith("for "):
        return None
    return name if len(name) <= ASSIGNED_NAME_LENGTH else name[: ASSIGNED_NAME_LENGTH - 1] + "…"


def _shown_names(assigned: str):
    """shown(function, called_by): the name a call from a place that names its result shows in scopes,
    `q = linear` (a lambda by the name it is called by: `wte = matrix`), made again only when the place calls
    another function than the last (one kept: a `def` run in a loop is a new function each pass)."""
    last = [None, None]  # the function, its name

    def shown(function, called_by):
        if last[0] is not function:
            last[:] = function, f"{assigned} = {called_by if function.is_expression else function.scope_name}"
        return last[1]

    return shown


def _is_backward_of_a_node(values, named) -> bool:
    """Whether `backward(values...)` is a program's own backward of one node: `backward(out)`, `Value.backward(out)`."""
    return len(values) == 1 and not named and type(values[0]) is Instance and node_fields(values[0]) is not None


# name -> (the container type, its method) for calls that run inline (CallCompiler.expr_Call)
CONTAINER_METHODS = {"append": (list, B.LIST_METHODS["append"]), "add": (ProgramSet, B.SET_METHODS["add"])}


def field_filler(node, place):
    """For an `__init__` whose body only stores its parameters and constants in its instance's
    attributes (`self.data = data`, `self.grad = 0`, as a value class's does), fill(state, instance,
    init, args) -> whether it filled the new instance's fields as the call would, without the call:
    the statements counted and the limits checked as the call's; False (nothing done) where the call
    could do otherwise (an argument missing, a field its class's __slots__ refuses, a `.grad`
    written while the program's own backward runs, the call-depth limit reached), so the caller calls
    it. None for any other body."""
    arguments = node.args
    params = [arg.arg for arg in arguments.args]
    if len(params) < 1 or arguments.vararg or arguments.kwarg or arguments.kwonlyargs:
        return None
    stores = []  # (field, index of the argument it takes or None, constant)
    for statement in node.body:
        if type(statement) is not ast.Assign or len(statement.targets) != 1:
            return None
        target, value = statement.targets[0], statement.value
        if type(target) is not ast.Attribute or type(target.value) is not ast.Name or target.value.id != params[0]:
            return None
        if type(value) is ast.Name and value.id in params[1:]:
            stores.append((target.attr, params.index(value.id) - 1, None))
        elif type(value) is ast.Constant:
            stores.append((target.attr, None, B.whole_or_float(value.value)))  # as expr_Constant reads it
        else:
            return None
    count = len(stores)
    fields = frozenset(field for field, _, _ in stores)
    writes_grad = "grad" in fields
    given = len(params) - 1

    padding = {}  # (the __init__, arguments given) -> the defaults that follow them, None: one is missing
    fitting = {}  # class -> whether its __slots__ (if any) take every field

    def fill(state, instance, init, args):
        if len(args) != given:
            key = (init, len(args))
            if key not in padding:
                if len(padding) >= CLASSES_KEPT:
                    padding.clear()
                missing = params[1 + len(args) :]
                complete = len(args) <= given and all(name in init.defaults for name in missing)
                padding[key] = tuple(map(init.defaults.__getitem__, missing)) if complete else None
            if padding[key] is None:
                return False
            args = (*args, *padding[key])
        cls = instance.cls
        if cls not in fitting:
            if len(fitting) >= CLASSES_KEPT:
                fitting.clear()
            fitting[cls] = cls.slots is None or fields <= cls.slots
        if not fitting[cls] or (writes_grad and state.walk is not None):
            return False
        if state.depth >= state.limits.max_call_depth:
            return False
        state.steps += count
        if state.steps > state.limits.max_statements:
            state.count(0, place)
        values = instance.fields
        for field, index, constant in stores:
            values[field] = constant if index is None else args[index]
        return True

    return fill


class CallCompiler:
    """The Compiler's part for functions: defining them and calling them."""

    def stmt_FunctionDef(self, node, in_class=False):
        params, defaults, stars = self.parameters(node.args)
        outer_nonlocals, self.nonlocals = self.nonlocals, _nonlocal_names(node)
        outer_walks, self.walks = self.walks, []  # a function's calls run in its own frame
        outer_locals, self.locals = self.locals, _local_names(node)
        outer_in_method, self.in_method = self.in_method, self.in_method or in_class
        holder = {}  # the method's compiled body, for its super() calls to find the class that defines it
        outer_method, self.method = self.method, ((params[0], holder) if in_class and params else None)
        body = sort_in_one_step(self, node, self.function_body(node.body))
        holder["body"] = body
        operator = operator_in_one_step(self, node) if in_class else None  # in the method's own context
        self.nonlocals, self.walks, self.in_method = outer_nonlocals, outer_walks, outer_in_method
        self.method = outer_method
        self.locals = outer_locals
        name = node.name
        prelude = self.prelude
        self.state.code[(prelude, node.lineno, node.col_offset)] = body
        fill = field_filler(node, self.span(node.body[0])) if in_class and name == "__init__" else None
        defines = _defines_functions(node)
        if fill is not None:
            self.state.fills[body] = fill
        if operator is not None:
            self.state.operators[body] = operator

        def run(frame):
            values = {param: default(frame) for param, default in defaults.items()} if defaults else {}
            closure = frame.parent if in_class else frame  # methods do not see the class body's names
            scope_name = f"{frame.vars['__class_name__']}.{name}" if in_class else name
            frame.vars[name] = Function(
                name, scope_name, params, values, body, closure, False, prelude, *stars, defines_functions=defines
            )
            return None

        return run

    def expr_Lambda(self, node):
        params, defaults, stars = self.parameters(node.args)
        outer_walks, self.walks = self.walks, []
        outer_locals, self.locals = self.locals, _local_names(node)
        outer_method, self.method = self.method, None
        body = self.expr(node.body)
        self.walks, self.locals, self.method = outer_walks, outer_locals, outer_method
        prelude = self.prelude
        self.state.code[(prelude, node.lineno, node.col_offset)] = body

        def run(frame):
            values = {param: default(frame) for param, default in defaults.items()} if defaults else {}
            return Function("lambda", "lambda", params, values, body, frame, True, prelude, *stars)

        return run

    def walking(self, target):
        """A Walk over `target`, open while its body is compiled (close it with self.walks.pop())."""
        walk = Walk(target)
        self.walks.append(walk)
        return walk

    def walk_calling(self, node):
        """The innermost open Walk whose item the name `node` is, marked as called; else None."""
        if type(node) is ast.Name:
            for walk in reversed(self.walks):
                if node.id in walk.names:
                    walk.called = True
                    return walk
        return None

    def parameters(self, arguments):
        """(names, {name: default's code}, (*args name, **kwargs name, keyword-only names))."""
        params = tuple(arg.arg for arg in arguments.args)
        defaults = dict(zip(params[len(params) - len(arguments.defaults) :], map(self.expr, arguments.defaults)))
        keyword_only = tuple(arg.arg for arg in arguments.kwonlyargs)
        defaults.update(
            (name, self.expr(default))
            for name, default in zip(keyword_only, arguments.kw_defaults)
            if default is not None
        )
        stars = (
            arguments.vararg.arg if arguments.vararg else None,
            arguments.kwarg.arg if arguments.kwarg else None,
            keyword_only,
        )
        return params, defaults, stars

    def arguments(self, node):
        """(positional, named): functions of the frame giving the call's argument list and dict;
        `*xs` and `**kw` are spread into them. `named` is None for a call without keywords (its dict
        is empty)."""
        args = [(type(a) is ast.Starred, self.expr(a.value if type(a) is ast.Starred else a)) for a in node.args]
        names = [self.local_read(a) for a in node.args]
        keywords = [(k.arg, self.expr(k.value)) for k in node.keywords]
        spread = any(star for star, _ in args) or any(key is None for key, _ in keywords)
        plain_args = [value for _, value in args]
        if not spread:
            named = (lambda frame: {key: value(frame) for key, value in keywords}) if keywords else None
            return values_of(plain_args, names), named
        state = self.state

        def positional(frame):
            values = []
            for star, arg in args:
                if star:
                    values.extend(B.collect(state, arg(frame), "*"))
                else:
                    values.append(arg(frame))
            return values

        def named(frame):
            values = {}
            for key, value in keywords:
                if key is None:
                    mapping = value(frame)
                    if type(mapping) is not dict or not all(type(k) is str for k in mapping):
                        raise B.RunError(f"** takes a dict with string keys, not {type_name(mapping)}")
                    values.update(mapping)
                else:
                    values[key] = value(frame)
            return values

        return positional, named

    def expr_Call(self, node):
        if type(node.func) is ast.Name and node.func.id == "super" and not node.keywords:
            return self.super_call(node)
        state = self.state
        positional, named_arguments = self.arguments(node)
        record = self.recorder(node)
        extent, expr = self.site(node)
        prelude = self.prelude
        line = node.lineno
        function = node.func
        assigned = self.assigned.get(id(node))  # the name the code gives the result, when it shows in scopes
        shown_name = None if assigned is None else _shown_names(assigned)
        failed = self.failure()
        placed = self.places_instances  # skip record() for what it leaves as it is
        if type(function) is ast.Attribute:
            owner = self.expr(function.value)
            name = function.attr
            method = self.method_caller(name, line)
            walk = self.walk_calling(function.value)
            call_function = state.call_function
            special = name in ("backward", "_backward")  # method_caller's own cases
            calls_backward = name == "backward"
            # xs.append(x), seen.add(x): no program code runs in them, so nothing the general path
            # records (the call's place, its site for numbering calls) can be read before the next call
            container, container_method = CONTAINER_METHODS.get(name, (None, None))
            if named_arguments is not None:
                container = None

            def call_method(frame):
                try:
                    obj = owner(frame)
                    if type(obj) is container:
                        return container_method(state, obj, positional(frame), NO_KEYWORDS)
                    scope = walked_scope(frame, walk, obj) if walk is not None and type(obj) is Instance else None
                    values = positional(frame)
                    named = {} if named_arguments is None else named_arguments(frame)
                    if not prelude:
                        state.entry = extent
                        state.entry_node = node
                    state.site = (state.entry if prelude else extent, expr, state.scope)
                    state.call_site = extent
                    attribute = None
                    if type(obj) is Instance and not special and name not in obj.fields:
                        attributes = obj.cls.attributes  # a method of the program's class (or a base), called inline
                        attribute = attributes[name] if name in attributes else obj.cls.get(name)
                    elif calls_backward and type(obj) is Class:  # Value.backward(out)
                        attribute = obj.get(name)
                        if type(attribute) is Function and _is_backward_of_a_node(values, named):
                            return state.learner_backward(values[0], attribute, (), NO_KEYWORDS, line)
                        attribute = None
                    if type(attribute) is Function:
                        shown = None if assigned is None else shown_name(attribute, name)
                        result = model.made(call_function(attribute, (obj, *values), named, scope, shown), name)
                    else:
                        result = method(obj, values, named, scope)
                    kind = type(result)
                    return record(result) if kind is Value or (kind is Instance and placed) else result
                except Exception as error:
                    raise failed(error, node) from None

            return call_method
        callee = self.expr(function)
        callee_name = function.id if type(function) is ast.Name else "lambda"
        calls_backward = callee_name == "backward"
        walk = self.walk_calling(function)
        call_function = state.call_function
        call_any = state.call

        def call(frame):
            try:
                target = callee(frame)
                scope = walked_scope(frame, walk, target) if walk is not None and type(target) is Instance else None
                values = positional(frame)
                named = NO_KEYWORDS if named_arguments is None else named_arguments(frame)
                if not prelude:
                    state.entry = extent
                    state.entry_node = node
                state.call_site = extent
                if type(target) is Function:
                    if calls_backward and target.name == "backward" and _is_backward_of_a_node(values, named):
                        return state.learner_backward(values[0], target, (), NO_KEYWORDS, line)  # backward(out)
                    shown = None if assigned is None else shown_name(target, callee_name)
                    result = call_function(target, values, named, None, shown)
                elif type(target) is Builtin:  # sum() and map() mark the Values they make with the call's place
                    state.site = (state.entry if prelude else extent, expr, state.scope)
                    result = target.run(state, values, named)
                else:
                    result = call_any(target, values, named, scope)
                kind = type(result)
                return record(result) if kind is Value or (kind is Instance and placed) else result
            except Exception as error:
                raise failed(error, node) from None

        if (
            type(function) is ast.Name
            and function.id == "isinstance"
            and named_arguments is None
            and len(node.args) == 2
        ):
            return self.isinstance_call(node, callee, positional, extent, failed, call)
        return call

    def super_call(self, node):
        """`super()` in a method: its first argument's attributes looked up after the class whose body defines
        the method (found in the instance's mro by the method's compiled body); `super(C, obj)`: after C."""
        failed = self.failure()
        if node.args:
            if len(node.args) != 2 or any(type(a) is ast.Starred for a in node.args):
                raise ProgramError("super() takes no arguments, or a class and an instance", self.span(node))
            cls_code, obj_code = map(self.expr, node.args)

            def explicit(frame):
                try:
                    cls, obj = cls_code(frame), obj_code(frame)
                    if type(cls) is not Class or type(obj) is not Instance or cls not in obj.cls.mro:
                        raise B.RunError("super(C, obj) takes a class of the program and an instance of it")
                    return Super(cls, obj)
                except Exception as error:
                    raise failed(error, node) from None

            return explicit
        if self.method is None:
            raise ProgramError(
                "super() without arguments works only in a method of a class; elsewhere write super(C, obj)",
                self.span(node),
            )
        first, holder = self.method

        def run(frame):
            try:
                while first not in frame.vars:  # a comprehension's frame: the method's is around it
                    frame = frame.parent
                obj = frame.vars[first]
                if type(obj) is not Instance:
                    raise B.RunError(f"super(): {first} is a {type_name(obj)}, not an instance of the method's class")
                body = holder["body"]
                for cls in obj.cls.mro:
                    if any(type(v) is Function and v.body is body for v in cls.attributes.values()):
                        return Super(cls, obj)
                raise B.RunError(f"super(): this method is not one of {obj.cls.name}'s")
            except Exception as error:
                raise failed(error, node) from None

        return run

    def isinstance_call(self, node, callee, positional, extent, failed, call):
        """`isinstance(x, C)`, the first line of every operator of a value class: the built-in run at once
        for an instance and a class of the program; any other call (a program's own `isinstance`, other
        arguments) by `call`, the general call. It makes no Value and calls no code: it leaves no place
        for a built-in's Values (state.site), which sum and map set for themselves."""
        state = self.state
        prelude = self.prelude
        isinstance_builtin = self.builtins["isinstance"]
        run = isinstance_builtin.run

        def call_isinstance(frame):
            try:
                if callee(frame) is not isinstance_builtin:  # a name's read, made again by `call`
                    return call(frame)
                values = positional(frame)
                if not prelude:
                    state.entry = extent
                    state.entry_node = node
                state.call_site = extent
                value, kind = values
                if type(value) is Instance and type(kind) is Class:
                    return value.cls is kind or value.cls.is_subclass_of(kind)
                return run(state, values, NO_KEYWORDS)
            except Exception as error:
                raise failed(error, node) from None

        return call_isinstance

    def method_caller(self, name, line):
        """call(obj, args, kwargs, scope) for `obj.name(...)`, without making a bound method first;
        scope: that of the call of a method of the program's class (see Walk), or None."""
        state = self.state
        value_method = {"tanh": Value.tanh, "exp": Value.exp, "log": Value.log, "relu": Value.relu}.get(name)
        list_method = B.LIST_METHODS.get(name)
        dict_method = B.DICT_METHODS.get(name)
        set_method = B.SET_METHODS.get(name)
        str_method = B.STR_METHODS.get(name)
        file_method = B.FILE_METHODS.get(name)
        backward_step = name == "_backward"  # a node's closure: one step of the learner's walk
        get = model.get_attribute

        def call(obj, args, kwargs, scope=None):
            kind = type(obj)
            if kind is Value:
                if args or kwargs:
                    raise B.RunError(f"x.{name}() takes no arguments")
                if value_method is not None:
                    return value_method(obj)
                if name == "backward":
                    state.backward(obj, line)
                    return None
                return get(obj, name)  # refuses with the list of what a Value has
            if kind is Instance:
                fields = obj.fields
                if name in fields:
                    if backward_step and state.walk is not None:
                        return state.backward_step(obj, fields[name], args, kwargs)
                    return state.call(fields[name], args, kwargs)
                try:
                    attribute = obj.cls.lookup(name)
                except KeyError:
                    raise B.RunError(f"a {obj.cls.name} has no method {name[:40]!r}") from None
                if type(attribute) is not Function:
                    return state.call(attribute, args, kwargs)
                if name == "backward" and node_fields(obj) is not None:
                    return state.learner_backward(obj, attribute, args, kwargs, line)
                return model.made(state.call_function(attribute, (obj, *args), kwargs, scope), name)  # x.tanh()
            if kind is list and list_method is not None:
                return list_method(state, obj, args, kwargs)
            if kind is dict and dict_method is not None:
                return dict_method(state, obj, args, kwargs)
            if kind is ProgramSet and set_method is not None:
                return set_method(state, obj, args, kwargs)
            if kind is str and str_method is not None:
                return str_method(state, obj, args, kwargs)
            if kind is ProgramFile and file_method is not None:
                return file_method(state, obj, args, kwargs)
            return state.call(get(obj, name), args, kwargs)

        return call
