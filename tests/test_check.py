"""The gradient check (engine.check): learner-style Value classes, correct and broken, run here
in CPython; their graphs go to the check as they left them, and the check must name the cause
that was put in, by recomputing under each hypothesis."""

import math

import pytest

from engine.check import CheckNode, canonical_op, check


class Learner:
    """A course-style Value (data, grad, children, local gradients computed when the op runs),
    whose backward can be given each mistake the check knows."""

    mul_locals = staticmethod(lambda a, b: (b.data, a.data))
    pow_local = staticmethod(lambda x, n: n * x ** (n - 1))

    def __init__(self, data, children=(), local_grads=(), op=None, label=None):
        self.data = data
        self.grad = 0.0
        self.children = children
        self.local_grads = local_grads
        self.op = op
        self.label = label

    def __add__(self, other):
        return type(self)(self.data + other.data, (self, other), (1.0, 1.0), "+")

    def __mul__(self, other):
        return type(self)(self.data * other.data, (self, other), self.mul_locals(self, other), "*")

    def __pow__(self, n):
        out = type(self)(self.data**n, (self,), (self.pow_local(self.data, n),), "**")
        out.exponent = n
        return out

    def tanh(self):
        t = math.tanh(self.data)
        return type(self)(t, (self,), (1 - t * t,), "tanh")

    def log(self):
        return type(self)(math.log(self.data), (self,), (1 / self.data,), "log")

    def topo(self, visited=True):
        order, seen = [], set()

        def build(v):
            if visited and v in seen:
                return
            seen.add(v)
            for child in v.children:
                build(child)
            order.append(v)

        build(self)
        return order

    def backward(self, mistake=None):
        walk = []
        if mistake == "recursive":  # passes on and walks into each input at once
            self.grad = 1.0

            def down(v):
                walk.append(v)
                for child, local in zip(v.children, v.local_grads):
                    child.grad += local * v.grad
                    down(child)

            down(self)
            return walk
        order = self.topo(visited=mistake != "no-visited")
        if mistake != "unseeded":
            self.grad = 1.0
        nodes = order if mistake == "forwards" else list(reversed(order))
        for v in nodes:
            walk.append(v)
            for child, local in zip(v.children, v.local_grads):
                if mistake == "assign":
                    child.grad = local * v.grad
                else:
                    child.grad += local * v.grad
        return walk


def graph_of(output, with_grads=True, with_ops=True):
    """The learner's graph as the check takes it: ids in creation order (a post-order)."""
    order = output.topo()
    ids = {v: i for i, v in enumerate(order)}
    return [
        CheckNode(
            ids[v],
            v.label,
            v.op if with_ops else None,
            v.data,
            v.grad if with_grads else None,
            tuple(ids[c] for c in v.children),
            tuple(v.local_grads),
            getattr(v, "exponent", None),
        )
        for v in order
    ], ids


def chapter_2(cls=Learner):
    a, b = cls(2.0, label="a"), cls(3.0, label="b")
    c = a * b
    c.label = "c"
    L = c + a
    L.label = "L"
    return a, b, c, L


def shared_chain(cls=Learner):
    """A graph where a shared node has users at different depths, so that every broken walk
    gives a different set of grads: d = a*b; e = d + a; f = e * d; L = f.tanh() + d."""
    a, b = cls(0.5, label="a"), cls(-1.5, label="b")
    d = a * b
    d.label = "d"
    e = d + a
    e.label = "e"
    f = e * d
    f.label = "f"
    t = f.tanh()
    t.label = "t"
    L = t + d
    L.label = "L"
    return L


def run_check(output, mistake=None, walk=False, **options):
    recorded = output.backward(mistake)
    nodes, ids = graph_of(output)
    result = check(nodes, ids[output], [ids[v] for v in recorded] if walk else None, **options)
    return result, ids


def test_chapter_2_correct_is_ok_with_the_course_grads():
    a, b, c, L = chapter_2()
    result, ids = run_check(L)
    assert result.gradient_check["status"] == "ok"
    assert result.gradient_check["wrong"] == [] and result.gradient_check["first"] is None
    assert result.gradient_check["local"] == []
    assert result.expected_grad == {ids[a]: 4.0, ids[b]: 2.0, ids[c]: 1.0, ids[L]: 1.0}


