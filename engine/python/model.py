"""The object model: what `obj.name` and `obj[key]` read and write, for every kind of object a
program holds (Values, instances of its classes, classes, modules, lists, tuples, dicts), and
what an operator does on an instance of a program's class: it calls the class's special
method as CPython does (the reflected method when the left one is missing or answers
NotImplemented, the right operand's first when its class is a subclass that overrides it)."""

from ..value import Value
from . import builtins as B
from .idioms import NOT_DONE
from .objects import MISSING, BoundMethod, Class, Function, Instance, Module, Super, show, type_name


def get_attribute(obj, name):
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
    if kind is Super:
        found = obj.lookup(name)
        if found is MISSING:
            if name == "__init__":  # object's own: takes nothing, does nothing
                return B.OBJECT_INIT
            raise B.RunError(
                f"super(): no class after {obj.after.name} in {obj.instance.cls.name}'s bases has {name[:40]!r}"
            )
        return found
    raise B.RunError(f"{type_name(obj)} has no attribute {name[:40]!r} here")


def set_attribute(obj, name, value):
    kind = type(obj)
    if kind is Value:
        B.set_value_attribute(obj, name, value)
    elif kind is Instance:
        slots = obj.cls.slots
        if slots is not None and name not in slots:
            raise B.RunError(
                f"a {obj.cls.name} cannot take the attribute {name[:40]!r}: "
                f"its __slots__ lists {', '.join(sorted(slots))}"
            )
        obj.fields[name] = value
    else:
        raise B.RunError(f"cannot set attributes on {type_name(obj)}")


def check_length(state, length, what="a list"):
    limit = state.limits.max_collection_length
    if length > limit:
        raise B.RunError(f"{what} would hold {length:,} items; the limit is {limit:,}")


def get_item(state, obj, key):
    kind = type(obj)
    if kind in (list, tuple, range, str):
        if type(key) in (int, bool):
            try:
                return obj[key]
            except IndexError:
                raise B.RunError(f"index {key} is out of range for a {type_name(obj)} of {len(obj)}") from None
        if type(key) is slice:
            part = obj[key]
            state.count(len(part))
            return part
        raise B.RunError(f"a {type_name(obj)} index must be a whole number, not {type_name(key)}")
    if kind is dict:
        try:
            return obj[B.dict_key(key)]
        except KeyError:
            raise B.RunError(f"the dict has no key {show(key, 40, True)}") from None
    raise B.RunError(f"{type_name(obj)} cannot be indexed")


def set_item(state, obj, key, value):
    kind = type(obj)
    if kind is list:
        if type(key) not in (int, bool):
            raise B.RunError(f"a list index must be a whole number, not {type_name(key)}")
        try:
            obj[key] = value
        except IndexError:
            raise B.RunError(f"index {key} is out of range for a list of {len(obj)}") from None
    elif kind is dict:
        if B.dict_key(key) not in obj:
            check_length(state, len(obj) + 1, "a dict")
        obj[key] = value
    else:
        unchangeable = {tuple: ": tuples cannot change", str: ": strings cannot change; build a new one"}
        raise B.RunError(f"cannot assign into a {type_name(obj)}" + unchangeable.get(kind, ""))


# ---- operators on instances of the program's classes ----

SPECIAL = {  # operator: (method, reflected method, symbol)
    "Add": ("__add__", "__radd__", "+"),
    "Sub": ("__sub__", "__rsub__", "-"),
    "Mult": ("__mul__", "__rmul__", "*"),
    "Div": ("__truediv__", "__rtruediv__", "/"),
    "Pow": ("__pow__", "__rpow__", "**"),
    "FloorDiv": ("__floordiv__", "__rfloordiv__", "//"),
    "Mod": ("__mod__", "__rmod__", "%"),
}
COMPARISONS = {  # comparison: (method, reflected method, symbol)
    "Eq": ("__eq__", "__eq__", "=="),
    "NotEq": ("__ne__", "__ne__", "!="),
    "Lt": ("__lt__", "__gt__", "<"),
    "LtE": ("__le__", "__ge__", "<="),
    "Gt": ("__gt__", "__lt__", ">"),
    "GtE": ("__ge__", "__le__", ">="),
}


def _method(obj, name):
    """The program's method `name` of an instance's class, or None."""
    if type(obj) is not Instance:
        return None
    attributes = obj.cls.attributes  # the class's own first, inline: every operator on instances asks
    method = attributes[name] if name in attributes else obj.cls.get(name)
    return method if type(method) is Function else None


