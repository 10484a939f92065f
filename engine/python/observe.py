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
from itertools import accumulate, islice
from operator import attrgetter
from typing import NamedTuple

from .. import ieee
from ..check import RULES, canonical_op
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
    "calls": [...], "held": [...], "assigns": bool | None, "inputs_are_sets": bool, "backward":
    bool, "not_numbers": [...]}. Nodes come in creation order (ids are the order objects were
    made); `backward` says whether the program called the class's backward() (the argument `walk` is None when not).
    The observed walk is a LearnerWalk over the nodes' positions: each step's node (None for a
    write not yet known to be a node's step, or a call of an object outside the graph) and the
    grads it wrote; `calls` are the positions of the nodes whose `_backward` ran, in that order;
    `held`, per write of the walk, what the grad held before it (grads_before reads it);
    `assigns`, whether the walk set an input's grad with = (not the output's seed, nor a reset
    to 0), None when it added into none either; `not_numbers`, the nodes whose grad the backward left
    holding no number (NotANumber), in creation order."""
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
                    raise NodeProblem(
                        f"a {obj.cls.name}'s {inputs} holds a {type_name(child)}: the inputs of a node must be nodes",
                        obj,
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
    shapes = {}  # id(node) -> (its inputs' field, its local gradients' field, how many), when as many of each
    for (obj, (data_field, inputs_field)), origin in zip(objects, origins):
        fields = obj.fields
        held = fields[inputs_field]
        if type(held) is ProgramSet:
            inputs_are_sets = True
        inputs = list(held)
        data = fields[data_field]
        if type(data) not in NUMBERS:
            _number(obj, data_field)  # raises, saying what it holds
        data = data if type(data) is float else _float(data)
        op = fields["_op"] if "_op" in fields else fields.get("op")  # the first of _op, op it holds
        if op is None or op == "":
            op = OP_OF_METHOD.get(obj.made_by, obj.made_by) if inputs else None
        elif type(op) is not str:
            op = str(op) if type(op) in NUMBERS else None
        elif type(obj.made_by) is str and obj.made_by.startswith("**") and canonical_op(op.strip()) == ("**", None):
            op = obj.made_by  # "**" kept without its exponent, which the call that made the node says: "**2"
        swapped = _swapped(obj, op, data, inputs, reached)
        if swapped:  # other - self kept as (self, other): the rules read inputs in order, so it keeps no op
            op = None
        local_field = (  # the first of _local_grads, local_grads, localGrads it holds
            "_local_grads"
            if "_local_grads" in fields
            else "local_grads"
            if "local_grads" in fields
            else "localGrads"
            if "localGrads" in fields
            else None
        )
        stored = fields[local_field] if local_field else None
        if type(stored) in (tuple, list) and all(map(IS_NUMBER.__contains__, map(type, stored))):
            try:
                local_grads = list(map(float, stored))
            except OverflowError:  # a whole number past the largest float
                local_grads = list(map(_float, stored))
            if len(stored) == len(inputs):
                shapes[id(obj)] = (inputs_field, local_field, len(inputs))
        elif swapped:
            local_grads = swapped
        else:
            xs = [_number(i, reached[id(i)][1][0]) for i in inputs]
            local_grads = derive_local_grads(op, data, xs, type(held) is ProgramSet)
        grad = fields.get("grad")
        label = fields.get("label")
        nodes.append(
            {
                "id": obj.serial,
                "label": label if type(label) is str and label else obj.name,
                "op": op or None,
                "data": data,
                "grad": _float(grad) if type(grad) in NUMBERS else None,
                "children": list(map(SERIAL, inputs)),
                "local_grads": local_grads,
                "origin": origin,
            }
        )
    position = {id(obj): i for i, (obj, _) in enumerate(objects)}
    steps, calls, held, assigns, nulled = _steps(walk or [], position, shapes, output)
    not_numbers = _not_numbers(objects, nulled) if walk is not None else []
    return {
        "nodes": nodes,
        "output": output.serial,
        "walk": steps,
        "calls": calls,
        "held": held,
        "assigns": assigns,
        "backward": walk is not None,
        "inputs_are_sets": inputs_are_sets,
        "not_numbers": not_numbers,
    }


class NotANumber(NamedTuple):
    """A node whose grad the program's backward left holding something other than a number."""

    node: int  # its position in the graph's nodes
    holds: str  # what it holds, as a learner reads it: "None", "a string", "an Activation"
    written_by: int | None  # the position of the node whose _backward step wrote it, when one did


