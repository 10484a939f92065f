"""What a Python program can hold besides numbers, strings, lists, tuples, dicts and Values:
the interpreter's own function, class, instance and module objects. None of them exposes a
Python attribute to the program: attribute access goes through the interpreter's tables."""

from collections import Counter

from ..value import Value

MISSING = object()  # Class.get's default when an attribute's absence must be told from a None


class Frame:
    """The variables of one call (or of the program, or of a class body, or of a comprehension),
    and the frame the function was defined in: names not found here are looked up there. `walks`:
    {Walk: (index, scope)} of the loops running in this frame whose items are called (see Walk)."""

    __slots__ = ("vars", "parent", "walks")

    def __init__(self, variables, parent):
        self.vars = variables
        self.parent = parent
        self.walks = None


class Function:
    """A `def` or `lambda` of the program (or of the micrograd prelude)."""

    __slots__ = (
        "name",
        "scope_name",
        "params",
        "defaults",
        "body",
        "closure",
        "is_expression",
        "in_prelude",
        "star",
        "double_star",
        "keyword_only",
        "plain",
        "defines_functions",
    )

    def __init__(
        self,
        name,
        scope_name,
        params,
        defaults,
        body,
        closure,
        is_expression,
        in_prelude,
        star=None,
        double_star=None,
        keyword_only=(),
        defines_functions=False,
    ):
        self.name = name
        self.scope_name = scope_name  # as it shows in a node's scope: "f", "MLP.__call__"
        self.params = params  # parameter names, in order (keyword-only ones in keyword_only)
        self.defaults = defaults  # {name: value} for parameters with defaults
        self.body = body  # compiled block, or compiled expression for a lambda
        self.closure = closure  # the frame the def ran in
        self.is_expression = is_expression
        self.in_prelude = in_prelude
        self.star = star  # the name of *args, or None
        self.double_star = double_star  # the name of **kwargs, or None
        self.keyword_only = keyword_only  # names after *args, passed by name only
        # takes its parameters only as they are listed (no *args, **kwargs, keyword-only): a call
        # passing exactly that many by position binds them without calls.py's _bind
        self.plain = star is None and double_star is None and not keyword_only
        # its body has a def, lambda or class of its own: a call's frame may end in a reference cycle
        # with them (calls.free_if_unreachable)
        self.defines_functions = defines_functions

    def __repr__(self):
        return f"<function {self.name}>"


class BasesError(Exception):
    """Bases that no class can have (listed twice, or in an order that contradicts their own)."""


class Class:
    __slots__ = ("name", "bases", "attributes", "mro", "slots", "equal_by_identity")

    def __init__(self, name, bases, attributes):
        self.name = name
        self.bases = bases  # Class objects
        self.attributes = attributes  # methods (Function) and class-level values
        self.mro = self._order()  # this class and its bases: where lookups search, in order
        self.slots = None  # the attribute names __slots__ allows (with its bases'), or None: any
        if all("__slots__" in cls.attributes for cls in self.mro):  # most stop at the class itself
            names = set()
            for cls in self.mro:
                slots = cls.attributes["__slots__"]
                names.update((slots,) if type(slots) is str else slots)
            self.slots = frozenset(names)
        # no __eq__ of its own or a base's: its instances are equal only to themselves, so a set can
        # hold them (`node not in seen`). A class's attributes are fixed once its body has run.
        self.equal_by_identity = "__eq__" not in attributes and all(base.equal_by_identity for base in bases)

    def _order(self):
        """This class, then its bases' orders merged as CPython merges them (C3: each class before its bases,
        the bases in the order listed, every class once); raises BasesError where no such order exists.

        Merged step by step in Python even for one base, where (self, *base.mro) would do: a loop defining each
        class on the one before would then fill memory (quadratic in the chain) far faster than it uses time."""
        bases = self.bases
        if len(set(bases)) < len(bases):
            twice = next(base for i, base in enumerate(bases) if base in bases[:i])
            raise BasesError(f"duplicate base class {twice.name}")
        orders = [base.mro for base in bases] + [bases]
        at = [0] * len(orders)  # where each order's remaining part starts
        later = Counter(cls for order in orders for cls in order[1:])  # how many orders hold it past their head
        merged = [self]
        while True:
            heads = [order[i] for order, i in zip(orders, at) if i < len(order)]
            if not heads:
                return tuple(merged)
            head = next((cls for cls in heads if not later[cls]), None)
            if head is None:
                names = ", ".join(dict.fromkeys(cls.name for cls in heads))  # as CPython names them
                raise BasesError(f"cannot create a consistent method resolution order (MRO) for bases {names}")
            merged.append(head)
            for n, order in enumerate(orders):
                i = at[n]
                if i < len(order) and order[i] is head:
                    at[n] = i = i + 1
                    if i < len(order):
                        later[order[i]] -= 1

    def lookup(self, name):
        """The attribute from this class or its bases, in mro order; or raise KeyError."""
        found = self.get(name, MISSING)
        if found is MISSING:
            raise KeyError(name)
        return found

    def get(self, name, default=None):
        """lookup's attribute, or `default` when neither the class nor a base has it."""
        for cls in self.mro:
            attributes = cls.attributes
            if name in attributes:
                return attributes[name]
        return default

    def is_subclass_of(self, other):
        return other in self.mro

    def __repr__(self):
        return f"<class {self.name}>"


