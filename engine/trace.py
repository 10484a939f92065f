"""Graph to trace: every step of the backward pass, as the animation and the API show it.

Node ids are positions in creation order among the nodes the output reaches. The trace is
O(nodes + edges) for the correct walk; the deliberately broken variants can grow
exponentially on reused nodes, so their size is computed first and bounded.
"""

import math
from functools import cached_property
from itertools import chain
from operator import attrgetter
from typing import NamedTuple

from .autograd import propagate, recursive_propagate, topological_order
from .errors import ProgramError
from .limits import Limits
from .syntax import WHOLE_PROGRAM

VARIANTS = ("correct", "no-visited-check", "assign", "no-topological-order")


class SortStep(NamedTuple):
    node: int
    index: int
    action: str  # "descend", "skip" or "emit"
    child: int | None


class Update(NamedTuple):
    child: int
    local_grad: float
    delta: float  # local_grad * the node's grad
    grad: float  # the child's grad after the +=


class PropagateStep(NamedTuple):
    node: int
    grad: float
    updates: list


class Warning(NamedTuple):
    node: int
    message: str


class Trace:
    """The backward pass as it was walked.

    The steps are kept as the walks recorded them, with Values (sort_steps, propagate_steps):
    a 12,000-node trace has some 70,000 of them, and the API turns them into its wire records
    in one pass (app.serialize) with `ids`. `sort` and `propagate` give them with node ids, as
    named tuples, for everything else."""

    def __init__(self, nodes, output, order, sort_steps, propagate_steps, variant="correct", counts=None):
        """counts: (sort steps, propagate steps) of a walk whose steps were not kept (both None)."""
        self.nodes = nodes  # the Values; a node's id is its index here
        self.ids = dict(zip(nodes, range(len(nodes))))
        self.output = self.ids[output]
        self.order = list(
            map(self.ids.__getitem__, order)
        )  # children before parents (repeats only without the visited check)
        self.sort_steps = sort_steps  # (node, index, action, child or None) per pop of the stack
        self.propagate_steps = (
            propagate_steps  # (node, grad, [(child, local_grad, delta, child grad after)]) per node walked
        )
        self.variant = variant
        self.sort_count, self.propagate_count = counts or (len(sort_steps), len(propagate_steps))
        # Warning where a non-finite number first appears (a walk is counted only when its grads are finite)
        self.warnings = _warnings(nodes, self.ids, propagate_steps or ())

    # The graph as ids, for code outside the engine (app/ writes it and lays it out): read-only
    # views, built once, so no caller reaches into a Value's private fields.
    @cached_property
    def children(self) -> tuple:
        """Per node, the ids of its inputs, aligned with local_grads; duplicates kept (a * a has two)."""
        id_of = self.ids.__getitem__
        return tuple([list(map(id_of, node._children)) for node in self.nodes])  # map: no call per node

    @cached_property
    def local_grads(self) -> tuple:
        """Per node, d(node)/d(input) for each input: the Value's own tuple, not a copy."""
        return tuple([node._local_grads for node in self.nodes])

    @cached_property
    def sort(self) -> list:
        ids = self.ids
        self._kept()
        return [
            SortStep(ids[n], index, action, None if child is None else ids[child])
            for n, index, action, child in self.sort_steps
        ]

    @cached_property
    def propagate(self) -> list:
        ids = self.ids
        self._kept()
        return [
            PropagateStep(ids[n], grad, [Update(ids[c], local, delta, after) for c, local, delta, after in updates])
            for n, grad, updates in self.propagate_steps
        ]

    # How the variant walked, as the columnar answer tells the page to replay it (app.serialize).
    @property
    def checks_visited(self) -> bool:
        return self.variant != "no-visited-check"

    @property
    def accumulates(self) -> bool:
        return self.variant != "assign"

    @property
    def recursive(self) -> bool:
        return self.variant == "no-topological-order"

    def _kept(self):
        if self.sort_steps is None:
            raise ValueError(
                "this trace counted its steps without keeping them: trace(..., keep_steps=True) keeps them"
            )