def _not_numbers(objects, nulled) -> list:
    """The nodes whose grad holds no number after the backward: a value of another type, or None that the walk
    wrote (nulled: id(object) -> the position of the node whose step wrote it, or None); a grad never
    written, or None before the walk seeded the output (a reset), is no mistake of the walk's."""
    found = []
    for i, (obj, _) in enumerate(objects):
        fields = obj.fields
        if "grad" not in fields:
            continue
        grad = fields["grad"]
        if grad is None:
            if id(obj) in nulled:
                found.append(NotANumber(i, "None", nulled[id(obj)]))
        elif type(grad) not in NUMBERS:
            name = type_name(grad)
            found.append(NotANumber(i, f"{'an' if name[0] in 'aeiouAEIOU' else 'a'} {name}", nulled.get(id(obj))))
    return found


def not_number_message(graph, first: NotANumber, name) -> str:
    """What the check says of the grads a program's backward left holding no number (graph["not_numbers"]),
    naming `first`, one of them; name(position) names a node."""
    more = len(graph["not_numbers"]) - 1
    step = "" if first.written_by is None else f" (written in {name(first.written_by)}'s backward step)"
    others = f"; {more:,} other grads hold none" if more > 1 else "; 1 other grad holds none either" if more else ""
    return (
        f"{name(first.node)}.grad holds {first.holds} after your backward(), not a number{step}{others}. "
        "A grad must be a number: check the line that sets it."
    )


class NodeProblem(B.RunError):
    """A node observe cannot read: `node`, the object, says where the program made it (its site)."""

    def __init__(self, message: str, node):
        super().__init__(message)
        self.node = node


def _serial(pair):
    return pair[0].serial


def _number(obj, field):
    value = obj.fields[field]
    if type(value) not in NUMBERS:
        raise NodeProblem(
            f"a {obj.cls.name} looks like a value (it has .{field} and inputs) but its .{field} holds a "
            f"{type_name(value)}, not a number",
            obj,
        )
    return _float(value)


def _float(number) -> float:
    """A node's number as a float, in IEEE arithmetic: a whole number past the largest float is infinite
    (whole_or_float's rule)."""
    return number if type(number) is float else float(B.whole_or_float(number))


def _swapped(obj, op, data, inputs, reached):
    """The local gradients of a node a reflected method (__rsub__, __rtruediv__) made as `other - self` with
    its inputs kept as (self, other), the other way round from the op's rule; None for any other node."""
    if obj.made_by not in ("__rsub__", "__rtruediv__") or len(inputs) != 2:
        return None
    name = canonical_op((op or "").strip())[0]
    if name not in ("-", "/"):
        return None
    a, b = (_number(i, reached[id(i)][1][0]) for i in inputs)
    _, forward, gradients = RULES[name]
    if _same(forward([a, b], None), data) or not _same(forward([b, a], None), data):
        return None
    return list(reversed(gradients([b, a], data, None)))


def derive_local_grads(op, data, inputs, from_set=False):
    """The local gradient of each input by the course's rule for the op (engine.check's RULES, in IEEE
    arithmetic: log(0)'s is Infinity, never an error), or None when the op is not one the course defines.
    A sum may have any number of inputs; an input kept in a set (from_set) may stand for two (x + x, x * x,
    x - x, x / x). One input kept in a tuple or list is the op with a number the class did not keep as a
    node (x + 3, 3 * x, or -x as `-`): its local gradient is read from the data where only one fits."""
    if not inputs:
        return []
    name, n = canonical_op((op or "").strip())
    if len(inputs) == 1 and name in FOLDED:
        x = inputs[0]
        forward, local = FOLDED[name]
        if from_set and _same(forward(x), data):  # before `-` of one input could read as neg: a set's x - x
            return [local(x)]
        return _with_a_number(name, data, x)
    if name == "+":
        return [1.0] * len(inputs)
    if name == "**" and n is None:  # ** without its exponent: the gradient cannot be known
        return [math.nan]
    if name is None or RULES[name][0] != len(inputs):
        return None
    return list(RULES[name][2](inputs, data, n))


# The op of two equal inputs that a set kept once: its data, and the local gradient of that one input.
FOLDED = {
    "+": (lambda x: x + x, lambda x: 2.0),
    "*": (lambda x: x * x, lambda x: 2 * x),
    "-": (lambda x: x - x, lambda x: 0.0),
    "/": (lambda x: ieee.divide(x, x), lambda x: 0.0),
}


def _same(a, b) -> bool:
    return a == b or (a != a and b != b)


def _with_a_number(name, data, x):
    """[the local gradient] of x + c, c * x, or -x written `-`, where the data says which; else None (x - c
    and c - x, x / c and c / x, cannot be told apart without c)."""
    if name == "+":
        return [1.0]
    if name == "*" and x != 0 and math.isfinite(x) and math.isfinite(data):
        return [data / x]
    if name == "-" and data == -x:
        return [-1.0]
    return None


