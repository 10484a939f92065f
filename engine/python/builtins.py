"""The names a Python program starts with and the operations on plain values: built-in
functions, `math`, `random` and `os.path.exists`, `open` over the files given with the program,
Value's constructor, attributes and methods, str methods, and the operators on numbers,
strings, lists and tuples. Numbers follow IEEE (no exception on 1/0 or overflow),
and integers that would grow past 64 bits become floats, so no program can build a huge one."""

import functools
import itertools
import math
import operator
import re

from .. import ieee
from ..value import VALUE_EXPONENT_MESSAGE, Value
from .objects import Builtin, BuiltinType, Class, Instance, Module, ProgramFile, ProgramSet, show, type_name


class RunError(Exception):
    """A mistake the program made; the interpreter adds where."""


NUMBERS = (int, float, bool)
VALUE_OPERANDS = (Value, int, float, bool)
BIG = 2**63
NOT_ON_STRINGS = "this operation needs numbers or Values, not a string"
FORMAT_SPEC = r"[<>^=]?[+\- ]?#?0?\d{0,3}[,_]?(?:\.\d{1,2})?[eEfFgGdn%xXobs]?"
WIDE_FORMAT_SPEC = r"[<>^=]?[+\- ]?#?0?\d*[,_]?(?:\.\d+)?[eEfFgGdn%xXobs]?"  # the same, any width and precision


# +, - and * where an operand is a float: Python's float result (an int too large for a float raises
# OverflowError here as in B.add and B.mul, and the guard reports it the same)
FLOAT_OPERATIONS = {"Add": operator.add, "Sub": operator.sub, "Mult": operator.mul}


def whole_or_float(x):
    """An int result that grew past 64 bits becomes a float (Infinity past float's range)."""
    if type(x) is int and not -BIG <= x <= BIG:
        try:
            return float(x)
        except OverflowError:
            return math.inf if x > 0 else -math.inf  # copysign(inf, x) would convert x to a float too
    return x


def _operands_error(symbol, a, b):
    if (type(a) is str) != (type(b) is str):
        return RunError(f"`{symbol}` does not work on {type_name(a)} and {type_name(b)}; write str(x) to join a number")
    return RunError(f"`{symbol}` does not work on {type_name(a)} and {type_name(b)}")


def _value_or_fail(symbol, a, b):
    if type(a) not in VALUE_OPERANDS or type(b) not in VALUE_OPERANDS:
        raise _operands_error(symbol, a, b)


def add(a, b):
    ta, tb = type(a), type(b)
    if ta is Value or tb is Value:
        _value_or_fail("+", a, b)
        return a + b
    if ta in NUMBERS and tb in NUMBERS:
        return whole_or_float(a + b)
    if ta is tb and ta in (list, tuple, str):
        return a + b  # lengths checked by the caller
    raise _operands_error("+", a, b)


def sub(a, b):
    ta, tb = type(a), type(b)
    if ta is Value or tb is Value:
        _value_or_fail("-", a, b)
        return a - b
    if ta in NUMBERS and tb in NUMBERS:
        return whole_or_float(a - b)
    raise _operands_error("-", a, b)


def mul(a, b):
    ta, tb = type(a), type(b)
    if ta is Value or tb is Value:
        _value_or_fail("*", a, b)
        return a * b
    if ta in NUMBERS and tb in NUMBERS:
        return whole_or_float(a * b)
    if ta in (list, tuple, str) and tb in (int, bool) or tb in (list, tuple, str) and ta in (int, bool):
        return a * b  # lengths checked by the caller
    raise _operands_error("*", a, b)


def truediv(a, b):
    ta, tb = type(a), type(b)
    if ta is Value or tb is Value:
        _value_or_fail("/", a, b)
        return a / b
    if ta in NUMBERS and tb in NUMBERS:
        return ieee.divide(float(a), float(b))
    raise _operands_error("/", a, b)


def power(a, b):
    ta, tb = type(a), type(b)
    if tb is Value:
        if ta in VALUE_OPERANDS:
            raise RunError(VALUE_EXPONENT_MESSAGE)
        raise _operands_error("**", a, b)
    if ta is Value:
        _value_or_fail("**", a, b)
        return a ** float(b) if tb is bool else a**b
    if ta in NUMBERS and tb in NUMBERS:
        if ta is not float and tb is not float and b >= 0:
            if abs(a) > 1 and b * (int(abs(a)).bit_length() - 1) >= 64:  # past 64 bits: never made whole
                return ieee.power(float(a), float(b))
            return whole_or_float(a**b)
        return ieee.power(float(a), float(b))
    raise _operands_error("**", a, b)


def floordiv(a, b):
    if type(a) in NUMBERS and type(b) in NUMBERS:
        if b == 0:
            return ieee.divide(float(a), 0.0) if a != 0 else math.nan
        try:
            return a // b
        except OverflowError:
            return math.nan
    if type(a) is Value or type(b) is Value:
        raise RunError("`//` is not a Value operation; write `/` (or use `//` on .data)")
    raise _operands_error("//", a, b)


