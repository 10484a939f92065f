"""Value in Python: each primitive's data and local gradients, the derived operations'
graph shapes as the course's Python builds them, the chapter exercises, reuse, deep
chains and the IEEE results that must never raise."""

import math
import sys

import pytest

from engine import Value


def is_constant(node, data):
    """A leaf the operation made from a plain number."""
    return node._children == () and node.op is None and node.label is None and node.data == data


# --- primitives: data and local gradients -------------------------------------------


def test_add_data_and_local_gradients():
    a, b = Value(2.0), Value(3.0)
    c = a + b
    assert c.data == 5.0
    assert c._children == (a, b)
    assert c._local_grads == (1.0, 1.0)
    assert c.op == "+"


def test_mul_local_gradients_are_swapped_data():
    a, b = Value(2.0), Value(3.0)
    c = a * b
    assert c.data == 6.0
    assert c._children == (a, b)
    assert c._local_grads == (3.0, 2.0)
    assert c.op == "*"


@pytest.mark.parametrize(
    "base, n, data, local",
    [(3.0, 2, 9.0, 6.0), (2.0, 3, 8.0, 12.0), (4.0, 0.5, 2.0, 0.25), (2.0, -1, 0.5, -0.25), (5.0, 0, 1.0, 0.0)],
)
def test_pow_by_plain_number(base, n, data, local):
    a = Value(base)
    c = a**n
    assert c.data == pytest.approx(data, rel=1e-15)
    assert c._children == (a,)
    assert c._local_grads[0] == pytest.approx(local, rel=1e-15)
    assert c.op == "**"
    assert c.exponent == n


@pytest.mark.parametrize("x", [0.5, 1.0, 4.0, 10.0])
def test_log(x):
    a = Value(x)
    c = a.log()
    assert c.data == math.log(x)
    assert c._children == (a,)
    assert c._local_grads == (1.0 / x,)
    assert c.op == "log"


@pytest.mark.parametrize("x", [-2.0, 0.0, 1.0, 3.5])
def test_exp(x):
    a = Value(x)
    c = a.exp()
    assert c.data == math.exp(x)
    assert c._local_grads == (math.exp(x),)
    assert c._children == (a,)
    assert c.op == "exp"


@pytest.mark.parametrize("x, data, local", [(3.0, 3.0, 1.0), (-2.0, 0.0, 0.0), (0.0, 0.0, 0.0), (1e-300, 1e-300, 1.0)])
def test_relu(x, data, local):
    a = Value(x)
    c = a.relu()
    assert c.data == data
    assert c._local_grads == (local,)
    assert c._children == (a,)
    assert c.op == "relu"


def test_relu_of_nan_stays_nan():
    c = Value(math.nan).relu()
    assert math.isnan(c.data)
    assert c._local_grads == (0.0,)


@pytest.mark.parametrize("x", [-3.0, -0.5, 0.0, 0.7, 20.0])
def test_tanh(x):
    a = Value(x)
    c = a.tanh()
    assert c.data == math.tanh(x)
    assert c._local_grads[0] == pytest.approx(1 - math.tanh(x) ** 2, rel=1e-15, abs=1e-300)
    assert c._children == (a,)
    assert c.op == "tanh"


def test_leaf_starts_with_zero_grad_and_no_children():
    a = Value(2, label="a")
    assert a.data == 2.0 and isinstance(a.data, float)
    assert a.grad == 0.0
    assert a._children == () and a._local_grads == ()
    assert a.op is None and a.label == "a"


# --- derived operations: the exact graph shapes of the course's Python ----------------


def test_neg_is_times_minus_one():
    a = Value(2.0)
    c = -a
    assert c.op == "*" and c.data == -2.0
    assert c._children[0] is a
    assert is_constant(c._children[1], -1.0)


def test_sub_is_add_of_negated():
    a, b = Value(5.0), Value(3.0)
    c = a - b
    assert c.op == "+" and c.data == 2.0
    assert c._children[0] is a
    negated = c._children[1]
    assert negated.op == "*"
    assert negated._children[0] is b
    assert is_constant(negated._children[1], -1.0)