def test_no_grads_is_no_backward_with_the_expected_grads():
    a, b, c, L = chapter_2()
    nodes, ids = graph_of(L, with_grads=False)
    result = check(nodes, ids[L])
    assert result.gradient_check["status"] == "no_backward"
    assert result.expected_grad[ids[a]] == 4.0


def test_assign_instead_of_add_names_the_shared_node():
    a, b, c, L = chapter_2()
    result, ids = run_check(L, "assign")
    check_ = result.gradient_check
    assert check_["status"] == "wrong"
    assert check_["wrong"] == [ids[a]] and check_["first"] == ids[a]
    assert check_["message"].startswith("a is used by 2 nodes; its grad holds only the last one")
    assert "+=" in check_["message"]


@pytest.mark.parametrize("walk", [False, True])
def test_no_visited_set(walk):
    L = shared_chain()
    result, ids = run_check(L, "no-visited", walk=walk)
    message = result.gradient_check["message"]
    assert result.gradient_check["status"] == "wrong"
    assert "visited set" in message, message
    assert message.startswith(("d is reached by 3 paths", "d's backward ran 3 times"))


@pytest.mark.parametrize("walk", [False, True])
def test_no_topological_order(walk):
    L = shared_chain()
    result, ids = run_check(L, "recursive", walk=walk)
    message = result.gradient_check["message"]
    assert result.gradient_check["status"] == "wrong"
    assert "before all of its users had added theirs" in message, message
    assert message.startswith("d passed")


def test_walk_forwards():
    L = shared_chain()
    result, _ = run_check(L, "forwards")
    assert "from the leaves towards the output" in result.gradient_check["message"]


def test_unseeded():
    a, b, c, L = chapter_2()
    result, ids = run_check(L, "unseeded")
    check_ = result.gradient_check
    assert check_["status"] == "wrong" and check_["first"] == ids[L]
    assert set(check_["wrong"]) == set(ids.values())
    assert "never seeded with 1" in check_["message"]


@pytest.mark.parametrize("calls", [2, 3])
def test_not_reset_between_calls(calls):
    L = shared_chain()
    for _ in range(calls - 1):
        L.backward()
    result, _ = run_check(L)
    assert result.gradient_check["status"] == "wrong"
    assert f"{calls} backward() calls with no reset" in result.gradient_check["message"]


def test_mul_local_gradients_swapped_python_words():
    class Swapped(Learner):
        mul_locals = staticmethod(lambda a, b: (a.data, b.data))

    a, b, c, L = chapter_2(Swapped)
    result, ids = run_check(L, language="python")
    check_ = result.gradient_check
    assert check_["status"] == "wrong"
    assert check_["message"].startswith(
        "Your `__mul__` gives the first input the local gradient `self.data`; it should be `other.data`"
    )
    assert check_["local"] == [
        {"node": ids[c], "input": 0, "stored": 2.0, "expected": 3.0},
        {"node": ids[c], "input": 1, "stored": 3.0, "expected": 2.0},
    ]
    # the backward itself is right for the local gradients stored: no grad is wrong, c is where to look
    assert check_["wrong"] == [] and check_["first"] == ids[c]


def test_mul_local_gradients_swapped_csharp_words():
    class Swapped(Learner):
        mul_locals = staticmethod(lambda a, b: (a.data, b.data))

    *_, L = chapter_2(Swapped)
    result, _ = run_check(L, language="csharp")
    assert (
        "`operator *` gives the first input the local gradient `a.Data`; it should be `b.Data`"
        in (result.gradient_check["message"])
    )


def test_wrong_pow_local_gradient_stored():
    class WrongPow(Learner):
        pow_local = staticmethod(lambda x, n: n * x**n)

    a = WrongPow(3.0, label="a")
    p = a**2
    p.label = "p"
    result, ids = run_check(p, language="python")
    check_ = result.gradient_check
    assert check_["local"] == [{"node": ids[p], "input": 0, "stored": 18.0, "expected": 6.0}]
    assert "Your `__pow__` gives the input of p the local gradient 18; the rule (n·xⁿ⁻¹) gives 6." in check_["message"]