def mod(a, b):
    if type(a) in NUMBERS and type(b) in NUMBERS:
        if b == 0:
            return math.nan
        try:
            return a % b
        except (OverflowError, ValueError):
            return math.nan
    if type(a) is Value or type(b) is Value:
        raise RunError("`%` is not a Value operation; use `%` on .data")
    raise _operands_error("%", a, b)


BINARY = {"Add": add, "Sub": sub, "Mult": mul, "Div": truediv, "Pow": power, "FloorDiv": floordiv, "Mod": mod}
SYMBOLS = {"Add": "+", "Sub": "-", "Mult": "*", "Div": "/", "Pow": "**", "FloorDiv": "//", "Mod": "%"}


def negate(a):
    if type(a) is Value:
        return -a
    if type(a) in NUMBERS:
        return whole_or_float(-a)
    raise RunError(NOT_ON_STRINGS if type(a) is str else f"`-` does not work on {type_name(a)}")


def positive(a):
    if type(a) in NUMBERS:
        return +a
    raise RunError(f"`+x` works on plain numbers only, not on {type_name(a)}")


ORDER = {"Lt": operator.lt, "LtE": operator.le, "Gt": operator.gt, "GtE": operator.ge}
ORDER_SYMBOLS = {"Lt": "<", "LtE": "<=", "Gt": ">", "GtE": ">="}


def compare(kind, a, b):
    if kind in ORDER:
        if type(a) in NUMBERS and type(b) in NUMBERS or type(a) is str and type(b) is str:
            return ORDER[kind](a, b)
        if type(a) is type(b) and type(a) in (tuple, list):
            try:  # item by item, as Python orders them; Values and instances inside have no order
                return ORDER[kind](a, b)
            except TypeError:
                raise RunError(
                    f"`{ORDER_SYMBOLS[kind]}` compares {type_name(a)}s of plain numbers or strings only"
                ) from None
        if type(a) is Value or type(b) is Value:
            raise RunError(
                f"`{ORDER_SYMBOLS[kind]}` compares plain numbers; for a Value compare its .data, as in x.data > 0"
            )
        raise RunError(f"`{ORDER_SYMBOLS[kind]}` compares plain numbers, not {type_name(a)} and {type_name(b)}")
    if kind == "Eq":
        return a == b
    if kind == "NotEq":
        return a != b
    if kind == "Is":
        return a is b
    if kind == "IsNot":
        return a is not b
    if type(b) is str:
        if type(a) is not str:
            raise RunError(f"`in` on a string looks for a string, not {type_name(a)}")
        return (a in b) if kind == "In" else (a not in b)
    if type(b) not in (list, tuple, dict, range, ProgramSet):
        raise RunError(f"`in` looks in a list, tuple, dict, set, range or string, not in {type_name(b)}")
    if type(b) is ProgramSet:
        hashable(a)
    elif type(b) is dict:
        dict_key(a)
    return (a in b) if kind == "In" else (a not in b)


# ---- iteration, bounded ----


def iterate(value):
    """A Python iterator over what a `for` may walk: lists, tuples, dict keys, ranges, strings (their
    characters), open files (their lines), zip and enumerate objects and generator expressions."""
    kind = type(value)
    if kind in (list, tuple, dict, range, ProgramSet, str, ProgramFile) or kind in ITERATORS:
        return iter(value)
    raise RunError(
        f"cannot loop over {type_name(value)}: loop over a list, a tuple, a range, a string, zip(...) or enumerate(...)"
    )


ITERATORS = {
    type(zip()),
    type(enumerate(())),
    type(iter(())),
    type(iter([])),
    type(iter(range(0))),
    type((i for i in ())),
    type(reversed([])),
    type(reversed(())),
    type(iter("")),
    type(reversed("")),
}


def collect(state, value, what):
    """All items of an iterable as a list, refusing more than the collection length limit."""
    limit = state.limits.max_collection_length
    if type(value) in (list, tuple, dict, range, ProgramSet, str) and len(value) > limit:
        raise RunError(f"{what} would hold {len(value):,} items; the limit is {limit:,}")
    items = list(itertools.islice(iterate(value), limit + 1))
    if len(items) > limit:
        raise RunError(f"{what} would hold more than {limit:,} items; the limit is {limit:,}")
    state.count(len(items))
    return items


def collect_lazily(state, value, what):
    """The items one by one (a generator's code runs in step with the consumer, as in Python),
    refusing more than the collection length limit."""
    limit = state.limits.max_collection_length
    statements = state.limits.max_statements
    for count, item in enumerate(iterate(value)):
        if count >= limit:
            raise RunError(f"{what} would take more than {limit:,} items; the limit is {limit:,}")
        state.steps += 1  # each item may make a Value (sum does): it counts as a statement (State.count, inline)
        if state.steps > statements:
            state.count(0)
        yield item


# ---- built-in functions: run(state, args, kwargs) ----


def _arity(name, args, kwargs, least, most, keywords=()):
    for key in kwargs:
        if key not in keywords:
            raise RunError(f"{name}() takes no argument named {key[:40]!r}")
    if not least <= len(args) <= most:
        expected = str(least) if least == most else f"{least} to {most}"
        raise RunError(f"{name}() takes {expected} argument{'s' if most != 1 else ''}, got {len(args)}")


