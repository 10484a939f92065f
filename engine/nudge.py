"""Chapter 1's nudge test on a recorded graph: move one leaf by h, replay the forward pass,
and measure (f(x + h) - f(x)) / h beside the gradient the backward pass found.

The replay re-runs the same Value operations over the recorded graph (no re-parsing), so
the numbers come from exactly the arithmetic that built the graph."""

from .autograd import topological_order
from .errors import ProgramError
from .limits import Limits
from .syntax import WHOLE_PROGRAM
from .value import Value

DEFAULT_NUDGE = 0.0001

REPLAY = {
    "+": lambda xs, node: xs[0] + xs[1],
    "*": lambda xs, node: xs[0] * xs[1],
    "**": lambda xs, node: xs[0] ** node.exponent,
    "log": lambda xs, node: xs[0].log(),
    "exp": lambda xs, node: xs[0].exp(),
    "relu": lambda xs, node: xs[0].relu(),
    "tanh": lambda xs, node: xs[0].tanh(),
    # only in graphs posted whole, where a learner's class has them as ops of their own:
    "-": lambda xs, node: xs[0] - xs[1],
    "/": lambda xs, node: xs[0] / xs[1],
    "neg": lambda xs, node: -xs[0],
}


def measure_gradient(output, leaf, h: float = DEFAULT_NUDGE, order=None, at=None) -> float:
    """(f(x + h) - f(x)) / h for one leaf, in one replay of the graph: O(nodes). f(x) is replayed too (`at`,
    when known): a posted graph's or a learner's class's stored data need not be what its ops compute."""
    order = order or topological_order(output)
    return (_replayed(output, order, leaf, h) - (_replayed(output, order, None, 0.0) if at is None else at)) / h


def _replayed(output, order, leaf, h: float) -> float:
    """The output replayed from the leaves' data (`order`: the nodes it reaches, inputs first), `leaf` moved by
    h (None: no leaf moved)."""
    replayed = {}
    for node in order:
        if node._children:
            replayed[node] = REPLAY[node.op]([replayed[child] for child in node._children], node)
        else:
            replayed[node] = Value(node.data + h if node is leaf else node.data)
    return replayed[output].data


def measure_leaf_gradients(output, h: float = DEFAULT_NUDGE, limits: Limits = Limits()) -> dict:
    """The nudge test for every leaf: {leaf: measured gradient}."""
    order = topological_order(output)
    leaves = [node for node in order if not node._children]
    if len(leaves) * len(order) > limits.max_check_evaluations:
        raise ProgramError(
            f"the nudge test would replay {len(order):,} nodes for each of {len(leaves):,} leaves, "
            f"more than the limit of {limits.max_check_evaluations:,} node evaluations; turn the check off",
            WHOLE_PROGRAM,
        )
    at = _replayed(output, order, None, 0.0)
    return {leaf: measure_gradient(output, leaf, h, order, at) for leaf in leaves}