def test_sub_plain_number_adds_negated_constant():
    a = Value(5.0)
    c = a - 2
    assert c.op == "+" and c.data == 3.0
    assert c._children[0] is a
    assert is_constant(c._children[1], -2.0)


def test_div_is_times_reciprocal_power():
    a, b = Value(6.0), Value(4.0)
    c = a / b
    assert c.op == "*" and c.data == 1.5
    assert c._children[0] is a
    reciprocal = c._children[1]
    assert reciprocal.op == "**" and reciprocal.exponent == -1
    assert reciprocal._children == (b,)
    assert reciprocal.data == 0.25


def test_div_by_plain_number_is_times_constant_reciprocal():
    a = Value(6.0)
    c = a / 2
    assert c.op == "*" and c.data == 3.0
    assert c._children[0] is a
    assert is_constant(c._children[1], 0.5)


def test_reflected_add_puts_the_value_first():
    a = Value(2.0)
    c = 3 + a
    assert c.op == "+" and c.data == 5.0
    assert c._children[0] is a
    assert is_constant(c._children[1], 3.0)


def test_reflected_sub_is_negated_value_plus_number():
    a = Value(2.0)
    c = 3 - a
    assert c.op == "+" and c.data == 1.0
    negated, three = c._children
    assert negated.op == "*" and negated._children[0] is a and is_constant(negated._children[1], -1.0)
    assert is_constant(three, 3.0)


def test_reflected_mul_puts_the_value_first():
    a = Value(2.0)
    c = 2 * a
    assert c.op == "*" and c.data == 4.0
    assert c._children[0] is a
    assert is_constant(c._children[1], 2.0)
    assert c._local_grads == (2.0, 2.0)


def test_reflected_div_is_reciprocal_times_number():
    a = Value(4.0)
    c = 2 / a
    assert c.op == "*" and c.data == 0.5
    reciprocal, two = c._children
    assert reciprocal.op == "**" and reciprocal.exponent == -1 and reciprocal._children == (a,)
    assert is_constant(two, 2.0)


def test_square_by_multiplication_keeps_both_children():
    a = Value(3.0)
    c = a * a
    assert c._children == (a, a)
    assert c._local_grads == (3.0, 3.0)
    c.backward()
    assert a.grad == 6.0


@pytest.mark.parametrize("make", [lambda a, b: a**b, lambda a, b: 2**a], ids=["a ** b", "2 ** a"])
def test_value_exponent_is_rejected_with_a_hint(make):
    a, b = Value(2.0), Value(3.0)
    with pytest.raises(TypeError) as caught:
        make(a, b)
    assert "exp(b * log(a))" in str(caught.value)


# --- the chapter exercises -----------------------------------------------------------


def test_chapter_1_exercise_forward_pass():
    a, b = Value(2.0), Value(3.0)
    c = a * b
    d = c + a
    e = d**2
    assert (c.data, d.data, e.data) == (6.0, 8.0, 64.0)


def test_chapter_2_exercise_gradients():
    a, b = Value(2.0), Value(3.0)
    c = a * b
    loss = c + a
    loss.backward()
    assert a.grad == 4.0
    assert b.grad == 2.0
    assert c.grad == 1.0 and loss.grad == 1.0


def test_reuse_accumulates_through_both_edges():
    a = Value(1.0)
    b = a + a
    c = b + b
    assert b._children == (a, a)
    c.backward()
    assert a.grad == 4.0
    assert b.grad == 2.0


def test_backward_accumulates_across_calls_like_micrograd():
    a = Value(2.0)
    c = a * 3
    c.backward()
    c.backward()
    assert a.grad == 6.0


def test_dead_relu_branch_passes_no_gradient():
    a = Value(-2.0)
    c = (a * 3).relu() + a
    c.backward()
    assert a.grad == 1.0


# --- deep graphs ----------------------------------------------------------------------