def _int_argument(name, value):
    if type(value) not in (int, bool):
        raise RunError(f"{name}() needs whole numbers (int), not {type_name(value)}")
    return int(value)


def builtin_range(state, args, kwargs):
    _arity("range", args, kwargs, 1, 3)
    return range(*(_int_argument("range", a) for a in args))


def builtin_len(state, args, kwargs):
    _arity("len", args, kwargs, 1, 1)
    (value,) = args
    if type(value) not in (list, tuple, dict, range, str, ProgramSet):
        raise RunError(f"len() takes a list, tuple, dict, set, range or string, not {type_name(value)}")
    try:
        return len(value)
    except OverflowError:
        raise RunError("len() of a range this long is not a number valuegraph can use") from None


def builtin_sum(state, args, kwargs):
    _arity("sum", args, kwargs, 1, 2, ("start",))
    total = args[1] if len(args) == 2 else kwargs.get("start", 0)
    site = state.site  # the items may run code (a generator) that makes Values of its own
    for item in collect_lazily(state, args[0], "sum()"):
        total = state.binary("Add", total, item)
        state.mark(total, site)
    return total


def _extreme(name, pick):
    def run(state, args, kwargs):
        _arity(name, args, kwargs, 1, 1 << 30, ("key",))
        items = collect(state, args[0], f"{name}()") if len(args) == 1 else list(args)
        if not items:
            raise RunError(f"{name}() of an empty list")
        key = kwargs.get("key")
        keys = [state.call(key, (item,), {}) for item in items] if key is not None else items
        best = 0
        for i in range(1, len(items)):
            if state.compare(pick, keys[i], keys[best]):
                best = i
        return items[best]

    return run


def builtin_abs(state, args, kwargs):
    _arity("abs", args, kwargs, 1, 1)
    if type(args[0]) not in NUMBERS:
        raise RunError(
            f"abs() works on plain numbers, not {type_name(args[0])}"
            + ("; for a Value use x.data" if type(args[0]) is Value else "")
        )
    return abs(args[0])


def builtin_zip(state, args, kwargs):
    if len(args) == 2 and not kwargs:  # zip(xs, ys), the usual call
        return zip(iterate(args[0]), iterate(args[1]))
    _arity("zip", args, kwargs, 1, 16)
    return zip(*[iterate(a) for a in args])


def builtin_enumerate(state, args, kwargs):
    _arity("enumerate", args, kwargs, 1, 2, ("start",))
    start = _int_argument("enumerate", args[1] if len(args) == 2 else kwargs.get("start", 0))
    return enumerate(iterate(args[0]), start)


def builtin_map(state, args, kwargs):
    _arity("map", args, kwargs, 2, 16)
    function, iterables = args[0], [iterate(a) for a in args[1:]]
    site = state.site  # the Values it makes are the map(...) call's

    def results():
        for items in zip(*iterables):
            result = state.call(function, items, {})
            state.mark(result, site)
            yield result

    return results()


def builtin_print(state, args, kwargs):
    _arity("print", args, kwargs, 0, 1 << 30, ("sep", "end"))
    sep, end = kwargs.get("sep", " "), kwargs.get("end", "\n")
    for text in (sep, end):
        if text is not None and type(text) is not str:
            raise RunError("print()'s sep and end must be strings")
    sep = " " if sep is None else sep
    # Joined only as far as the output has room (each value's own text is still made, its __repr__
    # run): a long sep between many values would otherwise be built whole, 10**11 characters at the limits.
    room = state.limits.max_printed_characters - state.printed_characters + 1
    parts, size = [], 0
    for i, value in enumerate(args):
        text = state.text_of(value, max(room - size, 1))
        if size <= room:
            parts.extend((sep, text) if i else (text,))
            size += len(text) + (len(sep) if i else 0)
    state.write("".join(parts) + ("\n" if end is None else end))
    return None


def builtin_isinstance(state, args, kwargs):
    if kwargs or len(args) != 2:
        _arity("isinstance", args, kwargs, 2, 2)
    value, kinds = args
    for kind in kinds if type(kinds) is tuple else (kinds,):
        if type(kind) is BuiltinType:
            if type(value) in kind.python_types:
                return True
        elif type(kind) is Class:
            if type(value) is Instance and (value.cls is kind or value.cls.is_subclass_of(kind)):
                return True
        elif kind is VALUE_CLASS:
            if type(value) is Value:
                return True
        else:
            raise RunError(f"isinstance()'s second argument must be a class, not {type_name(kind)}")
    return False


def builtin_sorted(state, args, kwargs):
    _arity("sorted", args, kwargs, 1, 1, ("key", "reverse"))
    items = collect(state, args[0], "sorted()")
    key = kwargs.get("key")
    keys = [state.call(key, (item,), {}) for item in items] if key is not None else items
    reverse = bool(kwargs.get("reverse"))

    def order(i, j):  # reversed, equal items still keep their order, as in Python
        a, b = (keys[j], keys[i]) if reverse else (keys[i], keys[j])
        return -1 if state.compare("Lt", a, b) else 1 if state.compare("Lt", b, a) else 0

    return [items[i] for i in sorted(range(len(items)), key=functools.cmp_to_key(order))]