def _steps(walk, position, shapes, output):
    """The recorded walk as steps (LearnerWalk), the positions of the nodes whose `_backward`
    ran, in the order they ran, per write what the grad held before it, whether a write
    other than the seed of `output` or a reset set an input's grad with =, and the objects a
    write left holding no number (id -> the position of the node whose step wrote it, None
    outside any step). Each `_backward` call of a node is a step with the grads it wrote; so
    is a pass of the accumulation loop that the interpreter ran as one step (idioms.accumulate)
    over a node's own inputs and local gradients as the graph reads them (`shapes`, observe's).
    Any other grad written outside a `_backward` call (the seed, a loop written otherwise) is a
    step of its own, with node None. Writes to objects outside the graph (position: id(object) ->
    its position in the graph's nodes) are left out, and so is a call that wrote none of its grads."""
    nodes, counts, children, grads, calls = [], [], [], [], []  # nodes as id(object) until the end
    held = []  # per write, the number the grad held before it (not a number: 0; None: the write a reset)
    assigns = None  # True: an input's grad set with =; False: only += seen; None: no such write seen
    seeded = False  # the output's grad written with a number other than 0: a write of 0 after it is no reset
    nulled = {}  # id(object) -> id of the node whose step wrote it no number (None: outside any step)
    for event in walk:
        kind = event[0]
        if kind == "pass":
            _, owner, inputs_field, locals_field, inputs, written, in_step, before = event  # zip(inputs, written)
            assigns = assigns or False
            if not seeded and not in_step:  # a 0 written before the seed is a reset, as below
                before = [None if grad == 0 else old for grad, old in zip(written, before)]
            if (
                not in_step
                and shapes.get(id(owner)) == (inputs_field, locals_field, len(written))
                and len(inputs) == len(written)
            ):
                nodes.append(id(owner))
                counts.append(len(written))
                children.extend(map(id, inputs))
                grads.extend(map(float, written))  # ints past 64 bits were made floats (idioms.accumulate)
                held.extend(before)
                continue
            writes = [
                (id(child), _float(grad), old)
                for child, grad, old in zip(inputs, written, before)
                if id(child) in position
            ]
        elif kind == "step":
            nodes.append(id(event[1]))
            counts.append(0)
            calls.append(id(event[1]))
            continue
        else:  # a grad written
            _, obj, grad, in_step, old, added = event
            at = id(obj)
            if at not in position:
                continue
            number = type(grad) in NUMBERS
            # a reset: the grad made 0 or None (= 0, *= 0, -= itself) before the walk seeds the output, outside
            # any node's _backward
            reset = (grad is None or (number and grad == 0)) and not in_step and not seeded
            if obj is output and number and grad != 0:
                seeded = True
            elif not added and not reset and obj is not output:
                assigns = True
            elif added and assigns is None:
                assigns = False
            if not number and not reset:
                nulled[at] = nodes[-1] if in_step and nodes else None
            writes = [(at, _float(grad) if number else None, None if reset else old if type(old) in NUMBERS else 0)]
        if in_step and nodes:  # written inside a _backward call: its step's
            counts[-1] += len(writes)
        else:
            nodes.extend([None] * len(writes))
            counts.extend([1] * len(writes))
        for child, grad, old in writes:
            children.append(child)
            grads.append(grad)
            held.append(old)
    calls = [position[call] for call in calls if call in position]
    nodes = list(map(position.get, nodes))  # None: a call of an object outside the graph, or no node's
    if None in nodes:  # a call of an object outside the graph that wrote none of its grads is no step
        kept = [(node, count) for node, count in zip(nodes, counts) if node is not None or count]
        nodes, counts = [node for node, _ in kept], [count for _, count in kept]
    children = list(map(position.__getitem__, children))
    nulled = {at: position.get(writer) for at, writer in nulled.items()}
    return LearnerWalk(nodes, counts, children, grads), calls, held, assigns, nulled


def grads_before(graph) -> dict:
    """position -> the grad a node held when the observed walk began, where a number other than 0: what an
    earlier backward() left and nothing reset. A node the walk wrote held what its first write found (a
    reset says nothing: a backward that zeroes the grads first began from 0; a grad that was no number
    held 0); a node it never wrote holds it still. Read only when the check needs it: it goes over every
    write."""
    walk = graph["walk"]
    found = dict(reversed([(child, old) for child, old in zip(walk.child, graph["held"]) if old is not None]))
    written = set(walk.child)
    for i, node in enumerate(graph["nodes"]):
        if i not in written:
            found[i] = node["grad"]
    return {i: _float(grad) for i, grad in found.items() if grad and type(grad) in NUMBERS}


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

    A `_backward` call is one step of its node, and so is a pass of the course's and microgpt's
    `for v in reversed(topo): for child, local in zip(...)` that the interpreter ran as one step. A
    backward written as a loop over the nodes otherwise writes the inputs' grads one at a time with
    no call to say whose step it is; a run of such writes that goes to one node's inputs in order,
    each adding (or, the `=` mistake, setting) that input's local gradient times the node's grad at
    the time, is that node's step. Any other write (the seed, a reset) is a step with node None."""
    nodes = graph["nodes"]
    output = next(i for i in range(len(nodes) - 1, -1, -1) if nodes[i]["id"] == graph["output"])
    return _attribute_loop_writes(graph["walk"], nodes, output)