def test_wrong_local_gradient_in_a_backward_closure():
    """micrograd style: the stored local gradients are the rule's (derived from the op), but the
    learner's _backward for ** applied n * x**n; the check finds the local gradient applied."""
    a = Learner(3.0, label="a")
    b = Learner(2.0, label="b")
    p = a**2
    p.label = "p"
    L = p * b
    L.label = "L"
    L.backward()
    a.grad = 2 * 3.0**2 * b.data  # what the learner's wrong closure left: n * x**n * p.grad
    nodes, ids = graph_of(L)
    check_ = check(nodes, ids[L], language="python").gradient_check
    assert check_["status"] == "wrong" and check_["first"] == ids[a] and check_["wrong"] == [ids[a]]
    assert check_["local"] == []
    assert "a gets 18 × 2 from p in your backward" in check_["message"]
    assert "the rule for `__pow__` (n·xⁿ⁻¹) gives 6" in check_["message"]


def test_data_against_the_op_rule():
    a, b, c, L = chapter_2()
    L.backward()
    nodes, ids = graph_of(L)
    nodes[ids[c]] = nodes[ids[c]]._replace(data=5.0)
    check_ = check(nodes, ids[L]).gradient_check
    assert check_["status"] == "wrong"
    assert check_["message"] == "node c: 2 × 3 is 6, yours holds 5."


@pytest.mark.parametrize(
    ("op", "exponent", "inputs", "data", "message"),
    [
        ("**", 2.0, [3.0], 10.0, "node p: 3 ** 2 is 9, yours holds 10."),
        ("neg", None, [3.0], 3.0, "node p: -3 is -3, yours holds 3."),
        ("log", None, [1.0], 2.0, "node p: log(1) is 0, yours holds 2."),
        ("relu", None, [-1.5], 1.5, "node p: relu(-1.5) is 0, yours holds 1.5."),
    ],
)
def test_data_against_the_rule_of_each_kind_of_op(op, exponent, inputs, data, message):
    leaves = [CheckNode(i, f"x{i}", None, x, 0.0, (), ()) for i, x in enumerate(inputs)]
    p = len(leaves)
    node = CheckNode(p, "p", op, data, 1.0, tuple(range(p)), (0.0,) * p, exponent)
    assert check([*leaves, node], p).gradient_check["message"] == message


def test_grads_off_by_rounding_are_not_wrong():
    a, b, c, L = chapter_2()
    L.backward()
    nodes, ids = graph_of(L)
    nodes[ids[a]] = nodes[ids[a]]._replace(grad=4.0 * (1 + 1e-12))
    assert check(nodes, ids[L]).gradient_check["status"] == "ok"
    nodes[ids[a]] = nodes[ids[a]]._replace(grad=4.0 * (1 + 1e-8))
    check_ = check(nodes, ids[L]).gradient_check
    assert check_["status"] == "wrong" and check_["wrong"] == [ids[a]]
    assert check_["message"].startswith("a is the first wrong node walking back from L")


def test_ieee_numbers_never_raise():
    """log(0), 0 * -inf, NaN data: compared as IEEE values, nothing raises. z = y * x with
    y = log(0): y gets 0 (and passes nothing on, as in chapter 2), x gets -inf; a walk that passes y's 0 on
    (chapter 3's) gives x 0 * inf = NaN, which is right too."""
    nodes = [
        CheckNode(0, "x", None, 0.0, -math.inf, (), ()),
        CheckNode(1, "y", "log", -math.inf, 0.0, (0,), (math.inf,)),
        CheckNode(2, "z", "*", math.nan, 1.0, (1, 0), (0.0, -math.inf)),
    ]
    result = check(nodes, 2)
    assert result.expected_grad == {0: -math.inf, 1: 0.0, 2: 1.0}
    assert result.gradient_check["status"] == "ok" and result.gradient_check["local"] == []
    nodes[0] = nodes[0]._replace(grad=math.nan)
    passed_on = check(nodes, 2)
    assert passed_on.gradient_check["status"] == "ok" and math.isnan(passed_on.expected_grad[0])
    nodes[0] = nodes[0]._replace(grad=5.0)
    assert check(nodes, 2).gradient_check["wrong"] == [0]