def builtin_reversed(state, args, kwargs):
    _arity("reversed", args, kwargs, 1, 1)
    if type(args[0]) not in (list, tuple, range, str):
        raise RunError(f"reversed() takes a list, tuple, range or string, not {type_name(args[0])}")
    return reversed(args[0])


def builtin_round(state, args, kwargs):
    _arity("round", args, kwargs, 1, 2, ("ndigits",))
    number, digits = args[0], args[1] if len(args) == 2 else kwargs.get("ndigits")
    if type(number) not in NUMBERS or (digits is not None and type(digits) not in (int, bool)):
        raise RunError(f"round() takes a plain number and a whole number of digits, not {type_name(number)}")
    if number != number or number in (math.inf, -math.inf):
        if digits is None:
            raise RunError(f"round() of {show(number, 20)} is not a whole number")
        return number
    return whole_or_float(round(number)) if digits is None else round(number, max(-400, min(400, int(digits))))


def builtin_hasattr(state, args, kwargs):
    _arity("hasattr", args, kwargs, 2, 2)
    obj, name = args
    if type(name) is not str:
        raise RunError(f"hasattr()'s second argument must be a string, not {type_name(name)}")
    try:
        state.get_attribute(obj, name)
    except RunError:
        return False
    return True


def hashable(item, held_as="set"):
    """`item`, refused as Python refuses what a set cannot hold (held_as="dict": a key a dict cannot hold), before
    anything hashes it. A tuple's items are checked by recursion in Python, whose limit ends a deeply nested one;
    CPython itself hashes a nested tuple by recursion in C, without a limit: 200,000 levels crashed the process."""
    kind = type(item)
    if kind is str or kind is int or kind is float:  # most items: nothing to check
        return item
    if kind is tuple:
        for part in item:
            hashable(part, held_as)
    elif kind in (list, dict, ProgramSet):
        raise RunError(
            f"a set cannot hold a {type_name(item)} (unhashable type)"
            if held_as == "set"
            else f"a dict key must be a number, string, tuple or Value, not a {type_name(item)}"
        )
    elif kind is Instance and not item.cls.equal_by_identity:
        where = "a set cannot hold" if held_as == "set" else "a dict key cannot be"
        raise RunError(f"{where} a {item.cls.name}: its class defines __eq__, which makes it unhashable in Python")
    return item


def dict_key(key):
    """`key`, refused as Python refuses a key a dict cannot hold (hashable's checks)."""
    return hashable(key, "dict")


def _to_set(state, args, kwargs):
    _arity("set", args, kwargs, 0, 1)
    if args and type(args[0]) is str:  # set(text): its distinct characters, however long the text
        state.count(len(args[0]))
        return ProgramSet(args[0])
    return make_set(state, collect(state, args[0], "set()") if args else [])


def make_set(state, items):
    for item in items:
        hashable(item)
    return ProgramSet(items)


def _to_float(state, args, kwargs):
    _arity("float", args, kwargs, 0, 1)
    if not args:
        return 0.0
    value = args[0]
    if type(value) in NUMBERS:
        return float(value) if abs(value) < 1e308 or type(value) is float else ieee.INF
    if type(value) is str and len(value) < 100:
        try:
            return float(value)
        except ValueError:
            raise RunError(f"float() cannot read {value!r} as a number") from None
    raise RunError(
        f"float() takes a plain number, not {type_name(value)}"
        + ("; for a Value use x.data" if type(value) is Value else "")
    )


def _to_int(state, args, kwargs):
    _arity("int", args, kwargs, 0, 1)
    if not args:
        return 0
    value = args[0]
    if type(value) in NUMBERS:
        if value != value or value in (math.inf, -math.inf):
            raise RunError(f"int() of {show(value, 20)} is not a whole number")
        return whole_or_float(int(value))
    if type(value) is str and len(value) < 100:
        try:
            return int(value)
        except ValueError:
            raise RunError(f"int() cannot read {value!r} as a whole number") from None
    raise RunError(
        f"int() takes a plain number, not {type_name(value)}"
        + ("; for a Value use x.data" if type(value) is Value else "")
    )


def _to_list(state, args, kwargs):
    _arity("list", args, kwargs, 0, 1)
    return collect(state, args[0], "list()") if args else []


def _to_tuple(state, args, kwargs):
    _arity("tuple", args, kwargs, 0, 1)
    return tuple(collect(state, args[0], "tuple()")) if args else ()


