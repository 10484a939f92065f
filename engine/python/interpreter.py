"""A Python program, as a checked syntax tree, run by closures: each node of the tree is turned
once into a Python function of the frame it runs in, so running a loop body a thousand times
walks no tree. Only what the tree's node types say is done; a program reaches no Python object
of the server (names resolve to the program's own frames and the tables in builtins.py).

Besides the result, a run records where each Value came from, in side tables keyed by the
Value's creation number (Value itself stays small): `marks` says which code made every Value
created since the previous mark, `name_labels` which name a Value was first assigned to."""

import ast
import itertools
import random

from ..autograd import propagate, topological_order
from ..errors import ProgramError
from ..limits import Limits
from ..syntax import NO_ORIGIN, Span
from ..value import Value
from . import builtins as B
from .objects import BoundMethod, Builtin, BuiltinType, Class, Function, Instance, Module, show, type_name
from .parse import Source

IN_PRELUDE = Span(-1, 0, 0, -1)  # the place of prelude code: replaced by the program's call into it
BREAK = object()
CONTINUE = object()
EXPR_LENGTH = 40


class Return:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class Frame:
    __slots__ = ("vars", "parent")

    def __init__(self, variables, parent):
        self.vars = variables
        self.parent = parent


def shorten(text: str, longest: int = EXPR_LENGTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= longest else text[: longest - 1] + "…"


class State:
    """Everything one run of a program changes, besides its own objects."""

    def __init__(self, limits: Limits, seed: int, wanted_run):
        self.limits = limits
        self.seed = seed
        self.rng = random.Random(seed)  # the same draws as CPython after random.seed(seed)
        self.steps = 0
        self.depth = 0
        self.scope = ()
        self.entry = None  # extent of the program's call that is running micrograd's nn code
        self.entry_node = None  # and its syntax node, to place errors inside that code
        self.source = None  # the program's Source
        self.site = NO_ORIGIN  # (extent, expr, scope) of the built-in being called
        self.marks = []  # (last serial, extent, expr, scope), serials increasing
        self.last_serial = -1
        self.name_labels = {}  # serial -> the name the Value was first assigned to
        self.last_value = None  # the last Value a statement of the program computed
        self.runs = []  # (line, output data) per backward() call
        self.wanted_run = wanted_run  # None: the last
        self.snapshot = None  # (order, data) of the chosen backward() call
        self.chunks = []
        self.printed_characters = 0

    def entry_span(self) -> Span:
        if self.entry_node is None or self.source is None:
            return Span(0, 1, 1, 0)
        return self.source.node_span(self.entry_node)

    def text_of(self, value) -> str:
        """str(value): a class's own __repr__ when it has one, else what print shows."""
        if type(value) is Instance:
            try:
                method = value.cls.lookup("__repr__")
            except KeyError:
                method = None
            if type(method) is Function:
                text = self.call_function(method, (value,), {})
                if type(text) is not str:
                    raise B.RunError(f"__repr__ of {value.cls.name} must return a string, not {type_name(text)}")
                return text
        return show(value, self.limits.max_collection_length + 1)

    def charge(self, items):
        """Items a single statement builds at once (`[0] * n`, `xs + ys`, list(...)) count toward
        the statement limit, so no loop can fill memory faster than it runs statements."""
        self.steps += items
        if self.steps > self.limits.max_statements:
            limit = self.limits.max_statements
            raise B.RunError(
                f"the program ran more than {limit:,} statements; the limit is {limit:,} (each item a statement builds at once counts as one)"
            )

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

    def printed(self):
        text = "".join(self.chunks)
        if not text:
            return []
        lines = text.split("\n")
        return lines[:-1] if text.endswith("\n") else lines

    def backward(self, value, line):
        if len(self.runs) >= self.limits.max_backward_calls:
            raise B.RunError(
                f"the program calls backward() more than {self.limits.max_backward_calls:,} times; the limit is {self.limits.max_backward_calls:,}"
            )
        order = topological_order(value)
        index = len(self.runs)
        self.runs.append((line, value.data))
        if self.wanted_run is None or self.wanted_run == index:
            self.snapshot = (order, [node.data for node in order], index)
        propagate(order)  # micrograd's backward(): gradients accumulate until the program zeroes them

    # calling anything callable, from the program or from a built-in (min(key=...))
    def call(self, callee, args, kwargs, scope_name=None):
        kind = type(callee)
        if kind is Function:
            return self.call_function(callee, args, kwargs, scope_name)
        if kind is BoundMethod:
            return self.call_function(callee.function, (callee.instance, *args), kwargs, scope_name)
        if kind is Builtin or kind is BuiltinType:
            return callee.run(self, args, kwargs)
        if kind is Class:
            instance = Instance(callee)
            try:
                init = callee.lookup("__init__")
            except KeyError:
                if args or kwargs:
                    raise B.RunError(f"{callee.name}() takes no arguments: the class has no __init__") from None
                return instance
            self.call_function(init, (instance, *args), kwargs, scope_name)
            return instance
        if kind is Instance:
            try:
                method = callee.cls.lookup("__call__")
            except KeyError:
                raise B.RunError(f"a {callee.cls.name} cannot be called: its class has no __call__") from None
            return self.call_function(method, (callee, *args), kwargs, scope_name)
        raise B.RunError(
            f"{type_name(callee)} cannot be called" + ("; strings are only used as labels" if kind is str else "")
        )

    def call_function(self, function, args, kwargs, scope_name=None):
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
        if self.depth >= self.limits.max_call_depth:
            raise B.RunError(
                f"calls nest deeper than {self.limits.max_call_depth} (a function that calls itself without end?); the limit is {self.limits.max_call_depth}"
            )
        frame = Frame(variables, function.closure)
        outer = self.scope
        self.depth += 1
        self.scope = outer + (scope_name or function.scope_name,)
        if function.is_expression:
            result = function.body(frame)
        else:
            signal = function.body(frame)
            result = signal.value if type(signal) is Return else None
        self.scope = outer
        self.depth -= 1
        return result


def _error(error: Exception, span: Span) -> ProgramError:
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


class Compiler:
    """Syntax tree to closures. `prelude` is true for the micrograd nn code valuegraph provides:
    its nodes show the program's call as their place and do not label by assignment."""

    def __init__(self, source: Source, state: State, builtins: dict, prelude: bool = False):
        self.source = source
        self.state = state
        self.builtins = builtins
        self.prelude = prelude

    # ---- places ----

    def span(self, node) -> Span:
        return IN_PRELUDE if self.prelude else self.source.node_span(node)

    def site(self, node):
        """(extent, expr) of a node, as a node made by it shows them."""
        extent = self.source.extent(node)
        return (None if self.prelude else extent, shorten(self.source.text_of(node, extent)))

    def guard(self, node, run):
        """run(frame), with any failure reported at the node's place."""
        if self.prelude:
            state = self.state

            def guarded_prelude(frame):
                try:
                    return run(frame)
                except ProgramError as error:
                    if error.span is IN_PRELUDE:
                        raise ProgramError(error.message, state.entry_span()) from None
                    raise
                except Exception as error:
                    raise _error(error, state.entry_span()) from None

            return guarded_prelude

        place = self.source.node_span  # computed when an error happens, not for every node up front

        def guarded(frame):
            try:
                return run(frame)
            except ProgramError:
                raise
            except Exception as error:
                raise _error(error, place(node)) from None

        return guarded

    def recorder(self, node):
        """A function that records a fresh Value as made by `node` (and returns it)."""
        state = self.state
        extent, expr = self.site(node)
        marks = state.marks
        prelude = self.prelude

        def record(result):
            if type(result) is Value:
                serial = result._serial
                if serial > state.last_serial:
                    state.last_serial = serial
                    marks.append((serial, state.entry if prelude else extent, expr, state.scope))
            return result

        return record

    # ---- statements ----

    def block(self, statements, in_class=False):
        compiled = [self.statement(s, in_class) for s in statements]
        state = self.state
        limit = state.limits.max_statements
        count = len(compiled)
        first = statements[0]
        place = self.span

        def run_block(frame):
            state.steps += count
            if state.steps > limit:
                raise ProgramError(
                    f"the program ran more than {limit:,} statements; the limit is {limit:,} (an endless loop?)",
                    place(first),
                )
            for statement in compiled:
                signal = statement(frame)
                if signal is not None:
                    return signal
            return None

        if count == 1:
            (only,) = compiled

            def run_one(frame):
                state.steps += 1
                if state.steps > limit:
                    raise ProgramError(
                        f"the program ran more than {limit:,} statements; the limit is {limit:,} (an endless loop?)",
                        place(first),
                    )
                return only(frame)

            return run_one
        return run_block

    def statement(self, node, in_class=False):
        method = getattr(self, "stmt_" + type(node).__name__)
        if type(node) is ast.FunctionDef:
            return self.guard(node, method(node, in_class))
        return self.guard(node, method(node))

    def stmt_Expr(self, node):
        value = self.expr(node.value)
        state = self.state
        if self.prelude:

            def run_prelude(frame):
                value(frame)

            return run_prelude

        def run(frame):
            result = value(frame)
            if type(result) is Value:
                state.last_value = result
            return None

        return run

    def stmt_Pass(self, node):
        return lambda frame: None

    def stmt_Break(self, node):
        return lambda frame: BREAK

    def stmt_Continue(self, node):
        return lambda frame: CONTINUE

    def stmt_Return(self, node):
        value = self.expr(node.value) if node.value is not None else (lambda frame: None)
        return lambda frame: Return(value(frame))

    def stmt_Assert(self, node):
        test = self.expr(node.test)
        message = self.expr(node.msg) if node.msg is not None else None

        def run(frame):
            if not test(frame):
                detail = f": {show(message(frame), 200)}" if message else ""
                raise B.RunError(f"assertion failed{detail}")
            return None

        return run

    def stmt_Assign(self, node):
        value = self.expr(node.value)
        stores = [self.store(target, label=not self.prelude) for target in node.targets]
        state = self.state
        prelude = self.prelude
        if len(stores) == 1:
            (store,) = stores

            def run_one(frame):
                result = value(frame)
                store(frame, result)
                if type(result) is Value and not prelude:
                    state.last_value = result
                return None

            return run_one

        def run(frame):
            result = value(frame)
            for store in stores:
                store(frame, result)
            return None

        return run

    def stmt_AugAssign(self, node):
        operation = self.binary_function(node.op)
        record = self.recorder(node)
        target = node.target
        state = self.state
        prelude = self.prelude
        value = self.expr(node.value)
        in_place = type(node.op) is ast.Add

        def combine(old, new):
            if in_place and type(old) is list:
                more = B.collect(state, new, "+=")
                self.check_length(len(old) + len(more))
                state.charge(len(more))
                old.extend(more)
                return old
            result = operation(old, new)
            if not prelude and type(result) is Value:
                state.last_value = result
            return record(result)

        if type(target) is ast.Name:
            load = self.expr(ast.copy_location(ast.Name(target.id, ast.Load()), target))
            store = self.store(target, label=not prelude)
            return lambda frame: store(frame, combine(load(frame), value(frame)))
        if type(target) is ast.Attribute:
            owner = self.expr(target.value)
            name = target.attr

            value_field = name in ("data", "grad")

            def run_attribute(frame):
                obj = owner(frame)
                if value_field and type(obj) is Value:  # p.data += -lr * p.grad, the training loop's update
                    result = combine(getattr(obj, name), value(frame))
                    if type(result) is float:
                        setattr(obj, name, result)
                        return
                    self.set_attribute(obj, name, result)
                    return
                self.set_attribute(obj, name, combine(self.get_attribute(obj, name), value(frame)))

            return run_attribute
        container = self.expr(target.value)
        key = self.expr(target.slice)

        def run_item(frame):
            obj, index = container(frame), key(frame)
            self.set_item(obj, index, combine(self.get_item(obj, index), value(frame)))

        return run_item

    def stmt_If(self, node):
        test = self.expr(node.test)
        body = self.block(node.body)
        orelse = self.block(node.orelse) if node.orelse else None

        def run(frame):
            if test(frame):
                return body(frame)
            if orelse is not None:
                return orelse(frame)
            return None

        return run

    def stmt_For(self, node):
        iterable = self.expr(node.iter)
        store = self.store(node.target)
        body = self.block(node.body)
        orelse = self.block(node.orelse) if node.orelse else None
        state = self.state
        target = node.target
        named = type(target) is ast.Name and target.id
        target_text = shorten(self.source.text_of(target), 20)
        scoped = not self.prelude

        def run(frame):
            items = B.iterate(iterable(frame))
            outer = state.scope
            for index, item in enumerate(items):
                store(frame, item)
                if scoped:
                    if named and type(item) in (int, float):
                        state.scope = outer + (f"for {named} = {item}",)
                    else:
                        state.scope = outer + (f"for {target_text} [{index}]",)
                signal = body(frame)
                if signal is not None:
                    if signal is BREAK:
                        state.scope = outer
                        return None
                    if signal is not CONTINUE:
                        state.scope = outer
                        return signal
            state.scope = outer
            if orelse is not None:
                return orelse(frame)
            return None

        return run

    def stmt_While(self, node):
        test = self.expr(node.test)
        body = self.block(node.body)
        orelse = self.block(node.orelse) if node.orelse else None
        state = self.state
        limit = state.limits.max_statements
        span = self.span(node)
        scoped = not self.prelude

        def run(frame):
            outer = state.scope
            for index in itertools.count():
                state.steps += 1  # the test counts, so `while True: pass`-like loops end too
                if state.steps > limit:
                    raise ProgramError(
                        f"the program ran more than {limit:,} statements; the limit is {limit:,} (an endless loop?)",
                        span,
                    )
                if not test(frame):
                    break
                if scoped:
                    state.scope = outer + (f"while [{index}]",)
                signal = body(frame)
                if signal is not None:
                    if signal is BREAK:
                        state.scope = outer
                        return None
                    if signal is not CONTINUE:
                        state.scope = outer
                        return signal
            state.scope = outer
            if orelse is not None:
                return orelse(frame)
            return None

        return run

    def stmt_FunctionDef(self, node, in_class=False):
        params, defaults, stars = self.parameters(node.args)
        body = self.block(node.body)
        name = node.name
        prelude = self.prelude

        def run(frame):
            values = {param: default(frame) for param, default in defaults.items()}
            closure = frame.parent if in_class else frame  # methods do not see the class body's names
            scope_name = f"{frame.vars['__class_name__']}.{name}" if in_class else name
            frame.vars[name] = Function(name, scope_name, params, values, body, closure, False, prelude, *stars)
            return None

        return run

    def parameters(self, arguments):
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

    def stmt_ClassDef(self, node):
        bases = [self.expr(base) for base in node.bases]
        body = self.block(node.body, in_class=True)
        name = node.name

        def run(frame):
            resolved = []
            for base in bases:
                cls = base(frame)
                if type(cls) is not Class:
                    raise B.RunError(f"a class can only build on another class of the program, not on {type_name(cls)}")
                resolved.append(cls)
            class_frame = Frame({"__class_name__": name}, frame)
            body(class_frame)
            del class_frame.vars["__class_name__"]
            frame.vars[name] = Class(name, tuple(resolved), class_frame.vars)
            return None

        return run

    def stmt_Import(self, node):
        names = [(alias.asname or alias.name, alias.name) for alias in node.names]
        builtins = self.builtins

        def run(frame):
            for bound, module in names:
                frame.vars[bound] = builtins["module " + module]
            return None

        return run

    def stmt_ImportFrom(self, node):
        names = [(alias.asname or alias.name, alias.name) for alias in node.names]
        module = node.module
        builtins = self.builtins

        def run(frame):
            for bound, name in names:
                if module.startswith("micrograd"):
                    frame.vars[bound] = builtins["micrograd " + name]
                else:
                    frame.vars[bound] = builtins["module " + module].attributes[name]
            return None

        return run

    # ---- stores ----

    def store(self, target, label=False):
        kind = type(target)
        state = self.state
        if kind is ast.Name:
            name = target.id
            if not label:

                def store_name(frame, value):
                    frame.vars[name] = value

                return store_name
            labels = state.name_labels

            def store_labelled(frame, value):
                frame.vars[name] = value
                if type(value) is Value and state.depth == 0:  # a function's locals would repeat in every call
                    labels.setdefault(value._serial, name)

            return store_labelled
        if kind in (ast.Tuple, ast.List):
            stores = [self.store(element, label) for element in target.elts]
            count = len(stores)

            def store_unpacked(frame, value):
                if (type(value) is tuple or type(value) is list) and len(value) == count:
                    for store, item in zip(stores, value):
                        store(frame, item)
                    return
                items = list(itertools.islice(B.iterate(value), count + 1))
                if len(items) != count:
                    raise B.RunError(
                        f"cannot unpack {'more' if len(items) > count else len(items)} values into {count} names"
                    )
                for store, item in zip(stores, items):
                    store(frame, item)

            return store_unpacked
        if kind is ast.Attribute:
            owner = self.expr(target.value)
            name = target.attr
            return lambda frame, value: self.set_attribute(owner(frame), name, value)
        if kind is ast.Subscript:
            container = self.expr(target.value)
            key = self.expr(target.slice)
            return lambda frame, value: self.set_item(container(frame), key(frame), value)
        raise ProgramError(
            "this cannot be assigned to: assign to a name, a list item or an attribute", self.span(target)
        )

    # ---- attributes and items ----

    def get_attribute(self, obj, name):
        kind = type(obj)
        if kind is Value:
            if name in B.VALUE_METHODS:
                raise B.RunError(f"call the method: x.{name}()")
            return B.value_attribute(obj, name)
        if kind is Instance:
            fields = obj.fields
            if name in fields:
                return fields[name]
            try:
                attribute = obj.cls.lookup(name)
            except KeyError:
                raise B.RunError(f"a {obj.cls.name} has no attribute {name[:40]!r}") from None
            return BoundMethod(attribute, obj) if type(attribute) is Function else attribute
        if kind is Module:
            if name in obj.attributes:
                return obj.attributes[name]
            raise B.RunError(f"{obj.name}.{name[:40]} is not available; {obj.name} offers {', '.join(obj.attributes)}")
        if kind is Class:
            try:
                return obj.lookup(name)
            except KeyError:
                raise B.RunError(f"class {obj.name} has no attribute {name[:40]!r}") from None
        raise B.RunError(f"{type_name(obj)} has no attribute {name[:40]!r} here")

    def set_attribute(self, obj, name, value):
        kind = type(obj)
        if kind is Value:
            B.set_value_attribute(obj, name, value)
        elif kind is Instance:
            obj.fields[name] = value
        else:
            raise B.RunError(f"cannot set attributes on {type_name(obj)}")

    def check_length(self, length):
        limit = self.state.limits.max_collection_length
        if length > limit:
            raise B.RunError(f"a list would hold {length:,} items; the limit is {limit:,}")

    def get_item(self, obj, key):
        kind = type(obj)
        if kind in (list, tuple, range):
            if type(key) in (int, bool):
                try:
                    return obj[key]
                except IndexError:
                    raise B.RunError(f"index {key} is out of range for a {type_name(obj)} of {len(obj)}") from None
            if type(key) is slice:
                part = obj[key]
                self.state.charge(len(part))
                return part
            raise B.RunError(f"a {type_name(obj)} index must be a whole number, not {type_name(key)}")
        if kind is dict:
            try:
                return obj[key]
            except KeyError:
                raise B.RunError(f"the dict has no key {show(key, 40, True)}") from None
        raise B.RunError(
            f"{type_name(obj)} cannot be indexed" + ("; strings are only used as labels" if kind is str else "")
        )

    def set_item(self, obj, key, value):
        kind = type(obj)
        if kind is list:
            if type(key) not in (int, bool):
                raise B.RunError(f"a list index must be a whole number, not {type_name(key)}")
            try:
                obj[key] = value
            except IndexError:
                raise B.RunError(f"index {key} is out of range for a list of {len(obj)}") from None
        elif kind is dict:
            if key not in obj:
                self.check_length(len(obj) + 1)
            obj[key] = value
        else:
            raise B.RunError(
                f"cannot assign into a {type_name(obj)}" + (": tuples cannot change" if kind is tuple else "")
            )

    # ---- expressions ----

    def expr(self, node):
        return getattr(self, "expr_" + type(node).__name__)(node)

    def expr_Constant(self, node):
        value = node.value
        return lambda frame: value

    def expr_Name(self, node):
        name = node.id
        builtins = self.builtins
        place = self.span

        def load(frame):
            try:
                return frame.vars[name]
            except KeyError:
                pass
            outer = frame.parent
            while outer is not None:
                variables = outer.vars
                if name in variables:
                    return variables[name]
                outer = outer.parent
            if name in builtins:
                return builtins[name]
            raise ProgramError(_unknown_name(name), place(node))

        return load

    def expr_Tuple(self, node):
        elements = [self.expr(e) for e in node.elts]
        return lambda frame: tuple([element(frame) for element in elements])

    def expr_List(self, node):
        elements = [self.expr(e) for e in node.elts]
        return lambda frame: [element(frame) for element in elements]

    def expr_Dict(self, node):
        if any(key is None for key in node.keys):
            raise ProgramError("`**` unpacking in a dict is not available; write the keys out", self.span(node))
        pairs = [(self.expr(k), self.expr(v)) for k, v in zip(node.keys, node.values)]
        return self.guard(node, lambda frame: {key(frame): value(frame) for key, value in pairs})

    def binary_function(self, op):
        return B.BINARY[type(op).__name__]

    def expr_BinOp(self, node):
        # a + b + c + ... is a left-leaning chain: run it as a loop, not as nested calls
        chain = []
        while type(node) is ast.BinOp:
            chain.append(node)
            node = node.left
        chain.reverse()
        first = self.expr(node)
        steps = [
            (self.binary_function(n.op), self.expr(n.right), self.recorder(n), n, type(n.op) in (ast.Add, ast.Mult))
            for n in chain
        ]
        place = self.span
        state = self.state
        limit = state.limits.max_collection_length

        def run(frame):
            result = first(frame)
            for operation, right, record, where, may_grow in steps:
                other = right(frame)
                try:
                    if may_grow and (type(result) in (list, tuple) or type(other) in (list, tuple)):
                        state.charge(_check_sequence(result, other, limit))
                    result = record(operation(result, other))
                except ProgramError:
                    raise
                except Exception as error:
                    raise _error(error, place(where)) from None
            return result

        return run

    def expr_UnaryOp(self, node):
        operand = self.expr(node.operand)
        kind = type(node.op)
        if kind is ast.Not:
            return lambda frame: not operand(frame)
        operation = B.negate if kind is ast.USub else B.positive
        if kind is ast.USub and type(node.operand) is ast.Constant and type(node.operand.value) in (int, float):
            constant = -node.operand.value
            return lambda frame: constant
        record = self.recorder(node)
        return self.guard(node, lambda frame: record(operation(operand(frame))))

    def expr_BoolOp(self, node):
        values = [self.expr(v) for v in node.values]
        if type(node.op) is ast.And:

            def run_and(frame):
                result = True
                for value in values:
                    result = value(frame)
                    if not result:
                        return result
                return result

            return run_and

        def run_or(frame):
            result = False
            for value in values:
                result = value(frame)
                if result:
                    return result
            return result

        return run_or

    def expr_Compare(self, node):
        left = self.expr(node.left)
        rest = [(type(op).__name__, self.expr(right)) for op, right in zip(node.ops, node.comparators)]

        def run(frame):
            a = left(frame)
            for kind, right in rest:
                b = right(frame)
                if not B.compare(kind, a, b):
                    return False
                a = b
            return True

        return self.guard(node, run)

    def expr_IfExp(self, node):
        test, body, orelse = self.expr(node.test), self.expr(node.body), self.expr(node.orelse)
        return lambda frame: body(frame) if test(frame) else orelse(frame)

    def expr_Attribute(self, node):
        owner = self.expr(node.value)
        name = node.attr
        get = self.get_attribute
        if name in B.VALUE_ATTRIBUTES:

            def load_value_attribute(frame):
                obj = owner(frame)
                if type(obj) is Value:
                    return obj.data if name == "data" else obj.grad if name == "grad" else obj.label or ""
                return get(obj, name)

            return self.guard(node, load_value_attribute)
        return self.guard(node, lambda frame: get(owner(frame), name))

    def expr_Subscript(self, node):
        container = self.expr(node.value)
        key = self.expr(node.slice)
        get = self.get_item
        return self.guard(node, lambda frame: get(container(frame), key(frame)))

    def expr_Slice(self, node):
        parts = [self.expr(p) if p is not None else (lambda frame: None) for p in (node.lower, node.upper, node.step)]

        def run(frame):
            values = [part(frame) for part in parts]
            for value in values:
                if value is not None and type(value) not in (int, bool):
                    raise B.RunError(f"slice bounds must be whole numbers, not {type_name(value)}")
            if values[2] == 0:
                raise B.RunError("a slice step cannot be zero")
            return slice(*values)

        return self.guard(node, run)

    def expr_JoinedStr(self, node):
        parts = []
        for part in node.values:
            if type(part) is ast.Constant:
                text = part.value
                parts.append(lambda frame, text=text: text)
            else:
                parts.append(self.expr(part))
        longest = self.state.limits.max_collection_length

        def run(frame):
            text = "".join([part(frame) for part in parts])
            if len(text) > longest:  # f'{s}{s}' in a loop would double without end
                raise B.RunError(f"a string would be {len(text):,} characters long; the limit is {longest:,}")
            return text

        return self.guard(node, run)

    def expr_FormattedValue(self, node):
        value = self.expr(node.value)
        spec = "".join(part.value for part in node.format_spec.values) if node.format_spec is not None else ""
        as_repr = node.conversion == ord("r")
        longest = self.state.limits.max_collection_length

        def run(frame):
            result = value(frame)
            if as_repr:
                return show(result, longest + 1, True)
            return B.format_value(result, spec, longest)

        return self.guard(node, run)

    def expr_Lambda(self, node):
        params, defaults, stars = self.parameters(node.args)
        body = self.expr(node.body)
        prelude = self.prelude

        def run(frame):
            values = {param: default(frame) for param, default in defaults.items()}
            return Function("lambda", "lambda", params, values, body, frame, True, prelude, *stars)

        return run

    def arguments(self, node):
        """(positional, named): functions of the frame giving the call's argument list and dict;
        `*xs` and `**kw` are spread into them."""
        args = [(type(a) is ast.Starred, self.expr(a.value if type(a) is ast.Starred else a)) for a in node.args]
        keywords = [(k.arg, self.expr(k.value)) for k in node.keywords]
        spread = any(star for star, _ in args) or any(key is None for key, _ in keywords)
        plain_args = [value for _, value in args]
        if not spread:
            if not keywords:
                return (lambda frame: [arg(frame) for arg in plain_args]), (lambda frame: {})
            return (lambda frame: [arg(frame) for arg in plain_args]), (
                lambda frame: {key: value(frame) for key, value in keywords}
            )
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
        state = self.state
        positional, named_arguments = self.arguments(node)
        record = self.recorder(node)
        extent, expr = self.site(node)
        prelude = self.prelude
        line = node.lineno
        function = node.func
        if type(function) is ast.Attribute:
            owner = self.expr(function.value)
            name = function.attr
            method = self.method_caller(name, line)

            def call_method(frame):
                obj = owner(frame)
                values = positional(frame)
                named = named_arguments(frame)
                if not prelude:
                    state.entry = extent
                    state.entry_node = node
                state.site = (state.entry if prelude else extent, expr, state.scope)
                return record(method(obj, values, named))

            return self.guard(node, call_method)
        callee = self.expr(function)

        def call(frame):
            target = callee(frame)
            values = positional(frame)
            named = named_arguments(frame)
            if not prelude:
                state.entry = extent
                state.entry_node = node
            if type(target) is Builtin:  # sum() and map() mark the Values they make with the call's place
                state.site = (state.entry if prelude else extent, expr, state.scope)
            return record(state.call(target, values, named))

        return self.guard(node, call)

    def method_caller(self, name, line):
        state = self.state
        value_method = {"tanh": Value.tanh, "exp": Value.exp, "log": Value.log, "relu": Value.relu}.get(name)
        list_method = B.LIST_METHODS.get(name)
        dict_method = B.DICT_METHODS.get(name)
        get = self.get_attribute

        def call(obj, args, kwargs):
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
                    return state.call(fields[name], args, kwargs)
                try:
                    attribute = obj.cls.lookup(name)
                except KeyError:
                    raise B.RunError(f"a {obj.cls.name} has no method {name[:40]!r}") from None
                if type(attribute) is Function:
                    return state.call_function(attribute, (obj, *args), kwargs)
                return state.call(attribute, args, kwargs)
            if kind is list and list_method is not None:
                return list_method(state, obj, args, kwargs)
            if kind is dict and dict_method is not None:
                return dict_method(state, obj, args, kwargs)
            if kind is str and name == "join":
                return B.join(state, obj, args, kwargs)
            return state.call(get(obj, name), args, kwargs)

        return call

    # ---- comprehensions ----

    def comprehension_loops(self, generators):
        """[(iterable, store, conditions)] per `for` of a comprehension."""
        return [(self.expr(g.iter), self.store(g.target), [self.expr(c) for c in g.ifs]) for g in generators]

    def expr_ListComp(self, node):
        loops = self.comprehension_loops(node.generators)
        element = self.expr(node.elt)
        items = self._comprehension(loops, lambda frame: element(frame))
        return self.guard(node, items)

    def expr_DictComp(self, node):
        loops = self.comprehension_loops(node.generators)
        key, value = self.expr(node.key), self.expr(node.value)
        pairs = self._comprehension(loops, lambda frame: (key(frame), value(frame)))
        return self.guard(node, lambda frame: dict(pairs(frame)))

    def _comprehension(self, loops, element):
        state = self.state
        limit = state.limits.max_statements
        length = state.limits.max_collection_length
        last = len(loops) - 1

        def run(frame):
            inner = Frame({}, frame)
            out = []

            def walk(level):
                iterable, store, conditions = loops[level]
                for item in B.iterate(iterable(frame if level == 0 else inner)):
                    state.steps += 1
                    if state.steps > limit:
                        raise B.RunError(f"the program ran more than {limit:,} statements; the limit is {limit:,}")
                    store(inner, item)
                    if not conditions or all(condition(inner) for condition in conditions):
                        if level == last:
                            out.append(element(inner))
                            if len(out) > length:
                                raise B.RunError(
                                    f"a list would hold more than {length:,} items; the limit is {length:,}"
                                )
                        else:
                            walk(level + 1)

            walk(0)
            return out

        return run

    def expr_GeneratorExp(self, node):
        loops = self.comprehension_loops(node.generators)
        element = self.expr(node.elt)
        state = self.state
        limit = state.limits.max_statements
        span = self.span(node)

        last = len(loops) - 1

        def run(frame):
            inner = Frame({}, frame)
            first = B.iterate(loops[0][0](frame))  # Python evaluates the first iterable at once

            def walk(level, items):
                iterable, store, conditions = loops[level]
                for item in items:
                    state.steps += 1
                    if state.steps > limit:
                        raise ProgramError(
                            f"the program ran more than {limit:,} statements; the limit is {limit:,}", span
                        )
                    store(inner, item)
                    if not conditions or all(condition(inner) for condition in conditions):
                        if level == last:
                            yield element(inner)
                        else:
                            yield from walk(level + 1, B.iterate(loops[level + 1][0](inner)))

            return walk(0, first)

        return self.guard(node, run)


def _check_sequence(a, b, limit):
    if type(b) in (int, bool) and type(a) in (list, tuple):
        length = len(a) * max(b, 0)
    elif type(a) in (int, bool) and type(b) in (list, tuple):
        length = len(b) * max(a, 0)
    elif type(a) in (list, tuple) and type(b) in (list, tuple):
        length = len(a) + len(b)
    else:
        return 0
    if length > limit:
        raise B.RunError(f"a list would hold {length:,} items; the limit is {limit:,}")
    return length


def _unknown_name(name):
    shown = name if len(name) <= 40 else name[:39] + "…"
    known = {"tanh", "exp", "log", "relu"}
    if name in known:
        return (
            f"unknown name '{shown}': for a Value write x.{name}(); for a plain number write math.{name}(x)"
            if name != "relu"
            else "unknown name 'relu': write x.relu()"
        )
    return f"unknown name '{shown}': assign it first, or import it (valuegraph offers Value, Neuron, Layer, MLP, math and random)"