class Instance:
    """An object of a program's class. `serial` numbers instances in the order they were made;
    `made_by` is the special method (or method) whose call returned it first, for the graph's op;
    `name` labels it in the graph when its class keeps no label; `site` is (extent, expr, scope) of
    the program's code that made it, outside its class's methods (None until such code returns it)."""

    __slots__ = ("cls", "fields", "serial", "made_by", "name", "site")

    def __init__(self, cls, serial=0):
        self.cls = cls
        self.fields = {}
        self.serial = serial
        self.made_by = None
        self.name = None  # the name it was first assigned to at the program's top level
        self.site = None

    def __repr__(self):
        return f"<{self.cls.name} object>"


class ProgramSet:
    """A program's set(): Python's meaning, but iterated in the order items were added, so a
    run repeats exactly (a Python set of objects iterates in an order set by memory addresses)."""

    __slots__ = ("items",)

    def __init__(self, items=()):
        self.items = dict.fromkeys(items)

    def __contains__(self, item):
        return item in self.items

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)


class ProgramFile:
    """A file given with the request, opened for reading: its text as CPython's text mode reads
    it (\r\n and \r become \n) and how far the program has read."""

    __slots__ = ("name", "text", "position")

    def __init__(self, name, text):
        self.name = name
        self.text = text.replace("\r\n", "\n").replace("\r", "\n")
        self.position = 0

    def read(self):
        rest = self.text[self.position :]
        self.position = len(self.text)
        return rest

    def readline(self):
        end = self.text.find("\n", self.position)
        end = len(self.text) if end < 0 else end + 1
        line = self.text[self.position : end]
        self.position = end
        return line

    def __iter__(self):
        while self.position < len(self.text):
            yield self.readline()

    def __repr__(self):
        return f"<file {self.name!r}>"


class BoundMethod:
    __slots__ = ("function", "instance")

    def __init__(self, function, instance):
        self.function = function
        self.instance = instance

    def __repr__(self):
        return f"<method {self.function.name}>"


class Super:
    """super() in a method: `instance`'s attributes looked up in its class's mro after `after` (the class
    whose body defines the method), as CPython's super object does in its class's mro (Class._order's)."""

    __slots__ = ("after", "instance")

    def __init__(self, after, instance):
        self.after = after
        self.instance = instance

    def __repr__(self):
        return f"<super: <class '{self.after.name}'>, <{self.instance.cls.name} object>>"  # CPython's

    def lookup(self, name):
        """The attribute of a class after `after` in the instance's mro, bound to the instance when a
        function; MISSING when none has it."""
        mro = self.instance.cls.mro
        for cls in mro[mro.index(self.after) + 1 :]:
            if name in cls.attributes:
                found = cls.attributes[name]
                return BoundMethod(found, self.instance) if type(found) is Function else found
        return MISSING