def _dispatch(state, a, b, name, reflected, comparing=False):
    """CPython's order for `a op b` when an operand is an instance: NotImplemented when neither
    side's method gives an answer. A comparison (`comparing`) tries b's reflected method even where
    both are of one class (`a > b` by b's __lt__); an arithmetic operator, as in CPython, does not."""
    forward = _method(a, name)
    backward = None
    if type(b) is Instance and (comparing or not (type(a) is Instance and a.cls is b.cls)):
        backward = _method(b, reflected)
    if backward is not None and type(a) is Instance and b.cls.is_subclass_of(a.cls):
        if backward is not _method(a, reflected):  # the subclass's own reflected method goes first
            result = state.call_function(backward, (b, a), {})
            if result is not NotImplemented:
                return result
            backward = None
    if forward is not None:
        result = state.call_function(forward, (a, b), {})
        if result is not NotImplemented:
            return made(result, name)
    if backward is not None:
        result = state.call_function(backward, (b, a), {})
        if result is not NotImplemented:
            return made(result, reflected)
    return NotImplemented


def _compare_items(state, kind, a, b):
    """`in` and == (!=) on a list or tuple as CPython decides them where a class of the program defines __eq__:
    item by item, two items equal when they are the same object or == says so. (Python's own `in` and == on
    lists know only the identity of the program's objects.) Where neither side holds an instance, or a list
    or tuple that could, Python's own answer is the same, at C's speed."""
    if kind == "In" or kind == "NotIn":
        if type(a) is Instance or type(a) is list or type(a) is tuple or not _plain(b):
            found = any(same(state, item, a) for item in b)
            return found if kind == "In" else not found
    elif (kind == "Eq" or kind == "NotEq") and type(a) is type(b) and not (_plain(a) and _plain(b)):
        equal = len(a) == len(b) and all(same(state, x, y) for x, y in zip(a, b))
        return equal if kind == "Eq" else not equal
    return B.compare(kind, a, b)


def _plain(items) -> bool:
    """Whether no item is an instance, a list or a tuple (a set of the items' types: C's speed)."""
    return _NOT_PLAIN.isdisjoint(set(map(type, items)))


_NOT_PLAIN = frozenset({Instance, list, tuple})


def same(state, x, y) -> bool:
    """Whether a container would take x and y for equal: the same object, or equal by ==."""
    return x is y or bool(compare(state, "Eq", x, y))


def made(result, method):
    """result, an instance a method of its class made, marked with that method as its op when it names none."""
    if type(result) is Instance and result.made_by is None:
        result.made_by = method
    return result


def binary(state, kind, a, b):
    if type(a) is not Instance and type(b) is not Instance:
        return B.BINARY[kind](a, b)
    name, reflected, symbol = SPECIAL[kind]
    if type(a) is Instance and (type(b) is not Instance or b.cls is a.cls):
        # `a * 2`, `a * b` of one class: a's own method is the only one _dispatch would try
        forward = _method(a, name)
        if forward is None:
            result = NotImplemented
        else:
            one_step = state.operators.get(forward.body)
            result = NOT_DONE if one_step is None else one_step(forward, a, b)
            if result is NOT_DONE:
                result = state.call_function(forward, (a, b), {})
        if type(result) is Instance and result.made_by is None:  # made(), inline: every operator on instances
            result.made_by = name
    else:
        result = _dispatch(state, a, b, name, reflected)
    if result is NotImplemented:
        raise B.RunError(f"unsupported operand type(s) for {symbol}: '{type_name(a)}' and '{type_name(b)}'")
    if kind == "Pow" and type(result) is Instance and result.made_by == name and type(b) in (int, float):
        result.made_by = f"**{b}"  # the op with its exponent, as micrograd names it
    return result


def negate(state, a):
    if type(a) is not Instance:
        return B.negate(a)
    method = _method(a, "__neg__")
    if method is None:
        raise B.RunError(f"bad operand type for unary -: '{a.cls.name}' (its class has no __neg__)")
    return made(state.call_function(method, (a,), {}), "__neg__")


def compare(state, kind, a, b):
    if (type(a) is not Instance and type(b) is not Instance) or kind not in COMPARISONS:
        if state.own_equality and (type(b) is list or type(b) is tuple):
            return _compare_items(state, kind, a, b)
        return B.compare(kind, a, b)
    name, reflected, symbol = COMPARISONS[kind]
    result = _dispatch(state, a, b, name, reflected, comparing=True)
    if result is not NotImplemented:
        return result
    if kind == "Eq":
        return a is b
    if kind == "NotEq":
        equal = compare(state, "Eq", a, b)
        return not equal
    raise B.RunError(f"'{symbol}' not supported between instances of '{type_name(a)}' and '{type_name(b)}'")