def _to_dict(state, args, kwargs):
    """dict(), dict(mapping), dict(pairs) as in dict(zip(keys, values)), each with keyword items after."""
    _arity("dict", args, kwargs, 0, 1, tuple(kwargs))
    limit = state.limits.max_collection_length
    made = {}
    if args and type(args[0]) is dict:
        made.update(args[0])
        state.count(len(made))
    elif args:
        for i, pair in enumerate(iterate(args[0])):  # the dict's size is bounded below, as it grows
            state.count(1)
            if type(pair) not in (tuple, list, str) or len(pair) != 2:
                sized = type(pair) in (tuple, list, str)
                shown = f"a {type_name(pair)} of {len(pair)}" if sized else f"of type {type_name(pair)}"
                raise RunError(f"dict() needs (key, value) pairs; item {i} is {shown}")
            made[dict_key(pair[0])] = pair[1]
            if len(made) > limit:
                raise RunError(f"a dict would hold more than {limit:,} items; the limit is {limit:,}")
    made.update(kwargs)
    if len(made) > limit:
        raise RunError(f"a dict would hold {len(made):,} items; the limit is {limit:,}")
    return made


def _to_str(state, args, kwargs):
    _arity("str", args, kwargs, 0, 1)
    return state.text_of(args[0]) if args else ""


def check_text_length(state, length):
    """Refuse a string of `length` characters past the text length limit, before it is built."""
    limit = state.limits.max_text_length
    if length > limit:
        raise RunError(f"a string would be {length:,} characters long; the limit is {limit:,}")


def check_text_operation(state, a, b):
    """a + b or a * b, when an operand is a string: its length checked without building it."""
    if type(a) is str and type(b) is str:
        check_text_length(state, len(a) + len(b))
    elif type(a) is str and type(b) in (int, bool):
        check_text_length(state, len(a) * max(b, 0))
    elif type(b) is str and type(a) in (int, bool):
        check_text_length(state, len(b) * max(a, 0))


# ---- str methods: run(state, text, args, kwargs), Python's own on the program's strings ----


def _strings(name, args):
    for a in args:
        if a is not None and type(a) is not str:
            raise RunError(f"{name}() takes strings, not {type_name(a)}")


def join(state, separator, args, kwargs):
    _arity("join", args, kwargs, 1, 1)
    items = collect(state, args[0], "join()")
    if not all(type(item) is str for item in items):
        raise RunError("join() takes strings; write str(x) for other values")
    check_text_length(state, sum(map(len, items)) + len(separator) * max(len(items) - 1, 0))
    return separator.join(items)


def _strip(name):
    def run(state, text, args, kwargs):
        _arity(name, args, kwargs, 0, 1)
        _strings(name, args)
        return getattr(text, name)(*args)

    return run


def _split(name):
    def run(state, text, args, kwargs):
        _arity(name, args, kwargs, 0, 2, ("sep", "maxsplit"))
        separator = args[0] if args else kwargs.get("sep")
        most = args[1] if len(args) == 2 else kwargs.get("maxsplit", -1)
        _strings(name, (separator,))
        if separator == "":
            raise RunError(f"{name}() cannot split on an empty separator")
        parts = getattr(text, name)(separator, _int_argument(name, most))
        state.count(len(parts))
        return _bounded_parts(state, name, parts)

    return run


def _search(name):
    """index, find, count, startswith, endswith: a string (or a tuple of them) and optional bounds."""

    def run(state, text, args, kwargs):
        _arity(name, args, kwargs, 1, 3)
        wanted, bounds = args[0], [_int_argument(name, a) if a is not None else None for a in args[1:]]
        if type(wanted) is tuple and name in ("startswith", "endswith"):
            _strings(name, wanted)
        else:
            _strings(name, (wanted,))
        if name == "index" and text.find(wanted, *bounds) < 0:
            raise RunError(f"index(): {show(wanted, 40, True)} is not in the string")
        return getattr(text, name)(wanted, *bounds)

    return run


def _no_arguments(name):
    def run(state, text, args, kwargs):
        _arity(name, args, kwargs, 0, 0)
        return getattr(text, name)()

    return run


def _replace(state, text, args, kwargs):
    _arity("replace", args, kwargs, 2, 3)
    old, new = args[0], args[1]
    _strings("replace", (old, new))
    most = _int_argument("replace", args[2]) if len(args) == 3 else -1
    times = text.count(old) if old else len(text) + 1
    if most >= 0:
        times = min(times, most)
    check_text_length(state, len(text) + times * (len(new) - len(old)))
    return text.replace(old, new, most)


def _splitlines(state, text, args, kwargs):
    _arity("splitlines", args, kwargs, 0, 1, ("keepends",))
    parts = text.splitlines(bool(args[0] if args else kwargs.get("keepends", False)))
    state.count(len(parts))
    return _bounded_parts(state, "splitlines", parts)


def _bounded_parts(state, name, parts):
    """A string's parts (no more of them than its characters, which the text limit bounds), refused past the
    collection length limit as every list is."""
    limit = state.limits.max_collection_length
    if len(parts) > limit:
        raise RunError(f"{name}() would make a list of {len(parts):,} items; the limit is {limit:,}")
    return parts


STR_METHODS = {
    "join": join,
    "strip": _strip("strip"),
    "lstrip": _strip("lstrip"),
    "rstrip": _strip("rstrip"),
    "split": _split("split"),
    "rsplit": _split("rsplit"),
    "splitlines": _splitlines,
    "index": _search("index"),
    "find": _search("find"),
    "count": _search("count"),
    "startswith": _search("startswith"),
    "endswith": _search("endswith"),
    "replace": _replace,
    **{name: _no_arguments(name) for name in ("lower", "upper", "isalpha", "isdigit", "isspace", "isupper", "islower")},
}


