"""Graphs built with other Value classes, read as they are and rebuilt as engine.Values:

- PyPI micrograd's `micrograd.engine.Value`: `_prev` is a set of children, `_op` a string
  ('+', '*', '**n', 'ReLU', and 'tanh'/'exp' in the lecture's version), no local gradients.
  They are derived from the op and the children's data, as micrograd's own _backward closures
  compute them. The children come in the order the set gives, which is what micrograd itself
  walks, but a set's order is not stable between runs (MICROGRAD_ORDER_NOTE says so to the
  reader). A set also folds `a + a` into one child: a two-input op with one child is read as
  that child twice.
- the course's Value (`_children`, `_local_grads`, no op): the op is recognised from the data
  and the local gradients (c = a + b has (1, 1), c = a * b has (b, a), ...).

Anything that does not add up, an unknown op, a wrong number of children, data that its
children do not give (a graph changed after it was built), is a GraphMismatch naming the node
(its label if it has one, else its place and data) and why.
"""

import inspect
import math
import types

from engine import Value, ieee

MICROGRAD_ORDER_NOTE = (
    "This graph was built with micrograd's Value, which keeps a node's children in a set: the order "
    "of the children shown here is the set's, which Python does not keep stable from one run to the next."
)


NAME_SEARCH_BUDGET = 20_000  # objects held_names looks at, at most
_NOT_SEARCHED = (str, bytes, int, float, complex, type, types.ModuleType, types.FunctionType, types.MethodType)


class GraphMismatch(ValueError):
    pass


def kind_of(output) -> str:
    """'engine', 'micrograd' or 'course'; TypeError for anything else."""
    if isinstance(output, Value):
        return "engine"
    if hasattr(output, "_prev") and hasattr(output, "_op") and hasattr(output, "data"):
        return "micrograd"
    if hasattr(output, "_children") and hasattr(output, "_local_grads") and hasattr(output, "data"):
        return "course"
    raise TypeError(
        "show() and export() take an engine.Value, PyPI micrograd's Value or the course's Value, not "
        f"{type(output).__name__}"
    )


def held_names(*namespaces, budget: int = NAME_SEARCH_BUDGET) -> dict:
    """{id(value): the name a program would call it by} for every Value-like object that the
    namespaces (mappings of name -> object, such as a caller's locals) hold: directly (`w`), or
    inside lists, tuples, dicts and objects' attributes (`xs[0]`, `model.layers[0].neurons[1].b`),
    as torchviz names tensors by a params dict. Breadth first, so a value held twice goes by its
    shortest name, the earlier namespace winning ties. Names starting with "_" (IPython's output
    history) are skipped, and at most `budget` objects are looked at, so a notebook full of data
    costs no more than that. Only containers' items and instance dicts are read: no property or
    __getattr__ of the user's objects runs."""
    names, seen = {}, set()
    level = [(name, held) for namespace in namespaces for name, held in namespace.items() if _public(name)]
    while level and budget > 0:
        deeper = []
        for name, held in level:
            budget -= 1
            if budget < 0:
                break
            if id(held) in seen or isinstance(held, _NOT_SEARCHED):
                continue
            seen.add(id(held))
            if _is_value_like(held):
                names.setdefault(id(held), name)
            elif isinstance(held, (list, tuple)):
                deeper.extend((f"{name}[{i}]", item) for i, item in enumerate(held))
            elif isinstance(held, dict):
                deeper.extend((f"{name}[{key!r}]", item) for key, item in held.items() if isinstance(key, (str, int)))
            else:
                try:
                    attributes = vars(held)
                except TypeError:  # no instance dict (a number, a string, an object with __slots__)
                    continue
                if isinstance(attributes, dict):
                    deeper.extend((f"{name}.{key}", item) for key, item in attributes.items() if _public(key))
        level = deeper
    return names


def _public(name) -> bool:
    return isinstance(name, str) and not name.startswith("_")


def _is_value_like(held) -> bool:
    """kind_of's test, read without running the object's own __getattr__ (a mock says it has every attribute)."""
    if isinstance(held, Value):
        return True
    has = lambda name: inspect.getattr_static(held, name, _MISSING) is not _MISSING  # noqa: E731
    return has("data") and (has("_prev") and has("_op") or has("_children") and has("_local_grads"))


_MISSING = object()


