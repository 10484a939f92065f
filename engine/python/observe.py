"""The graph of a program's own value class, observed: which of its objects are nodes, their
op and local gradients, the gradients the program's own backward() left on them, and the
order its backward steps ran in. One set of rules for every style of class (the course's,
micrograd's, microgpt's), read from the fields an object holds, not from the class's name:

- a node holds a number in `data` (or `Data`, `value`) and its inputs in `_children`,
  `children`, `_prev`, `_inputs` or `inputs` (a tuple, list or set; a set iterates in the order
  the creating method passed the inputs, see objects.ProgramSet);
- its op is `_op`/`op` when it holds one, else the special method whose call returned it
  (`__mul__` makes `*`);
- its local gradients are `_local_grads`/`local_grads`/`localGrads` when it holds them, else
  derived from the op and the inputs' data (None when the op is not one the course defines)."""

import math

from ..syntax import NO_ORIGIN
from ..value import Value
from . import builtins as B
from .objects import Instance, ProgramSet, type_name

DATA_FIELDS = ("data", "Data", "value")
INPUT_FIELDS = ("_children", "children", "_prev", "_inputs", "inputs")
OP_FIELDS = ("_op", "op")
LOCAL_GRAD_FIELDS = ("_local_grads", "local_grads", "localGrads")
OP_OF_METHOD = {
    "__add__": "+",
    "__radd__": "+",
    "__sub__": "-",
    "__rsub__": "-",
    "__mul__": "*",
    "__rmul__": "*",
    "__truediv__": "/",
    "__rtruediv__": "/",
    "__pow__": "**",
    "__neg__": "neg",
}
NUMBERS = (int, float, bool)


def node_fields(obj):
    """(data field, inputs field) of an object that is a node, else None."""
    if type(obj) is not Instance:
        return None
    fields = obj.fields
    for data in DATA_FIELDS:
        if data in fields:
            for inputs in INPUT_FIELDS:
                if inputs in fields:
                    return (data, inputs) if type(fields[inputs]) in INPUT_KINDS else None
            return None
    return None


INPUT_KINDS = (tuple, list, ProgramSet)


def observe(output, walk, limits):
    """The graph `output` reaches, as plain data: {"nodes": [...], "output": id, "walk": [...],
    "inputs_are_sets": bool, "backward": bool}. Nodes come in creation order (ids are the order
    objects were made); `walk` is None when the program never called the class's backward()."""
    reached = {id(output): (output, node_fields(output))}  # id -> (object, its fields' names)
    pending = [output]
    while pending:
        obj = pending.pop()
        inputs = reached[id(obj)][1][1]
        for child in obj.fields[inputs]:
            if id(child) not in reached:
                names = node_fields(child)
                if names is None:
                    raise B.RunError(
                        f"a {obj.cls.name}'s {inputs} holds a {type_name(child)}: the inputs of a node must be nodes"
                    )
                reached[id(child)] = (child, names)
                pending.append(child)
                if len(reached) > limits.max_nodes:
                    limit = limits.max_nodes
                    raise B.RunError(f"the graph has more than {limit:,} nodes; the limit is {limit:,}")
    objects = sorted(reached.values(), key=lambda pair: pair[0].serial)
    nodes = [_node(obj, names, reached) for obj, names in objects]
    # Where each node was made: the program's code that returned it, else (made inside a method
    # and never returned to the program, as the -1 of `a - b`) the code that made the next node.
    origin = NO_ORIGIN
    for node, (obj, _) in zip(reversed(nodes), reversed(objects)):
        origin = obj.site or origin
        node["origin"] = origin
    return {
        "nodes": nodes,
        "output": output.serial,
        "walk": _steps(walk or [], reached),
        "backward": walk is not None,
        "inputs_are_sets": any(type(obj.fields[names[1]]) is ProgramSet for obj, names in objects),
    }