# ---- files given with the program (read only) and os.path.exists ----

WRITING_REFUSED = (
    "writing files is not available: valuegraph only reads the files given in Files; print what you want to keep"
)


def builtin_open(state, args, kwargs):
    _arity("open", args, kwargs, 1, 2, ("mode", "encoding"))
    name = args[0]
    mode = args[1] if len(args) == 2 else kwargs.get("mode", "r")
    if type(name) is not str or type(mode) is not str:
        raise RunError("open() takes a file name and a mode, as in open('input.txt')")
    if mode not in ("r", "rt", "tr"):
        raise RunError(
            WRITING_REFUSED
            if set(mode) & set("wax+")
            else f"open(): the mode {mode[:10]!r} is not available; read with 'r'"
        )
    if name not in state.files:
        given = ", ".join(sorted(state.files)[:10]) or "none"
        raise RunError(f"no file named {name[:100]!r}: add {name[:100]} in Files (files given: {given})")
    return ProgramFile(name, state.files[name])


def _file_read(state, file, args, kwargs):
    _arity("read", args, kwargs, 0, 0)
    return file.read()


def _file_readline(state, file, args, kwargs):
    _arity("readline", args, kwargs, 0, 0)
    return file.readline()


def _file_readlines(state, file, args, kwargs):
    _arity("readlines", args, kwargs, 0, 0)
    return collect(state, file, "readlines()")


def _file_close(state, file, args, kwargs):
    _arity("close", args, kwargs, 0, 0)


FILE_METHODS = {"read": _file_read, "readline": _file_readline, "readlines": _file_readlines, "close": _file_close}


def os_module():
    def exists(state, args, kwargs):
        _arity("os.path.exists", args, kwargs, 1, 1)
        if type(args[0]) is not str:
            raise RunError(f"os.path.exists() takes a file name, not {type_name(args[0])}")
        return args[0] in state.files

    path = Module("os.path", {"exists": Builtin("os.path.exists", exists)})
    return Module("os", {"path": path})


def builtin_repr(state, args, kwargs):
    _arity("repr", args, kwargs, 1, 1)
    if type(args[0]) is Instance:
        return state.describe(args[0])
    return show(args[0], state.limits.max_text_length + 1, True, state.describe)


def _to_bool(state, args, kwargs):
    _arity("bool", args, kwargs, 0, 1)
    return bool(args[0]) if args else False


# ---- Value ----


def make_value(state, args, kwargs):
    for key in kwargs:
        if key != "label":
            hint = "; the graph is built by the operations" if key in ("_children", "_op") else ""
            raise RunError(f"Value() takes data and label=, not {key[:40]}={hint}")
    if len(args) != 1:
        raise RunError(
            f"Value() takes one number (and label='...'), got {len(args)} arguments"
            + ("; the graph is built by the operations" if len(args) > 1 else "")
        )
    data = args[0]
    if type(data) not in NUMBERS:
        raise RunError(
            f"Value() takes a plain number, not {type_name(data)}"
            + ("; a Value is already one" if type(data) is Value else "")
        )
    label = kwargs.get("label")
    if label is not None and type(label) is not str:
        raise RunError(f"label= takes a string, not {type_name(label)}")
    try:
        return Value(data, label=label or None)
    except OverflowError:
        return Value(math.copysign(math.inf, data), label=label or None)


VALUE_CLASS = Builtin("Value", make_value)


def _object_init(state, args, kwargs):
    if args or kwargs:
        raise RunError("object.__init__() takes no arguments: no class after this one defines __init__")


OBJECT_INIT = Builtin("object.__init__", _object_init)  # super().__init__() where no base defines one
VALUE_ATTRIBUTES = ("data", "grad", "label")
VALUE_METHODS = ("tanh", "exp", "log", "relu", "backward")


def value_attribute(value, name):
    if name == "data":
        return value.data
    if name == "grad":
        return value.grad
    if name == "label":
        return value.label or ""
    raise RunError(
        f"a Value has no attribute {name[:40]!r}; it has .data, .grad, .label and the methods "
        f"{', '.join(VALUE_METHODS)}()"
    )


def set_value_attribute(value, name, new):
    if name in ("data", "grad"):
        if type(new) not in NUMBERS:
            raise RunError(
                f".{name} takes a plain number, not {type_name(new)}"
                + ("; write .data of the other Value" if type(new) is Value else "")
            )
        setattr(value, name, float(whole_or_float(new)))
    elif name == "label":
        if type(new) is not str:
            raise RunError(f".label takes a string, not {type_name(new)}")
        value.label = new or None
    else:
        raise RunError(f"a Value's attributes are .data, .grad and .label; it cannot take {name[:40]!r}")


# ---- math and random ----