def test_a_wrong_local_gradient_is_named_beside_a_walk_that_passes_a_0_grad_on():
    # z = log(x) * x at x = 0, walked without chapter 2's skip (x's grad NaN, right), beside q = a * b whose stored
    # local gradient for a is 5, not b's data 3: the rule is named, not hidden by the walk's being right
    inf = math.inf
    nodes = [
        CheckNode(0, "x", None, 0.0, math.nan, (), ()),
        CheckNode(1, "y", "log", -inf, 0.0, (0,), (inf,)),
        CheckNode(2, "z", "*", math.nan, 1.0, (1, 0), (0.0, -inf)),
        CheckNode(3, "a", None, 2.0, 5.0, (), ()),
        CheckNode(4, "b", None, 3.0, 2.0, (), ()),
        CheckNode(5, "q", "*", 6.0, 1.0, (3, 4), (5.0, 2.0)),
        CheckNode(6, "L", "+", math.nan, 1.0, (2, 5), (1.0, 1.0)),
    ]
    result = check(nodes, 6)
    assert result.gradient_check["status"] == "wrong", result.gradient_check
    assert [(p["node"], p["input"]) for p in result.gradient_check["local"]] == [(5, 0)]
    assert math.isnan(result.expected_grad[0])
    nodes[5] = nodes[5]._replace(local_grads=(3.0, 2.0))
    nodes[3] = nodes[3]._replace(grad=3.0)
    right = check(nodes, 6).gradient_check
    assert right["status"] == "ok" and "x's grad is NaN (0 × Infinity is NaN)" in right["message"], right


def test_canonical_ops():
    assert canonical_op("ReLU") == ("relu", None)
    assert canonical_op("Relu") == ("relu", None)
    assert canonical_op("**2") == ("**", 2.0)
    assert canonical_op("add") == ("+", None)
    assert canonical_op("sigmoid") == (None, None)
    assert canonical_op(None) == (None, None)


@pytest.mark.parametrize(
    "op,xs,data,local",
    [
        ("-", [5.0, 3.0], 2.0, (1.0, -1.0)),
        ("/", [6.0, 3.0], 2.0, (1 / 3, -6 / 9)),
        ("neg", [4.0], -4.0, (-1.0,)),
        ("exp", [0.0], 1.0, (1.0,)),
        ("relu", [-1.0], 0.0, (0.0,)),
    ],
)
def test_derived_ops_are_checked_by_their_rule(op, xs, data, local):
    leaves = [CheckNode(i, f"x{i}", None, x, None, (), ()) for i, x in enumerate(xs)]
    node = CheckNode(len(xs), "y", op, data, None, tuple(range(len(xs))), local)
    assert check(leaves + [node], len(xs)).gradient_check["local"] == []
    wrong = node._replace(local_grads=tuple(g + 1 for g in local))
    assert len(check(leaves + [wrong], len(xs)).gradient_check["local"]) == len(xs)


def test_an_order_and_grads_walked_already_give_the_same_check():
    L = shared_chain()
    L.backward("assign")
    nodes, ids = graph_of(L)
    alone = check(nodes, ids[L])
    walked = shared_chain()
    walked.backward()
    expected = [v.grad for v in walked.topo()]
    given = check(nodes, ids[L], order=list(range(len(nodes))), expected=expected)
    assert given == alone and alone.gradient_check["status"] == "wrong"


def test_breadth_first_walk_is_no_topological_order():
    """A queue from the output, each node passing on once when it leaves the queue: d leaves it
    before e and f, its later users, have added to it."""
    from collections import deque

    L = shared_chain()
    L.grad = 1.0
    queue, seen = deque([L]), {L}
    while queue:
        v = queue.popleft()
        for child, local in zip(v.children, v.local_grads):
            child.grad += local * v.grad
            if child not in seen:
                seen.add(child)
                queue.append(child)
    nodes, ids = graph_of(L)
    message = check(nodes, ids[L]).gradient_check["message"]
    assert message.startswith("d passed its gradient on before all of its users had added theirs"), message


