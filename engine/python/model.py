"""The object model: what `obj.name` and `obj[key]` read and write, for every kind of object a
program holds (Values, instances of its classes, classes, modules, lists, tuples, dicts)."""

from ..value import Value
from . import builtins as B
from .objects import BoundMethod, Class, Function, Instance, Module, show, type_name


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
    raise B.RunError(f"{type_name(obj)} has no attribute {name[:40]!r} here")


def set_attribute(obj, name, value):
    kind = type(obj)
    if kind is Value:
        B.set_value_attribute(obj, name, value)
    elif kind is Instance:
        obj.fields[name] = value
    else:
        raise B.RunError(f"cannot set attributes on {type_name(obj)}")


def check_length(state, length):
    limit = state.limits.max_collection_length
    if length > limit:
        raise B.RunError(f"a list would hold {length:,} items; the limit is {limit:,}")


def get_item(state, obj, key):
    kind = type(obj)
    if kind in (list, tuple, range):
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
            return obj[key]
        except KeyError:
            raise B.RunError(f"the dict has no key {show(key, 40, True)}") from None
    raise B.RunError(
        f"{type_name(obj)} cannot be indexed" + ("; strings are only used as labels" if kind is str else "")
    )


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
        if key not in obj:
            check_length(state, len(obj) + 1)
        obj[key] = value
    else:
        raise B.RunError(f"cannot assign into a {type_name(obj)}" + (": tuples cannot change" if kind is tuple else ""))