def _number_function(module, name, function, places=1):
    def run(state, args, kwargs):
        _arity(f"{module}.{name}", args, kwargs, places, places + (name == "log"))
        for a in args:
            if type(a) not in NUMBERS:
                hint = f"; for a Value write x.{name}()" if type(a) is Value and name in VALUE_METHODS else ""
                raise RunError(f"{module}.{name}() works on plain numbers, not {type_name(a)}{hint}")
        return function(*(float(a) for a in args))

    return run


def _log(x, base=None):
    return ieee.log(x) if base is None else ieee.divide(ieee.log(x), ieee.log(base))


def _sqrt(x):
    return math.sqrt(x) if x >= 0 or x != x else math.nan


def math_module():
    functions = {"exp": ieee.exp, "log": _log, "sqrt": _sqrt, "tanh": math.tanh}
    attributes = {name: Builtin(f"math.{name}", _number_function("math", name, f)) for name, f in functions.items()}
    attributes.update(pi=math.pi, e=math.e)
    return Module("math", attributes)


def random_module(rng):
    def seed(state, args, kwargs):
        _arity("random.seed", args, kwargs, 0, 1)
        if args and type(args[0]) not in (int, float, bool, str, type(None)):
            raise RunError(f"random.seed() takes a number, not {type_name(args[0])}")
        rng.seed(args[0] if args else state.seed)  # never from the clock: runs repeat
        return None

    def uniform(state, args, kwargs):
        _arity("random.uniform", args, kwargs, 2, 2)
        _all_numbers("random.uniform", args)
        return rng.uniform(*args)

    def random_(state, args, kwargs):
        _arity("random.random", args, kwargs, 0, 0)
        return rng.random()

    def gauss(state, args, kwargs):
        _arity("random.gauss", args, kwargs, 0, 2, ("mu", "sigma"))
        _all_numbers("random.gauss", [*args, *kwargs.values()])
        return rng.gauss(*args, **kwargs)

    def choice(state, args, kwargs):
        _arity("random.choice", args, kwargs, 1, 1)
        if type(args[0]) not in (list, tuple, range, str) or not args[0]:
            raise RunError("random.choice() takes a non-empty list, tuple, range or string")
        return rng.choice(args[0])

    def choices(state, args, kwargs):
        _arity("random.choices", args, kwargs, 1, 2, ("weights", "cum_weights", "k"))
        population = args[0]
        if type(population) not in (list, tuple, range, str) or not population:
            raise RunError("random.choices() takes a non-empty list, tuple, range or string")
        k = _int_argument("random.choices", kwargs.get("k", 1))
        if k > state.limits.max_collection_length:
            raise RunError(
                f"random.choices() would pick {k:,} items; the limit is {state.limits.max_collection_length:,}"
            )
        weights = args[1] if len(args) == 2 else kwargs.get("weights")
        cumulative = kwargs.get("cum_weights")
        for name, given in (("weights", weights), ("cum_weights", cumulative)):
            if given is not None:
                given = collect(state, given, f"random.choices() {name}")
                _all_numbers("random.choices", given)
                if len(given) != len(population):
                    raise RunError(f"random.choices(): {len(given)} {name} for {len(population)} items")
                if name == "weights":
                    weights = given
                else:
                    cumulative = given
        if weights is not None and cumulative is not None:
            raise RunError("random.choices() takes weights or cum_weights, not both")
        state.count(max(k, 0))
        try:
            return rng.choices(population, weights, cum_weights=cumulative, k=k)
        except ValueError as error:  # CPython's own message: weights summing to zero, NaN or Infinity
            raise RunError(f"random.choices(): {error}") from None

    def shuffle(state, args, kwargs):
        _arity("random.shuffle", args, kwargs, 1, 1)
        if type(args[0]) is not list:
            raise RunError(f"random.shuffle() shuffles a list in place, not {type_name(args[0])}")
        state.count(len(args[0]))
        rng.shuffle(args[0])

    runs = {
        "seed": seed,
        "uniform": uniform,
        "random": random_,
        "gauss": gauss,
        "choice": choice,
        "choices": choices,
        "shuffle": shuffle,
    }
    return Module("random", {name: Builtin(f"random.{name}", run) for name, run in runs.items()})


def _all_numbers(name, args):
    for a in args:
        if type(a) not in NUMBERS:
            raise RunError(f"{name}() takes plain numbers, not {type_name(a)}")


def builtin_names():
    """The names every program starts with (besides imports)."""
    names = {
        "range": builtin_range,
        "len": builtin_len,
        "sum": builtin_sum,
        "zip": builtin_zip,
        "enumerate": builtin_enumerate,
        "min": _extreme("min", "Lt"),
        "max": _extreme("max", "Gt"),
        "abs": builtin_abs,
        "print": builtin_print,
        "map": builtin_map,
        "isinstance": builtin_isinstance,
        "sorted": builtin_sorted,
        "reversed": builtin_reversed,
        "hasattr": builtin_hasattr,
        "round": builtin_round,
        "open": builtin_open,
        "repr": builtin_repr,
    }
    table = {name: Builtin(name, run) for name, run in names.items()}
    table.update(
        float=BuiltinType("float", (float,), _to_float),
        int=BuiltinType("int", (int, bool), _to_int),
        bool=BuiltinType("bool", (bool,), _to_bool),
        list=BuiltinType("list", (list,), _to_list),
        tuple=BuiltinType("tuple", (tuple,), _to_tuple),
        dict=BuiltinType("dict", (dict,), _to_dict),
        str=BuiltinType("str", (str,), _to_str),
        set=BuiltinType("set", (ProgramSet,), _to_set),
        NotImplemented=NotImplemented,
    )
    return table