def test_a_recorded_walk_that_passes_a_node_on_before_its_users_says_which():
    """Each node passes on once, but d goes before f and e, which use it: their shares never reach a and b."""
    L = shared_chain()
    named = {v.label: v for v in L.topo()}
    walk = [named[label] for label in ("L", "t", "d", "f", "e")]
    L.grad = 1.0
    for v in walk:
        for child, local in zip(v.children, v.local_grads):
            child.grad += local * v.grad
    nodes, ids = graph_of(L)
    result = check(nodes, ids[L], [ids[v] for v in walk]).gradient_check
    assert result["status"] == "wrong"
    assert result["message"] == (  # e: the first of d's users that had not passed on yet
        "d passed its gradient on before all of its users had added theirs (e uses it too): walk the nodes in "
        "reverse topological order, so each passes on its whole gradient once."
    )


def test_a_walk_that_leaves_a_node_out_says_which():
    """The learner's recorded walk never ran e's step (their topological sort dropped it)."""
    L = shared_chain()
    order = [v for v in reversed(L.topo()) if v.label != "e"]
    L.grad = 1.0
    for v in order:
        for child, local in zip(v.children, v.local_grads):
            child.grad += local * v.grad
    nodes, ids = graph_of(L)
    result = check(nodes, ids[L], [ids[v] for v in order])
    assert result.gradient_check["message"] == (
        "e's backward never ran: your walk leaves it out, so its inputs get nothing from it."
    )


# confirmed(): the one-pass answer for a plainly right graph is check()'s own


def traced_with_grads(output, change=None):
    """(the trace, the learner's grads as the course's backward leaves them, changed by `change`)."""
    from engine import Limits, trace

    steps = trace(output, Limits())
    grads = {value: value.grad for value in steps.nodes}
    if change is not None:
        change(steps.nodes, grads)
    return steps, grads


def both_checks(steps, grads):
    from app.graph import check_nodes
    from engine.check import confirmed

    expected = [value.grad for value in steps.nodes]
    fast = confirmed(steps.nodes, steps.children, grads, expected, steps.output)
    full = check(check_nodes(steps, grads), steps.output, order=steps.order, expected=expected)
    return fast, full


def residual(size=40):
    from engine import Value

    w = Value(0.5, label="w")
    x = Value(1.5, label="x")
    for _ in range(size):
        x = x * w + x
    x.label = "L"
    return x


def test_a_right_graph_of_sums_and_products_is_confirmed_as_check_answers():
    fast, full = both_checks(*traced_with_grads(residual()))
    assert full.gradient_check["status"] == "ok"
    assert fast == full


@pytest.mark.parametrize(
    "change",
    [
        lambda nodes, grads: grads.update({nodes[0]: grads[nodes[0]] * (1 + 1e-12)}),  # within tolerance: check's call
        lambda nodes, grads: grads.update({nodes[0]: 0.0}),  # wrong
        lambda nodes, grads: grads.update({nodes[3]: math.nan}),
        lambda nodes, grads: setattr(nodes[2], "data", nodes[2].data + 1),  # data off its rule
        lambda nodes, grads: setattr(nodes[2], "_local_grads", (1.0, 2.0)),  # a local gradient off
        lambda nodes, grads: setattr(nodes[2], "op", "tanh"),  # an op this pass does not know
    ],
)
def test_anything_not_plainly_right_is_left_to_check(change):
    fast, full = both_checks(*traced_with_grads(residual(), change))
    assert fast is None and full.gradient_check["status"] in ("ok", "wrong")


def every_op():
    from engine import Value

    x = Value(0.7, label="x")
    y = Value(-1.3, label="y")
    z = (x * y + x).tanh() + (x**3).exp() + (y * y).log() + (x - y).relu() + x / (y * y + 1)
    z.label = "L"
    return z


def test_a_right_graph_of_every_op_is_confirmed_as_check_answers():
    steps, grads = traced_with_grads(every_op())
    assert {value.op for value in steps.nodes} >= {"+", "*", "**", "exp", "log", "relu", "tanh"}
    fast, full = both_checks(steps, grads)
    assert full.gradient_check["status"] == "ok"
    assert fast == full


@pytest.mark.parametrize("op", ["exp", "log", "relu", "tanh", "**"])
def test_a_node_of_any_op_off_its_rule_is_left_to_check(op):
    def change(nodes, grads):
        node = next(node for node in nodes if node.op == op)
        node._local_grads = (node._local_grads[0] * 1.5,)

    fast, full = both_checks(*traced_with_grads(every_op(), change))
    assert fast is None and full.gradient_check["status"] == "wrong" and full.gradient_check["local"]