def test_100000_deep_chain_with_default_recursion_limit():
    limit = sys.getrecursionlimit()
    x = leaf = Value(1.0)
    for _ in range(100_000):
        x = x * 1.0000001
    x.backward()
    assert sys.getrecursionlimit() == limit
    assert leaf.grad == pytest.approx(1.0000001**100_000, rel=1e-9)
    assert x.data == pytest.approx(1.0000001**100_000, rel=1e-9)


# --- IEEE results: never raise ---------------------------------------------------------


def test_log_of_zero_is_minus_infinity():
    c = Value(0.0).log()
    assert c.data == -math.inf
    assert c._local_grads == (math.inf,)


def test_log_of_negative_is_nan():
    c = Value(-1.0).log()
    assert math.isnan(c.data)
    assert c._local_grads == (-1.0,)


def test_negative_to_fractional_power_is_nan():
    c = Value(-8.0) ** 0.5
    assert math.isnan(c.data)
    assert math.isnan(c._local_grads[0])


def test_exp_overflow_is_infinity():
    c = Value(800.0).exp()
    assert c.data == math.inf
    assert c._local_grads == (math.inf,)


def test_value_divided_by_zero_value_is_infinity():
    a, b = Value(1.0), Value(0.0)
    c = a / b
    assert c.data == math.inf
    c.backward()
    assert a.grad == math.inf
    assert b.grad == -math.inf


def test_value_divided_by_plain_zero_is_infinity():
    c = Value(1.0) / 0
    assert c.data == math.inf


def test_zero_times_infinity_is_nan():
    c = Value(800.0).exp() * 0
    assert math.isnan(c.data)
    c.backward()  # must not raise


def test_negative_to_the_minus_one_of_zero_keeps_the_sign():
    assert (Value(-0.0) ** -1).data == -math.inf
    assert (Value(0.0) ** -2).data == math.inf


def test_big_power_overflows_to_infinity():
    assert (Value(10.0) ** 400).data == math.inf
    assert (Value(-10.0) ** 401).data == -math.inf


@pytest.mark.parametrize("seed", range(20))
def test_the_plain_walks_give_the_recording_walks_order(seed):
    """The plain sort (autograd._postorder: nudge, the interpreter's snapshot) and the traced
    walk with the (node, inputIndex) stack give the same order; Value.backward()'s
    operation_order is that order without the leaves (the root always last). The operations keep
    their order, so gradients are summed in the same order as the trace's (bit for bit)."""
    import random

    from engine.autograd import _postorder, operation_order, topological_order

    rng = random.Random(seed)
    nodes = [Value(rng.uniform(-2, 2)) for _ in range(rng.randint(1, 5))]
    for _ in range(rng.randint(0, 300)):
        a, b = rng.choice(nodes), rng.choice(nodes[-8:])  # reuse, near and far
        nodes.append(rng.choice([a + b, a * b, a.tanh(), a * a, (a + 1).relu()]))
    root = nodes[-1]
    recorded = []
    full = _postorder(root)
    assert full == topological_order(root, recorded)
    assert len(recorded) >= len(full)
    assert operation_order(root) == [node for node in full if node._children or node is root]


@pytest.mark.parametrize("seed", range(10))
def test_backward_gives_the_traces_gradients_bit_for_bit(seed):
    """Value.backward() walks the operations only; the trace walks every node, recording."""
    import random

    from engine.trace import trace

    rng = random.Random(seed)
    nodes = [Value(rng.uniform(-2, 2)) for _ in range(rng.randint(1, 5))]
    for _ in range(rng.randint(0, 300)):
        a, b = rng.choice(nodes), rng.choice(nodes[-8:])
        nodes.append(rng.choice([a + b, a * b, a.tanh(), a * a, (a + 1).relu(), a**2, (a * a + 1).log()]))
    root = nodes[-1]
    reached = trace(root).nodes  # the trace zeroes the gradients, then walks every node
    traced = [node.grad for node in reached]
    for node in reached:
        node.grad = 0.0
    root.backward()
    assert all(node.grad == g or (math.isnan(node.grad) and math.isnan(g)) for node, g in zip(reached, traced))