def format_value(value, spec: str, longest: int, describe=None) -> str:
    """An f-string field: Python's format() for numbers with a short written-out spec."""
    if not spec:
        return show(value, longest + 1, describe=describe)
    if len(spec) > 20 or not re.fullmatch(FORMAT_SPEC, spec):
        if re.fullmatch(WIDE_FORMAT_SPEC, spec):
            raise RunError(f"the format :{spec[:20]} is too wide: widths go up to 999 and precisions up to 99")
        raise RunError(f"the format {spec[:20]!r} is not available; use a width and precision such as :8.4f")
    if type(value) not in NUMBERS and not (type(value) is str and spec[-1:] not in "eEfFgGdn%xXob"):
        raise RunError(
            f"the format :{spec} works on plain numbers, not {type_name(value)}"
            + ("; format x.data" if type(value) is Value else "")
        )
    try:
        return format(value, spec)
    except ValueError:
        raise RunError(f"the format :{spec} does not fit a {type_name(value)}") from None


# list and dict methods a program may call: name -> run(state, container, args, kwargs)


def _list_append(state, items, args, kwargs):
    if kwargs or len(args) != 1:
        _arity("append", args, kwargs, 1, 1)
    if len(items) >= state.limits.max_collection_length:
        raise RunError(
            f"the list would hold more than {state.limits.max_collection_length:,} items; the limit is "
            f"{state.limits.max_collection_length:,}"
        )
    items.append(args[0])


def _list_extend(state, items, args, kwargs):
    _arity("extend", args, kwargs, 1, 1)
    more = collect(state, args[0], "extend()")
    if len(items) + len(more) > state.limits.max_collection_length:
        raise RunError(
            f"the list would hold more than {state.limits.max_collection_length:,} items; the limit is "
            f"{state.limits.max_collection_length:,}"
        )
    items.extend(more)


def _list_pop(state, items, args, kwargs):
    _arity("pop", args, kwargs, 0, 1)
    if not items:
        raise RunError("pop() from an empty list")
    index = _int_argument("pop", args[0]) if args else -1
    if not -len(items) <= index < len(items):
        raise RunError(f"pop() index {index} is out of range for a list of {len(items)}")
    return items.pop(index)


def _list_insert(state, items, args, kwargs):
    _arity("insert", args, kwargs, 2, 2)
    if len(items) >= state.limits.max_collection_length:
        raise RunError(f"the list would hold more than {state.limits.max_collection_length:,} items")
    items.insert(_int_argument("insert", args[0]), args[1])


def _list_index(state, items, args, kwargs):
    _arity("index", args, kwargs, 1, 1)
    for i, item in enumerate(items):
        if state.same(item, args[0]):
            return i
    raise RunError("index(): the item is not in the list")


def _list_reverse(state, items, args, kwargs):
    _arity("reverse", args, kwargs, 0, 0)
    items.reverse()


def _dict_view(name):
    def run(state, items, args, kwargs):
        _arity(name, args, kwargs, 0, 0)
        return list(getattr(items, name)())

    return run


def _dict_get(state, items, args, kwargs):
    _arity("get", args, kwargs, 1, 2)
    return items.get(dict_key(args[0]), args[1] if len(args) == 2 else None)


LIST_METHODS = {
    "append": _list_append,
    "extend": _list_extend,
    "pop": _list_pop,
    "insert": _list_insert,
    "index": _list_index,
    "reverse": _list_reverse,
}


def _set_add(state, items, args, kwargs):
    if kwargs or len(args) != 1:
        _arity("add", args, kwargs, 1, 1)
    hashable(args[0])
    if args[0] not in items.items and len(items.items) >= state.limits.max_collection_length:
        raise RunError(f"the set would hold more than {state.limits.max_collection_length:,} items")
    items.items[args[0]] = None


def _set_discard(state, items, args, kwargs):
    _arity("discard", args, kwargs, 1, 1)
    hashable(args[0])
    items.items.pop(args[0], None)


def _set_remove(state, items, args, kwargs):
    _arity("remove", args, kwargs, 1, 1)
    hashable(args[0])
    if args[0] not in items.items:
        raise RunError("remove(): the item is not in the set")
    del items.items[args[0]]


def _set_update(state, items, args, kwargs):
    _arity("update", args, kwargs, 1, 1)
    for item in collect(state, args[0], "update()"):
        _set_add(state, items, (item,), {})


SET_METHODS = {"add": _set_add, "discard": _set_discard, "remove": _set_remove, "update": _set_update}
DICT_METHODS = {
    "keys": _dict_view("keys"),
    "values": _dict_view("values"),
    "items": _dict_view("items"),
    "get": _dict_get,
}
