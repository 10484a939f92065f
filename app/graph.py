"""A posted graph (POST /backward with `graph`) to engine Values, and the check's nodes.

Every problem is a GraphError with the place in the body it is about (the node's position in
`nodes` and the field) and a sentence naming the node by its id and label. Each check is one
pass over the nodes and edges (a cycle is looked for only once a forward child is found), so a
bad graph is refused in about the time a good one takes to read.
"""

import math
from typing import NamedTuple

from engine import Limits, Value
from engine.check import RULES, CheckNode, canonical_op

from . import schemas

KNOWN_OPS = "+ * ** - / neg exp log relu tanh (also add, mul, pow, sub, div, ReLU, micrograd's **2)"


class GraphError(ValueError):
    def __init__(self, loc: tuple, message: str, value=None):
        super().__init__(message)
        self.loc = ("body", "graph", *loc)
        self.message = message
        self.value = value

    def as_validation_error(self) -> dict:
        """One entry of FastAPI's 422 list."""
        return {"type": "graph_invalid", "loc": self.loc, "msg": self.message, "input": self.value}


class ReadGraph(NamedTuple):
    output: Value
    grads: dict  # Value -> the learner's grad; empty when no node has one
    walk: list | None  # Values in the order the learner's backward steps ran
    values: list  # every node's Value, in the order the graph lists them


def read_graph(graph: schemas.Graph, limits: Limits, replayable=False) -> ReadGraph:
    """replayable: every node with inputs must have an op (the nudge test replays them)."""
    nodes = graph.nodes
    max_label_length = limits.max_label_length
    if len(nodes) > limits.max_nodes:
        raise GraphError(
            ("nodes",),
            f"the graph has {len(nodes):,} nodes; the limit is {limits.max_nodes:,} (VALUEGRAPH_MAX_NODES)",
        )
    position = {}
    for i, node in enumerate(nodes):
        if position.setdefault(node["id"], i) != i:
            first = position[node["id"]]
            raise GraphError(
                (
                    "nodes",
                    i,
                    "id",
                ),
                f"{_name(node)}: id {node['id']} is already the id of node {first} in the list",
                node["id"],
            )
    if graph.output not in position:
        raise GraphError(("output",), f"the output {graph.output} is not the id of any node", graph.output)
    with_grad = sum(1 for node in nodes if node.get("grad") is not None)
    if 0 < with_grad < len(nodes):
        i = next(i for i, node in enumerate(nodes) if node.get("grad") is None)
        raise GraphError(
            ("nodes", i, "grad"),
            f"{_name(nodes[i])} has no grad while {with_grad:,} other nodes have one: give grad on every node "
            "(what your backward left) or on none",
        )

    values, grads = [], {}
    for i, node in enumerate(nodes):
        label = node.get("label")
        if label is not None and len(label) > max_label_length:
            raise GraphError(
                ("nodes", i, "label"),
                f"node {node['id']}'s label is {len(label):,} characters; the limit is {max_label_length:,} "
                "(VALUEGRAPH_MAX_LABEL_LENGTH)",
                label[:max_label_length],
            )
        children, local_grads = node["children"], node["local_grads"]
        if len(children) != len(local_grads):
            raise GraphError(
                ("nodes", i, "local_grads"),
                f"{_name(node)} has {len(children)} children but {len(local_grads)} local gradients: "
                "one local gradient per child, in the same order",
            )
        inputs = []
        for slot, child in enumerate(children):
            at = position.get(child)
            if at is None:
                raise GraphError(
                    ("nodes", i, "children", slot), f"{_name(node)}: child {child} is not the id of any node", child
                )
            if at >= i:
                raise GraphError(("nodes", i, "children", slot), _forward_child(nodes, position, i, at), child)
            inputs.append(values[at])
        written = node.get("op")
        if written in _SIMPLE and len(inputs) == 2:  # most nodes: + and * with their two inputs
            op, exponent = written, None
        else:
            op, exponent = _op(node, i, inputs)
        if replayable and inputs and op is None:
            raise GraphError(
                ("nodes", i, "op"),
                f"the nudge test (check) replays each node's op, and {_name(node)} has none: give its op, "
                "or turn check off",
            )
        value = Value(node["data"], tuple(inputs), tuple(local_grads), op, label, exponent)
        values.append(value)
        if with_grad:
            grads[value] = node["grad"]

    walk = None
    if graph.walk is not None:
        walk = []
        for k, node_id in enumerate(graph.walk):
            if node_id not in position:
                raise GraphError(("walk", k), f"walk step {k}: {node_id} is not the id of any node", node_id)
            walk.append(values[position[node_id]])
    return ReadGraph(values[position[graph.output]], grads, walk, values)