def trace(output, limits: Limits = Limits(), variant: str = "correct", keep_steps: bool = True) -> Trace:
    """keep_steps: False for a caller that replays the steps itself (the columnar answer). The correct and assign
    walks then run as Value.backward() runs them, and the Trace counts their steps instead of keeping them,
    unless a grad comes out non-finite (the warnings say which step made it); the other walks keep theirs."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    unfolds = variant in ("no-visited-check", "no-topological-order")
    accumulates = variant != "assign"
    if not keep_steps and not unfolds:
        reached = _reached(output, limits)
        nodes = _zeroed(reached)
        propagate(reached, accumulate=accumulates)
        if all(map(math.isfinite, map(attrgetter("grad"), nodes))):
            # The sort looks at every input of every node once, and emits every node.
            sort_count = len(reached) + sum(map(len, map(attrgetter("_children"), reached)))
            return Trace(nodes, output, reached, None, None, variant, counts=(sort_count, len(reached)))
    sort_steps, propagate_steps = [], []
    reached = _reached(output, limits, None if unfolds else sort_steps)
    if unfolds:
        _check_unfolded_size(reached, limits)
    nodes = _zeroed(reached)

    if variant == "no-topological-order":
        recursive_propagate(output, propagate_steps)
        order = []
    else:
        order = topological_order(output, sort_steps, check_visited=False) if unfolds else reached
        propagate(order, propagate_steps, accumulate=accumulates)
    return Trace(nodes, output, order, sort_steps, propagate_steps, variant)


def _reached(output, limits, sort_steps=None) -> list:
    """The nodes the output reaches, children before parents (recording the sort's steps into sort_steps)."""
    reached = topological_order(output, sort_steps)
    if len(reached) > limits.max_nodes:
        raise ProgramError(f"the graph has {len(reached):,} nodes; the limit is {limits.max_nodes:,}", WHOLE_PROGRAM)
    return reached


def _zeroed(reached) -> list:
    """The reached nodes in creation order (their ids), every grad 0 before the walk."""
    nodes = sorted(reached, key=attrgetter("_serial"))
    for node in nodes:
        node.grad = 0.0
    return nodes


def _check_unfolded_size(reached, limits):
    """Without the visited check (or any sort), the walk unfolds the graph into a tree."""
    steps = {}
    for node in reached:  # children first
        steps[node] = 1 + sum(1 + steps[child] for child in node._children)
        if steps[node] > limits.max_variant_steps:
            raise ProgramError(
                f"this broken walk would take more than {limits.max_variant_steps:,} steps on this graph; "
                "try it on a smaller program",
                WHOLE_PROGRAM,
            )


def _warnings(nodes, ids, propagate_steps):
    """Where each kind of non-finite number (NaN, an infinity) first appears, and why."""
    warnings = _non_finite_nodes(nodes) if _may_be_non_finite(nodes) else []
    for _, grad, updates in propagate_steps:
        for child, local_grad, delta, _ in updates:
            if not math.isfinite(delta) and math.isfinite(local_grad) and math.isfinite(grad):
                warnings.append(
                    Warning(
                        ids[child],
                        f"the gradient overflows: {format_number(local_grad)} × {format_number(grad)} is "
                        f"{format_number(delta)}",
                    )
                )
    return warnings


def _non_finite_nodes(nodes):
    warnings = []
    for i, node in enumerate(nodes):
        if math.isfinite(node.data) and all(map(math.isfinite, node._local_grads)):
            continue
        children = [child.data for child in node._children]
        kind = _non_finite_kind(node.data)
        if kind and kind not in map(_non_finite_kind, children):
            warnings.append(
                Warning(i, f"{_describe(node, children)} is {format_number(node.data)}{_reason(node, children)}")
            )
        elif kind is None and any(not math.isfinite(g) for g in node._local_grads):
            grads = ", ".join(format_number(g) for g in node._local_grads)
            warnings.append(Warning(i, f"the local gradient of {_describe(node, children)} is {grads}"))
    return warnings


def _may_be_non_finite(nodes):
    """False when every node's data and local gradients are finite, in two sums: a sum is NaN or
    infinite when any term is (and when finite terms overflow: then the node-by-node check decides)."""
    total = sum(map(attrgetter("data"), nodes)) + sum(chain.from_iterable(map(attrgetter("_local_grads"), nodes)))
    return not math.isfinite(total)


def _non_finite_kind(x):
    return "NaN" if x != x else "Infinity" if math.isinf(x) else None


def _describe(node, children):
    args = [format_number(x) for x in children]
    if node.op is None:
        return node.label or "a constant"
    if node.op in ("+", "*", "-", "/"):
        return f"{args[0]} {node.op} {args[1]}"
    if node.op == "**":
        base = f"({args[0]})" if children[0] < 0 else args[0]
        return f"{base} ** {format_number(node.exponent)}"
    return f"{node.op}({args[0]})"


def _reason(node, children):
    if node.op is None and node.label is None:
        return ": arithmetic on plain numbers (such as 1/0 or 1e308 * 10) made it"
    if node.op == "log" and children[0] < 0:
        return ": the logarithm of a negative number"
    if node.op == "**" and children[0] < 0 and math.isfinite(node.exponent) and node.exponent != int(node.exponent):
        return ": a negative number to a fractional power"
    if node.op == "**" and children[0] == 0 and node.exponent < 0:
        return ": division by zero"
    if math.isinf(node.data) and node.op in ("+", "*", "**", "exp"):
        return ": too large for a float (overflow)"
    return ""


def format_number(x: float) -> str:
    """Numbers as a learner reads them: 2 not 2.0, and NaN/Infinity spelled as in JSON."""
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == int(x) and abs(x) < 1e16:
        return str(int(x))
    return repr(x)
