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
from itertools import islice
from operator import attrgetter
from typing import NamedTuple

from ..syntax import NO_ORIGIN
from ..value import Value
from . import builtins as B
from .objects import Instance, ProgramSet, type_name

DATA_FIELDS = ("data", "Data", "value")
INPUT_FIELDS = ("_children", "children", "_prev", "_inputs", "inputs")
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
IS_NUMBER = frozenset(NUMBERS)
SERIAL = attrgetter("serial")


def node_fields(obj):
    """(data field, inputs field) of an object that is a node, else None."""
    if type(obj) is not Instance:
        return None
    fields = obj.fields
    if "data" in fields and "_children" in fields:  # the first of each, as the course's class names them
        return ("data", "_children") if type(fields["_children"]) in INPUT_KINDS else None
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
    objects were made); `walk` is None when the program never called the class's backward(). The
    observed walk is a list of steps (node, writes): the position in nodes of the node whose
    `_backward` call the step is (None for a write outside any call, or a call of an object outside
    the graph), and the grads it wrote, as (position, grad) pairs."""
    names = node_fields(output)
    reached = {id(output): (output, names)}  # id -> (object, its fields' names)
    pending = [(output, names[1])]
    max_nodes = limits.max_nodes
    while pending:
        obj, inputs = pending.pop()
        for child in obj.fields[inputs]:
            if id(child) not in reached:
                names = node_fields(child)
                if names is None:
                    raise B.RunError(
                        f"a {obj.cls.name}'s {inputs} holds a {type_name(child)}: the inputs of a node must be nodes"
                    )
                reached[id(child)] = (child, names)
                pending.append((child, names[1]))
                if len(reached) > max_nodes:
                    raise B.RunError(f"the graph has more than {max_nodes:,} nodes; the limit is {max_nodes:,}")
    objects = sorted(reached.values(), key=_serial)
    # Where each node was made: the program's code that returned it, else (made inside a method
    # and never returned to the program, as the -1 of `a - b`) the code that made the next node.
    origins, origin = [], NO_ORIGIN
    for obj, _ in reversed(objects):
        origin = obj.site or origin
        origins.append(origin)
    origins.reverse()
    nodes, inputs_are_sets = [], False
    for (obj, (data_field, inputs_field)), origin in zip(objects, origins):
        fields = obj.fields
        held = fields[inputs_field]
        if type(held) is ProgramSet:
            inputs_are_sets = True
        inputs = list(held)
        data = fields[data_field]
        if type(data) not in NUMBERS:
            _number(obj, data_field)  # raises, saying what it holds
        data = float(data)
        op = fields["_op"] if "_op" in fields else fields.get("op")  # the first of _op, op it holds
        if op is None or op == "":
            op = OP_OF_METHOD.get(obj.made_by, obj.made_by) if inputs else None
        elif type(op) is not str:
            op = str(op) if type(op) in NUMBERS else None
        stored = (  # the first of _local_grads, local_grads, localGrads it holds
            fields["_local_grads"]
            if "_local_grads" in fields
            else fields["local_grads"]
            if "local_grads" in fields
            else fields.get("localGrads")
        )
        if type(stored) in (tuple, list) and all(map(IS_NUMBER.__contains__, map(type, stored))):
            local_grads = list(map(float, stored))
        else:
            local_grads = derive_local_grads(op, data, [_number(i, reached[id(i)][1][0]) for i in inputs])
        grad = fields.get("grad")
        label = fields.get("label")
        nodes.append(
            {
                "id": obj.serial,
                "label": label if type(label) is str and label else obj.name,
                "op": op or None,
                "data": data,
                "grad": float(grad) if type(grad) in NUMBERS else None,
                "children": list(map(SERIAL, inputs)),
                "local_grads": local_grads,
                "origin": origin,
            }
        )
    return {
        "nodes": nodes,
        "output": output.serial,
        "walk": _steps(walk or [], {id(obj): i for i, (obj, _) in enumerate(objects)}),
        "backward": walk is not None,
        "inputs_are_sets": inputs_are_sets,
    }


def _serial(pair):
    return pair[0].serial


def _number(obj, field):
    value = obj.fields[field]
    if type(value) not in NUMBERS:
        raise B.RunError(
            f"a {obj.cls.name} looks like a value (it has .{field} and inputs) but its .{field} holds a "
            f"{type_name(value)}, not a number"
        )
    return float(value)


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


def _steps(walk, position):
    """The recorded walk as steps: each `_backward` call of a node is a step with the grads it
    wrote; a grad written outside any `_backward` call (the seed, a loop over the nodes) is a
    step of its own. Writes to objects outside the graph (position: id(object) -> its position
    in the graph's nodes) are left out, and so is a call that wrote none of the graph's grads."""
    steps, calls = [], False
    for event in walk:
        at = position.get(id(event[1]))
        if event[0] == "step":
            steps.append((at, []))
            calls = True
        elif at is not None:
            write = (at, float(event[2]) if type(event[2]) in NUMBERS else None)
            if event[3] and steps:  # written inside a _backward call
                steps[-1][1].append(write)
            else:
                steps.append((None, [write]))
    if not calls:
        return steps
    return [step for step in steps if step[0] is not None or step[1]]


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


class LearnerWalk(NamedTuple):
    """The program's own backward as flat lists, one entry per step in `node` and `count`, one per
    write in `child` and `grad`: step i is the step of node[i] (None: writes outside any node's step)
    and wrote count[i] grads, the next ones of `child`, each left holding its entry of `grad`."""

    node: list
    count: list
    child: list
    grad: list

    def steps(self, start=0, stop=None) -> list:
        """Steps start..stop as records: [{"node": id or None, "updates": [{"child": id, "grad": g}]}]."""
        stop = len(self.node) if stop is None else stop
        write = sum(islice(self.count, start))
        records = []
        for node, count in zip(self.node[start:stop], self.count[start:stop]):
            records.append(
                {
                    "node": node,
                    "updates": [{"child": self.child[j], "grad": self.grad[j]} for j in range(write, write + count)],
                }
            )
            write += count
        return records


def learner_walk(graph) -> LearnerWalk:
    """The program's own backward as steps over the graph's node positions (the answer's ids).

    A `_backward` call is one step of its node. A backward written as a loop over the nodes
    (the course's and microgpt's `for v in reversed(topo): for child, local in zip(...)`) writes
    the inputs' grads one at a time with no call to say whose step it is; a run of such writes
    that goes to one node's inputs in order, each adding (or, the `=` mistake, setting) that
    input's local gradient times the node's grad at the time, is that node's step. Any other
    write (the seed, a reset) is a step with node None."""
    nodes = graph["nodes"]
    walk = graph["walk"]
    # A step that is one write outside any _backward call (most of a loop's): where and what it wrote.
    single = [writes[0][0] if node is None and len(writes) == 1 else -1 for node, writes in walk]
    after = [writes[0][1] if len(writes) == 1 else None for _, writes in walk]
    return _attribute_loop_writes(walk, single, after, nodes)


def _attribute_loop_writes(walk, single, after, nodes):
    position = {node["id"]: i for i, node in enumerate(nodes)}
    children = [tuple(map(position.__getitem__, node["children"])) for node in nodes]
    # Per number of inputs, the inputs in order (one input: the input itself) -> the nodes that have them:
    # a run of single writes finds the nodes it may be a step of at once.
    users = {}
    for i, inputs in enumerate(children):
        if inputs:
            users.setdefault(len(inputs), {}).setdefault(inputs[0] if len(inputs) == 1 else inputs, []).append(i)
    by_arity = sorted(users.items())
    local_grads = [node["local_grads"] for node in nodes]
    grads = [0.0] * len(nodes)  # each node's grad as the writes so far left it
    written = [False] * len(nodes)
    attributed = LearnerWalk([], [], [], [])
    step_nodes, counts, written_children, written_grads = attributed
    k, count = 0, len(single)
    while k < count:
        child = single[k]
        parent = None
        if child >= 0:
            # First as if every grad started at 0; then, for a backward() that did not reset them,
            # without checking the first write to each grad.
            for unknown_start in (False, True):
                for arity, with_inputs in by_arity:  # the run as long as some node's inputs, to those inputs
                    if k + arity > count:
                        break
                    key = (
                        child if arity == 1 else (child, single[k + 1]) if arity == 2 else tuple(single[k : k + arity])
                    )
                    for p in with_inputs.get(key, ()):
                        if _passes_on(after, k, children[p], local_grads[p], grads[p], grads, written, unknown_start):
                            parent = p
                            break
                    if parent is not None:
                        break
                if parent is not None:
                    break
        if parent is None:
            node, writes = walk[k]
            k += 1
        else:
            node, end = parent, k + len(children[parent])
            writes = zip(single[k:end], after[k:end])
            k = end
        before = len(written_children)
        for write, grad in writes:
            grads[write] = grad
            written[write] = True
            written_children.append(write)
            written_grads.append(grad)
        step_nodes.append(node)
        counts.append(len(written_children) - before)
    return attributed


def _passes_on(after, k, inputs, local_grads, parent_grad, grads, written, unknown_start):
    """Whether the single writes from step k on are `child.grad += local * parent.grad` (or, the `=`
    mistake, `child.grad = local * parent.grad`) for each input in turn."""
    if local_grads is None or parent_grad is None:
        return False
    if not unknown_start and len(inputs) == 2 == len(local_grads) and inputs[0] != inputs[1]:
        # most nodes' steps (+ and * of two inputs) hold exactly: checked without a loop, else checked below
        a, b = inputs
        written_a, written_b, before_a, before_b = after[k], after[k + 1], grads[a], grads[b]
        if written_a is None or written_b is None or before_a is None or before_b is None:
            return False
        passed_a, passed_b = local_grads[0] * parent_grad, local_grads[1] * parent_grad
        if (written_a == before_a + passed_a or written_a == passed_a) and (
            written_b == before_b + passed_b or written_b == passed_b
        ):
            return True
    seen = {}  # an input listed twice (x * x): its second write follows its first
    for child, local, written_grad in zip(inputs, local_grads, after[k : k + len(inputs)]):
        before = seen.get(child, grads[child])
        unchecked = unknown_start and child not in seen and not written[child]
        seen[child] = written_grad
        if unchecked:
            continue
        if written_grad is None or before is None:
            return False
        passed = local * parent_grad
        added = before + passed
        if not (
            written_grad == added
            or written_grad == passed  # equal: the common case, before the tolerances of isclose
            or math.isclose(written_grad, added, rel_tol=1e-9, abs_tol=1e-12)
            or math.isclose(written_grad, passed, rel_tol=1e-9, abs_tol=1e-12)
        ):
            return False
    return True