def _number(obj, field):
    value = obj.fields[field]
    if type(value) not in NUMBERS:
        raise B.RunError(
            f"a {obj.cls.name} looks like a value (it has .{field} and inputs) but its .{field} holds a "
            f"{type_name(value)}, not a number"
        )
    return float(value)


def _node(obj, names, reached):
    data_field, inputs_field = names
    fields = obj.fields
    inputs = list(fields[inputs_field])
    data = _number(obj, data_field)
    op = next((fields[name] for name in OP_FIELDS if name in fields), None)
    if op is None or op == "":
        op = OP_OF_METHOD.get(obj.made_by, obj.made_by) if inputs else None
    elif type(op) is not str:
        op = str(op) if type(op) in NUMBERS else None
    stored = next((fields[name] for name in LOCAL_GRAD_FIELDS if name in fields), None)
    if type(stored) in (tuple, list) and all(type(g) in NUMBERS for g in stored):
        local_grads, derived = [float(g) for g in stored], False
    else:
        xs = [_number(i, reached[id(i)][1][0]) for i in inputs]
        local_grads, derived = derive_local_grads(op, data, xs), True
    grad = fields.get("grad")
    label = fields.get("label")
    return {
        "id": obj.serial,
        "label": label if type(label) is str and label else obj.name,
        "op": op or None,
        "data": data,
        "grad": float(grad) if type(grad) in NUMBERS else None,
        "children": [child.serial for child in inputs],
        "local_grads": local_grads,
        "local_grads_derived": derived,
        "class": obj.cls.name,
    }


def derive_local_grads(op, data, inputs):
    """The local gradient of each input from the op's rule, or None when the op is not known."""
    if not inputs:
        return []
    op = (op or "").strip()
    try:
        if op == "+":
            return [1.0] * len(inputs) if len(inputs) > 1 else [2.0]  # x + x, its inputs kept in a set: one input
        if op == "*" and len(inputs) == 2:
            return [inputs[1], inputs[0]]
        if op == "*" and len(inputs) == 1:  # x * x, its inputs kept in a set
            return [2 * inputs[0]]
        if op == "-" and len(inputs) == 1:
            return [0.0]  # x - x, its inputs kept in a set
        if op == "-" and len(inputs) == 2:
            return [1.0, -1.0]
        if op == "/" and len(inputs) == 2:
            a, b = inputs
            return [1.0 / b, -a / (b * b)]
        if op == "neg" and len(inputs) == 1:
            return [-1.0]
        if op.startswith("**") and len(inputs) == 1:
            n = float(op[2:])
            return [n * inputs[0] ** (n - 1)]
        if op.lower() == "relu" and len(inputs) == 1:
            return [1.0 if data > 0 else 0.0]
        if op == "tanh" and len(inputs) == 1:
            return [1.0 - data * data]
        if op == "exp" and len(inputs) == 1:
            return [data]
        if op == "log" and len(inputs) == 1:
            return [1.0 / inputs[0]]
    except (ValueError, ZeroDivisionError, OverflowError):
        return [math.nan] * len(inputs)
    return None


def _steps(walk, reached):
    """The recorded walk as steps: each `_backward` call of a node is a step with the grads it
    wrote; a grad written outside any `_backward` call (the seed, a loop over the nodes) is a
    step of its own. Writes to objects outside the graph are left out."""
    steps = []
    for event in walk:
        if event[0] == "step":
            steps.append({"node": event[1].serial if id(event[1]) in reached else None, "updates": []})
        elif id(event[1]) in reached:
            update = [event[1].serial, float(event[2]) if type(event[2]) in NUMBERS else None]
            if event[3] and steps:  # written inside a _backward call
                steps[-1]["updates"].append(update)
            else:
                steps.append({"node": None, "updates": [update]})
    return steps


def as_engine_graph(graph):
    """The observed graph as valuegraph's own Values (same data, children, local gradients, op),
    for the parts of valuegraph that draw and check a graph of Values; the learner's grads stay in
    `graph`. A local gradient valuegraph cannot derive is NaN."""
    made = {}
    for node in graph["nodes"]:
        children = tuple(made[child] for child in node["children"])
        local_grads = node["local_grads"] if node["local_grads"] is not None else [math.nan] * len(children)
        op = node["op"] or ("?" if children else None)
        made[node["id"]] = Value(node["data"], children, tuple(local_grads), op, node["label"])
    return made[graph["output"]]