def as_engine_value(output, names: dict | None = None) -> Value:
    """The same graph as engine.Values (the input is not changed). `names` ({id(node): name}, as
    held_names gives) labels the nodes that carry no label of their own. An engine graph is copied
    only where names label one of its nodes; otherwise it is output itself."""
    kind = kind_of(output)
    names = names or {}
    if kind == "engine":
        if not names:
            return output
        read = _engine_node
        children_of = lambda node: list(node._children)  # noqa: E731
    else:
        read = _micrograd_node if kind == "micrograd" else _course_node
        children_of = (lambda node: list(node._prev)) if kind == "micrograd" else (lambda node: list(node._children))
    built = {}  # id(foreign node) -> engine.Value
    # Post-order with an explicit stack (a deep chain must not hit the recursion limit), so
    # children are built first and creation order is a topological order.
    stack = [(output, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in built:
            continue
        if expanded:
            value = read(node, [built[id(child)] for child in children_of(node)])
            if value.label is None and id(node) in names:
                value.label = names[id(node)]
            built[id(node)] = value
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(children_of(node)) if id(child) not in built)
    return built[id(output)]


def _name(node, data: float) -> str:
    label = getattr(node, "label", None)
    return f"node '{label}' (data {data!r})" if isinstance(label, str) and label else f"the node with data {data!r}"


def _label(node):
    label = getattr(node, "label", None)
    return label if isinstance(label, str) and label else None


def _number(node) -> float:
    try:
        return float(node.data)
    except (TypeError, ValueError):
        raise GraphMismatch(f"a node's data is {node.data!r}, not a number") from None


def _engine_node(node: Value, children: list[Value]) -> Value:
    return Value(node.data, tuple(children), node._local_grads, node.op, node.label, node.exponent)


def _micrograd_node(node, children: list[Value]) -> Value:
    data, op = _number(node), node._op
    if not isinstance(op, str):
        raise GraphMismatch(f"{_name(node, data)}: _op is {op!r}, not a string")
    if op == "":
        if children:
            raise GraphMismatch(f"{_name(node, data)} has no _op but {len(children)} children")
        return Value(data, label=_label(node))
    if op in ("+", "*"):
        if len(children) == 1:  # a + a or a * a: the set kept one
            children = children * 2
        if len(children) != 2:
            raise GraphMismatch(f"{_name(node, data)}: '{op}' takes 2 inputs, its _prev holds {len(children)}")
        a, b = children
        expected, local = (a.data + b.data, (1.0, 1.0)) if op == "+" else (a.data * b.data, (b.data, a.data))
        return _checked(node, data, op, expected, Value(data, tuple(children), local, op, _label(node)))
    if not op.startswith("**") and op not in ("ReLU", "tanh", "exp", "log"):
        raise GraphMismatch(
            f"{_name(node, data)}: unknown _op {op!r} (known: '+', '*', '**n', 'ReLU', 'tanh', 'exp', 'log')"
        )
    (child,) = _one_child(node, data, op, children)
    x = child.data
    if op.startswith("**"):
        try:
            n = float(op[2:])
        except ValueError:
            raise GraphMismatch(f"{_name(node, data)}: cannot read the exponent of _op {op!r}") from None
        local, expected, engine_op, exponent = n * ieee.power(x, n - 1), ieee.power(x, n), "**", n
    elif op == "ReLU":
        # micrograd's own rule: (out.data > 0) * out.grad
        local, expected, engine_op, exponent = (1.0 if data > 0 else 0.0), (0.0 if x < 0 else x), "relu", None
    elif op == "tanh":
        local, expected, engine_op, exponent = 1.0 - data * data, math.tanh(x), "tanh", None
    elif op == "exp":
        local, expected, engine_op, exponent = data, ieee.exp(x), "exp", None
    else:  # log
        local, expected, engine_op, exponent = ieee.divide(1.0, x), ieee.log(x), "log", None
    return _checked(node, data, op, expected, Value(data, (child,), (local,), engine_op, _label(node), exponent))


def _one_child(node, data, op, children):
    if len(children) != 1:
        raise GraphMismatch(f"{_name(node, data)}: '{op}' takes 1 input, its _prev holds {len(children)}")
    return children


def _checked(node, data: float, op: str, expected: float, value: Value) -> Value:
    if not _close(data, expected):
        raise GraphMismatch(
            f"{_name(node, data)}: '{op}' of its children's data gives {expected!r}; the graph changed after it was "
            "built (for example by an optimiser step): run the forward pass again before showing it"
        )
    return value


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-300)


# The course's Value: each candidate op, as (name, exponent or None) -> does it explain the node?
def _course_node(node, children: list[Value]) -> Value:
    data = _number(node)
    try:
        local = tuple(float(g) for g in node._local_grads)
    except (TypeError, ValueError):
        raise GraphMismatch(f"{_name(node, data)}: _local_grads is {node._local_grads!r}, not numbers") from None
    if len(local) != len(children):
        raise GraphMismatch(f"{_name(node, data)} has {len(children)} children but {len(local)} local gradients")
    if not children:
        return Value(data, label=_label(node))
    op, exponent = _recognise(data, [child.data for child in children], local)
    if op is None:
        raise GraphMismatch(
            f"{_name(node, data)}: its data and local gradients {list(local)} match none of +, *, **, log, exp, relu, "
            f"tanh applied to its children's data {[child.data for child in children]}"
        )
    return Value(data, tuple(children), local, op, _label(node), exponent)


def _recognise(data: float, xs: list[float], local: tuple) -> tuple[str | None, float | None]:
    if len(xs) == 2:
        a, b = xs
        if local == (1.0, 1.0) and _close(data, a + b):
            return "+", None
        if _close(local[0], b) and _close(local[1], a) and _close(data, a * b):
            return "*", None
        return None, None
    if len(xs) != 1:
        return None, None
    (x,), (g,) = xs, local
    candidates = [
        ("exp", _close(data, ieee.exp(x)) and _close(g, data)),
        ("log", _close(data, ieee.log(x)) and _close(g, ieee.divide(1.0, x))),
        ("tanh", _close(data, math.tanh(x)) and _close(g, 1.0 - data * data)),
        ("relu", _close(data, max(x, 0.0)) and g == (1.0 if x > 0 else 0.0)),
    ]
    for op, fits in candidates:
        if fits:
            return op, None
    if x != 0 and data != 0 and math.isfinite(g):
        n = g * x / data  # from g = n * x**(n - 1) and data = x**n
        rounded = round(n)
        n = float(rounded) if _close(n, rounded) else n
        if _close(data, ieee.power(x, n)) and _close(g, n * ieee.power(x, n - 1)):
            return "**", n
    return None, None