def _inputs_index(nodes):
    """Each node's inputs as positions; per number of inputs, the inputs in order (one input: the input
    itself) -> the nodes that have them, so that a run of single writes finds the nodes it may be a step
    of at once; each node's local gradients."""
    position = {node["id"]: i for i, node in enumerate(nodes)}
    children = [tuple(map(position.__getitem__, node["children"])) for node in nodes]
    users = {}
    for i, inputs in enumerate(children):
        if inputs:
            users.setdefault(len(inputs), {}).setdefault(inputs[0] if len(inputs) == 1 else inputs, []).append(i)
    return children, sorted(users.items()), [node["local_grads"] for node in nodes]


def _attribute_loop_writes(steps, nodes, output):
    """The steps with each run of single writes that is a node's step made that node's step."""
    node, count, child, grad = steps
    singles = [k for k, (at, n) in enumerate(zip(node, count)) if at is None and n == 1]
    if not singles:
        return steps
    start = list(accumulate(count, initial=0))  # step k wrote child[start[k]:start[k + 1]]
    single = {k: child[start[k]] for k in singles}  # step -> the node it wrote
    index = None  # made at the first single write that may be a node's (the seed, to the output, is no node's)
    grads = {}  # the grads the writes so far left, by node (a node not written holds 0)
    attributed = LearnerWalk([], [], [], [])
    step_nodes, counts, written_children, written_grads = attributed

    def copy(first, stop, as_node=None):
        """Steps first..stop as they are, or (as_node) as one step of that node."""
        a, b = start[first], start[stop]
        if as_node is None:
            step_nodes.extend(node[first:stop])
            counts.extend(count[first:stop])
        else:
            step_nodes.append(as_node)
            counts.append(b - a)
        written_children.extend(child[a:b])
        written_grads.extend(grad[a:b])
        grads.update(zip(child[a:b], grad[a:b]))

    done = 0  # the steps before it are in attributed
    for k in singles:
        if k < done:  # part of a node's step already
            continue
        copy(done, k)
        parent = None
        if child[start[k]] != output:
            if index is None:
                index = _inputs_index(nodes)
            parent = _step_of_run(k, index, child, grad, start, single, grads)
        done = k + 1 if parent is None else k + len(index[0][parent])
        copy(k, done, parent)
    copy(done, len(node))
    return attributed


def _step_of_run(k, index, child, grad, start, single, grads):
    """The node whose step the run of single writes from step k is, else None."""
    children, by_arity, local_grads = index
    steps = len(start) - 1
    # First as if every grad started at 0; then, for a backward() that did not reset them, without
    # checking the first write to each grad.
    for unknown_start in (False, True):
        for arity, with_inputs in by_arity:  # the run as long as some node's inputs, to those inputs
            if k + arity > steps:
                break
            run = [single.get(j, -1) for j in range(k, k + arity)]
            if -1 in run:  # a step in it is no single write
                break
            written = [grad[start[j]] for j in range(k, k + arity)]
            for p in with_inputs.get(run[0] if arity == 1 else tuple(run), ()):
                if _passes_on(written, children[p], local_grads[p], grads.get(p, 0.0), grads, unknown_start):
                    return p
    return None


def _passes_on(after, inputs, local_grads, parent_grad, grads, unknown_start):
    """Whether the single writes `after` (what each left) are `child.grad += local * parent.grad` (or, the `=`
    mistake, `child.grad = local * parent.grad`) for each input in turn."""
    if local_grads is None or parent_grad is None:
        return False
    if not unknown_start and len(inputs) == 2 == len(local_grads) and inputs[0] != inputs[1]:
        # most nodes' steps (+ and * of two inputs) hold exactly: checked without a loop, else checked below
        a, b = inputs
        written_a, written_b, before_a, before_b = after[0], after[1], grads.get(a, 0.0), grads.get(b, 0.0)
        if written_a is None or written_b is None or before_a is None or before_b is None:
            return False
        passed_a, passed_b = local_grads[0] * parent_grad, local_grads[1] * parent_grad
        if (written_a == before_a + passed_a or written_a == passed_a) and (
            written_b == before_b + passed_b or written_b == passed_b
        ):
            return True
    seen = {}  # an input listed twice (x * x): its second write follows its first
    for child, local, written_grad in zip(inputs, local_grads, after):
        before = seen.get(child, grads.get(child, 0.0))
        unchecked = unknown_start and child not in seen and child not in grads
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