def learner_walk(graph):
    """The program's own backward as steps over the graph's node positions (the answer's ids):
    [{"node": id or None, "updates": [{"child": id, "grad": its grad after the write}]}].

    A `_backward` call is one step of its node. A backward written as a loop over the nodes
    (the course's and microgpt's `for v in reversed(topo): for child, local in zip(...)`) writes
    the inputs' grads one at a time with no call to say whose step it is; a run of such writes
    that goes to one node's inputs in order, each adding (or, the `=` mistake, setting) that
    input's local gradient times the node's grad at the time, is that node's step. Any other
    write (the seed, a reset) is a step with node None."""
    nodes = graph["nodes"]
    position = {node["id"]: i for i, node in enumerate(nodes)}
    steps = []
    for step in graph["walk"]:
        updates = [{"child": position[child], "grad": grad} for child, grad in step["updates"] if child in position]
        node = position.get(step["node"])
        if node is not None or updates:
            steps.append({"node": node, "updates": updates})
    return _attribute_loop_writes(steps, nodes, position)


def _attribute_loop_writes(steps, nodes, position):
    children = [[position[c] for c in node["children"]] for node in nodes]
    with_inputs = {}  # the inputs in order -> the nodes that have them: a run of writes finds its node at once
    for i, inputs in enumerate(children):
        if inputs:
            with_inputs.setdefault(tuple(inputs), []).append(i)
    arities = sorted({len(inputs) for inputs in with_inputs})
    grads = [0.0] * len(nodes)  # each node's grad as the writes so far left it
    written = [False] * len(nodes)
    attributed, k = [], 0
    while k < len(steps):
        step = steps[k]
        parent = None
        if _single_write(step):
            # First as if every grad started at 0; then, for a backward() that did not reset them,
            # without checking the first write to each grad.
            candidates = []
            for arity in arities:
                run = steps[k : k + arity]
                if len(run) == arity and all(map(_single_write, run)):
                    candidates += with_inputs.get(tuple(s["updates"][0]["child"] for s in run), ())
            parent = next(
                (
                    p
                    for unknown_start in (False, True)
                    for p in candidates
                    if _passes_on(
                        steps[k : k + len(children[p])], children[p], nodes[p], grads[p], grads, written, unknown_start
                    )
                ),
                None,
            )
        if parent is None:
            attributed.append(step)
            k += 1
        else:
            step = {"node": parent, "updates": [s["updates"][0] for s in steps[k : k + len(children[parent])]]}
            attributed.append(step)
            k += len(children[parent])
        for update in step["updates"]:
            grads[update["child"]] = update["grad"]
            written[update["child"]] = True
    return attributed


def _single_write(step):
    return step["node"] is None and len(step["updates"]) == 1


def _passes_on(run, inputs, parent, parent_grad, grads, written, unknown_start):
    """Whether these single writes are `child.grad += local * parent.grad` (or, the `=` mistake,
    `child.grad = local * parent.grad`) for each input in turn."""
    if len(run) != len(inputs) or parent["local_grads"] is None or parent_grad is None:
        return False
    seen = {}
    for step, child, local in zip(run, inputs, parent["local_grads"]):
        if step["node"] is not None or len(step["updates"]) != 1 or step["updates"][0]["child"] != child:
            return False
        after = step["updates"][0]["grad"]
        before = seen.get(child, grads[child])
        unchecked = unknown_start and child not in seen and not written[child]
        seen[child] = after
        if unchecked:
            continue
        if after is None or before is None:
            return False
        passed = local * parent_grad
        if not any(math.isclose(after, value, rel_tol=1e-9, abs_tol=1e-12) for value in (before + passed, passed)):
            return False
    return True