def check_nodes(steps, grads: dict) -> list:
    """The check's view of the traced graph: ids as the answer gives them, the learner's grads."""
    return [
        CheckNode(i, value.label, value.op, value.data, grads.get(value), tuple(children), local_grads, value.exponent)
        for i, (value, children, local_grads) in enumerate(zip(steps.nodes, steps.children, steps.local_grads))
    ]


def _op(node, i, inputs) -> tuple:
    """The op as the engine names it, and the exponent of "**". Without an op, a node with inputs
    is recognised by its rule where exactly one fits its data and local gradients (so the page
    draws it as that op); otherwise it stays without one, and its local gradients are used as given."""
    written = node.get("op")
    if written is None:
        return _recognised(node, inputs) if inputs else (None, None)
    op, exponent = canonical_op(written)
    if op is None:
        raise GraphError(
            ("nodes", i, "op"),
            f"{_name(node)}: unknown op {written!r}; known: {KNOWN_OPS}. Leave op out (null) and the local "
            "gradients are used as given",
            written,
        )
    if op == "-" and len(inputs) == 1:
        op = "neg"
    arity = RULES[op][0]
    if len(inputs) != arity:
        raise GraphError(
            ("nodes", i, "children"),
            f"{_name(node)}: op {written!r} takes {arity} input{'s' * (arity > 1)}, the node has {len(inputs)}",
        )
    if op == "**":
        exponent = node.get("exponent", exponent)
        if exponent is None:
            exponent = _exponent_from_data(inputs[0].data, node["data"])
        if exponent is None:
            raise GraphError(
                ("nodes", i, "exponent"),
                f"{_name(node)}: op '**' needs its exponent n (x ** n): add \"exponent\": n to the node",
            )
    return op, exponent if op == "**" else None


_SIMPLE = frozenset(("+", "*"))


def _recognised(node, inputs):
    xs = [value.data for value in inputs]
    fits = []
    for op, (arity, forward, gradients) in RULES.items():
        if op == "**" or arity != len(xs):
            continue
        if _same(forward(xs, None), node["data"]) and all(
            _same(a, b) for a, b in zip(gradients(xs, node["data"], None), node["local_grads"])
        ):
            fits.append(op)
    return (fits[0], None) if len(fits) == 1 else (None, None)


def _exponent_from_data(x: float, data: float):
    """n from x ** n = data, when the numbers say it unambiguously (x positive, not 1)."""
    if not (x > 0 and x != 1 and data > 0 and math.isfinite(x) and math.isfinite(data)):
        return None
    n = math.log(data) / math.log(x)
    return float(round(n)) if abs(n - round(n)) < 1e-9 * max(1.0, abs(n)) else n


def _same(a: float, b: float) -> bool:
    return a == b or (a != a and b != b) or math.isclose(a, b, rel_tol=1e-12)


def _forward_child(nodes, position, i, at) -> str:
    """A child listed after its parent: part of a cycle (say which), or only out of order."""
    node = nodes[i]
    if at == i:
        return f"a cycle: {_name(node)} is its own child"
    target = node["id"]
    parent_of = {at: None}
    stack = [at]
    while stack:  # does the child reach back to the node?
        j = stack.pop()
        for child in nodes[j]["children"]:
            k = position.get(child)
            if k is None or k in parent_of:
                continue
            parent_of[k] = j
            if child == target:
                path, step = [], k
                while step is not None:
                    path.append(nodes[step]["id"])
                    step = parent_of[step]
                path.reverse()
                return "a cycle: " + " → ".join(str(x) for x in [target, *path]) + " (each a child of the one before)"
            stack.append(k)
    return (
        f"{_name(node)}: child {nodes[at]['id']} comes later in nodes; list every node after its children "
        "(creation order)"
    )


def _name(node) -> str:
    label = node.get("label")
    return f"node {node['id']} ({label})" if label else f"node {node['id']}"