class Builtin:
    """A function the interpreter provides: run(state, args, kwargs) -> value."""

    __slots__ = ("name", "run")

    def __init__(self, name, run):
        self.name = name
        self.run = run

    def __repr__(self):
        return f"<built-in function {self.name}>"


class Module:
    __slots__ = ("name", "attributes")

    def __init__(self, name, attributes):
        self.name = name
        self.attributes = attributes

    def __repr__(self):
        return f"<module {self.name}>"


class BuiltinType:
    """int, float, list, ...: callable, and the second argument of isinstance()."""

    __slots__ = ("name", "python_types", "run")

    def __init__(self, name, python_types, run):
        self.name = name
        self.python_types = python_types
        self.run = run

    def __repr__(self):
        return f"<class {self.name}>"


TYPE_NAMES = {
    bool: "bool",
    int: "int",
    float: "float",
    str: "string",
    list: "list",
    tuple: "tuple",
    dict: "dict",
    type(None): "None",
    Value: "Value",
    range: "range",
    Function: "function",
    Class: "class",
    BoundMethod: "method",
    Super: "super",
    Builtin: "function",
    Module: "module",
    BuiltinType: "class",
    ProgramSet: "set",
    ProgramFile: "file",
    type(NotImplemented): "NotImplementedType",
}


def type_name(value) -> str:
    if type(value) is Instance:
        return value.cls.name
    return TYPE_NAMES.get(type(value), "iterator")


def show(value, budget: int, use_repr: bool = False, describe=None) -> str:
    """The text print() writes for a value: Python's, for the objects a program can hold, and
    at most about `budget` characters (a list that holds itself many times over stays short).
    `describe(instance)` gives an instance's text (its class's __repr__), wherever it sits."""
    text = _Shown(budget, describe)
    text.visit(value, 0, use_repr)
    return "".join(text.parts)


class _Shown:
    """show()'s text as it grows. An object, not nested functions calling each other: those make a
    reference cycle per call, garbage that only the cyclic collector frees, and a print loop made
    millions of them while a request had the collector paused (their collection then held the
    interpreter lock for most of a second past the time budget)."""

    def __init__(self, budget: int, describe):
        self.parts = []
        self.remaining = budget
        self.describe = describe

    def emit(self, text):
        self.parts.append(text)
        self.remaining -= len(text)

    def visit(self, item, depth, as_repr):
        emit, visit = self.emit, self.visit
        if self.remaining <= 0:
            return
        kind = type(item)
        if kind is str:
            text = repr(item) if as_repr else item
            emit(text if len(text) <= self.remaining else text[: self.remaining] + "…")
        elif kind in (list, tuple, dict):
            if depth > 20:
                emit("[...]" if kind is list else "(...)" if kind is tuple else "{...}")
                return
            opening, closing = {list: "[]", tuple: "()", dict: "{}"}[kind]
            emit(opening)
            entries = item.items() if kind is dict else item
            for i, entry in enumerate(entries):
                if self.remaining <= 0:
                    emit("…")
                    break
                if i:
                    emit(", ")
                if kind is dict:
                    visit(entry[0], depth + 1, True)
                    emit(": ")
                    visit(entry[1], depth + 1, True)
                else:
                    visit(entry, depth + 1, True)
            if kind is tuple and len(item) == 1:
                emit(",")
            emit(closing)
        elif kind is ProgramSet:
            if not item.items:
                emit("set()")
                return
            emit("{")
            for i, entry in enumerate(item):
                if self.remaining <= 0:
                    emit("…")
                    break
                if i:
                    emit(", ")
                visit(entry, depth + 1, True)
            emit("}")
        elif kind is Instance and self.describe is not None:
            emit(self.describe(item))
        elif kind in (int, float, bool, Value, range) or item is None or kind in TYPE_NAMES or kind is Instance:
            emit(repr(item))
        else:
            emit(f"<{type_name(item)}>")
