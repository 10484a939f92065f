"""The trace: chapter 2's two tables row for row (golden files in tests/golden/), the
broken variants, warnings for non-finite numbers, and the trace's limits and size."""

import difflib
import json
import math
import pathlib
import sys

import pytest

from engine import VARIANTS, Limits, ProgramError, Value, evaluate, format_number, parse, trace

GOLDEN = pathlib.Path(__file__).parent / "golden"


def run(source, **variables):
    return evaluate(parse(source), variables)


def simulate_stack(t, name):
    """Replay the sort steps on an explicit (node, index) stack, as chapter 2's table does,
    checking that every step pops what is on top; returns (stack after, sorted) per step."""
    stack = [(t.output, 0)]
    emitted = []
    rows = []
    for number, step in enumerate(t.sort, 1):
        assert stack, f"sort step {number} pops an empty stack"
        top = stack.pop()
        assert top == (step.node, step.index), f"sort step {number} pops {step[:2]} but the stack's top is {top}"
        if step.action == "descend":
            stack += [(step.node, step.index + 1), (step.child, 0)]
        elif step.action == "skip":
            stack.append((step.node, step.index + 1))
        else:
            assert step.action == "emit" and step.child is None
            emitted.append(step.node)
        rows.append(([[name(n), i] for n, i in stack], [name(n) for n in emitted]))
    assert stack == [], "the sort ends with a non-empty stack"
    assert emitted == t.order
    return rows


def as_golden(t, program):
    """A trace in the golden files' form: nodes by label instead of id."""
    name = lambda i: None if i is None else t.nodes[i].label or f"#{i}"  # noqa: E731
    stacks = simulate_stack(t, name) if t.sort else []
    return {
        "program": program,
        "variant": t.variant,
        "order": [name(i) for i in t.order],
        "sort": [
            {
                "node": name(s.node),
                "index": s.index,
                "action": s.action,
                "child": name(s.child),
                "stack_after": stack,
                "sorted": emitted,
            }
            for s, (stack, emitted) in zip(t.sort, stacks)
        ],
        "propagate": [
            {
                "node": name(p.node),
                "grad": p.grad,
                "updates": [
                    {"child": name(u.child), "local_grad": u.local_grad, "delta": u.delta, "grad": u.grad}
                    for u in p.updates
                ],
            }
            for p in t.propagate
        ],
        "grads": {name(i): n.grad for i, n in enumerate(t.nodes)},
        "warnings": [{"node": name(w.node), "message": w.message} for w in t.warnings],
    }


def assert_matches_golden(filename):
    expected = json.loads((GOLDEN / filename).read_text())
    expected.pop("about")
    t = trace(run(expected["program"]), variant=expected["variant"])
    actual = as_golden(t, expected["program"])
    if actual != expected:
        lines = lambda d: json.dumps(d, indent=1).splitlines()  # noqa: E731
        diff = "\n".join(
            difflib.unified_diff(lines(expected), lines(actual), f"golden/{filename}", "engine trace", lineterm="")
        )
        pytest.fail(f"the trace differs from golden/{filename}:\n{diff}", pytrace=False)


@pytest.mark.parametrize(
    "filename",
    [
        "chapter2.json",
        "reuse.json",
        "chapter2-assign.json",
        "reuse-no-visited-check.json",
        "reuse-no-topological-order.json",
    ],
)
def test_golden_trace(filename):
    assert_matches_golden(filename)


# --- chapter 2's tables, stated once more in plain asserts ------------------------------------


def test_chapter_2_sort_table():
    t = trace(run("a = 2; b = 3; c = a * b; L = c + a"))
    a, b, c, L = range(4)
    assert [n.label for n in t.nodes] == ["a", "b", "c", "L"]
    assert [tuple(s) for s in t.sort] == [
        (L, 0, "descend", c),
        (c, 0, "descend", a),
        (a, 0, "emit", None),
        (c, 1, "descend", b),
        (b, 0, "emit", None),
        (c, 2, "emit", None),
        (L, 1, "skip", a),
        (L, 2, "emit", None),
    ]
    assert t.order == [a, b, c, L]


def test_chapter_2_propagate_table():
    t = trace(run("a = 2; b = 3; c = a * b; L = c + a"))
    a, b, c, L = range(4)
    assert [step.node for step in t.propagate] == [L, c, b, a]
    a_grads = [u.grad for step in t.propagate for u in step.updates if u.child == a]
    assert a_grads == [1.0, 4.0]
    assert [step.grad for step in t.propagate] == [1.0, 1.0, 2.0, 4.0]
    assert t.propagate[2].updates == [] and t.propagate[3].updates == []


# --- general properties of a trace -----------------------------------------------------------

PROGRAMS = [
    "a = 2; b = 3; c = a * b; L = c + a",
    "x = 0.5; w = -3; b = 2; n = x * w + b; o = n.tanh(); o * o + log(exp(o)) / 2",
    "a = 1.5; b = a * a; c = b * a - b / a; d = relu(c) + c ** 2; d * b",
    "a = 3; a",
]


@pytest.mark.parametrize("source", PROGRAMS)
def test_correct_trace_invariants(source):
    t = trace(run(source))
    ids = {node: i for i, node in enumerate(t.nodes)}
    edges = sum(len(n._children) for n in t.nodes)
    assert sorted(t.order) == list(range(len(t.nodes)))  # each node once
    position = {node: p for p, node in enumerate(t.order)}
    for i, node in enumerate(t.nodes):
        for child in node._children:
            assert position[ids[child]] < position[i]  # children first
    assert t.order[-1] == t.output
    assert len(t.sort) == len(t.nodes) + edges  # one pop per edge plus one emit per node
    assert [p.node for p in t.propagate] == t.order[::-1]
    for p in t.propagate:
        node = t.nodes[p.node]
        assert len(p.updates) == (len(node._children) if p.grad != 0 else 0)
        for update, local in zip(p.updates, node._local_grads):
            assert update.local_grad == local
            assert update.delta == local * p.grad
    for step in t.propagate:  # a node's gradient is complete when the walk reaches it
        assert step.grad == t.nodes[step.node].grad
    simulate_stack(t, str)


OVERFLOWING = "a = 1e-300; b = a * 1e300; c = b * 1e300"  # finite data, an infinite gradient


@pytest.mark.parametrize("variant", ["correct", "assign"])
@pytest.mark.parametrize("source", [*PROGRAMS, OVERFLOWING, "a = 0; b = log(a); c = b * 2"])
def test_a_trace_that_counts_its_steps_is_the_one_that_keeps_them(source, variant):
    """keep_steps=False (the columnar answer, whose steps the page replays): the same nodes, order, grads bit
    for bit, warnings, and as many steps as the kept trace has; a walk whose grads come out non-finite keeps
    its steps all the same (its warnings name the step)."""
    kept = trace(run(source, x=1.0), variant=variant)
    kept_grads = [node.grad for node in kept.nodes]
    counted = trace(run(source, x=1.0), variant=variant, keep_steps=False)
    assert counted.order == kept.order and counted.output == kept.output
    assert [str(node.grad) for node in counted.nodes] == list(map(str, kept_grads))  # NaN too
    assert counted.warnings == kept.warnings
    assert (counted.sort_count, counted.propagate_count) == (len(kept.sort_steps), len(kept.propagate_steps))
    finite = all(map(math.isfinite, kept_grads))
    assert (counted.sort_steps is None) == finite
    if finite:
        with pytest.raises(ValueError, match="counted its steps"):
            counted.sort  # noqa: B018


def test_trace_matches_backward():
    for source in PROGRAMS:
        out = run(source)
        out.backward()
        expected = [n.grad for n in trace(out).nodes]
        fresh = run(source)
        fresh.backward()
        assert [n.grad for n in trace(fresh).nodes] == expected


def test_trace_starts_from_zero_gradients():
    out = run("a = 2; b = a * a")
    out.backward()
    out.backward()
    first = [n.grad for n in trace(out).nodes]
    second = [n.grad for n in trace(out).nodes]
    assert first == second == [4.0, 1.0]


def test_node_with_zero_gradient_is_skipped():
    t = trace(run("a = 2; b = a * 3; c = b * 0"))
    b_step = next(p for p in t.propagate if t.nodes[p.node].label == "b")
    assert b_step.grad == 0 and b_step.updates == []


def test_skipping_zero_gradients_keeps_a_dead_branch_free_of_nan():
    t = trace(run("a = 0; b = log(a); c = b * 0"))
    a = t.nodes[0]
    assert math.isnan(t.nodes[t.output].data)
    assert a.grad == 0.0  # not 0 * Infinity


def test_variants_are_listed_and_unknown_variant_is_rejected():
    assert VARIANTS == ("correct", "no-visited-check", "assign", "no-topological-order")
    with pytest.raises(ValueError):
        trace(Value(1.0), variant="recursive")


def test_broken_variants_in_brief():
    reuse = "a = 1; b = a + a; c = b + b"
    t = trace(run(reuse), variant="no-visited-check")
    assert [t.nodes[i].label for i in t.order] == ["a", "a", "b", "a", "a", "b", "c"]
    assert t.nodes[0].grad == 8.0
    t = trace(run("a = 2; b = 3; c = a * b; L = c + a"), variant="assign")
    assert t.nodes[0].grad == 3.0
    t = trace(run(reuse), variant="no-topological-order")
    assert t.order == [] and t.sort == []
    assert t.nodes[0].grad == 6.0
    # b is entered with grad 1 (half of it) and passes that on before c's second update arrives
    assert [p.grad for p in t.propagate if t.nodes[p.node].label == "b"] == [1.0, 1.0, 2.0, 2.0]


def test_variants_agree_on_a_tree():
    # with no reuse, every walk gives the right gradients
    source = "a = 2; b = 3; c = a * b; d = log(c) + 1"
    grads = {v: [n.grad for n in trace(run(source), variant=v).nodes] for v in VARIANTS}
    assert all(g == grads["correct"] for g in grads.values())


# --- limits ------------------------------------------------------------------------------------


def test_node_limit():
    out = run("a = 2; b = 3; c = a * b; L = c + a")
    trace(out, Limits(max_nodes=4))
    with pytest.raises(ProgramError) as caught:
        trace(out, Limits(max_nodes=3))
    err = caught.value
    assert (err.line, err.column, err.offset) == (1, 1, 0)
    assert err.message == "the graph has 4 nodes; the limit is 3"


def test_default_node_limit_is_250000():
    x = Value(1.0)
    for _ in range(249_999):
        x = x.tanh()
    trace(x)
    with pytest.raises(ProgramError, match="250,001 nodes; the limit is 250,000"):
        trace(x.tanh())


def doubling_chain(n):
    lines = ["x0 = 1"] + [f"x{i} = x{i - 1} + x{i - 1}" for i in range(1, n + 1)]
    return "\n".join(lines)


@pytest.mark.parametrize("variant", ["no-visited-check", "no-topological-order"])
def test_variant_step_limit(variant):
    out = run(doubling_chain(40))  # 2**40 paths: the broken walks would never finish
    assert trace(out).nodes[0].grad == 2.0**40
    with pytest.raises(ProgramError) as caught:
        trace(out, variant=variant)
    assert "more than 200,000 steps" in caught.value.message
    small = run(doubling_chain(4))
    trace(small, Limits(max_variant_steps=200), variant=variant)
    with pytest.raises(ProgramError, match="more than 20 steps"):
        trace(small, Limits(max_variant_steps=20), variant=variant)


def test_100000_deep_chain_traces_with_default_recursion_limit():
    limit = sys.getrecursionlimit()
    x = leaf = Value(0.5, label="x")
    for _ in range(100_000):
        x = x.relu()
    t = trace(x, Limits(max_nodes=100_001))
    assert sys.getrecursionlimit() == limit
    assert len(t.nodes) == len(t.order) == 100_001
    assert t.nodes[0] is leaf and leaf.grad == 1.0
    assert len(t.sort) == 200_001


# --- warnings: where a non-finite number first appears ------------------------------------------


def warnings(source, **variables):
    t = trace(run(source, **variables))
    return [(t.nodes[w.node].label or t.nodes[w.node].op or "constant", w.message) for w in t.warnings]


@pytest.mark.parametrize(
    "source, expected",
    [
        ("a = 0; b = log(a)", [("b", "log(0) is -Infinity")]),
        ("a = -1; b = log(a)", [("b", "log(-1) is NaN: the logarithm of a negative number")]),
        ("a = -8; b = a ** 0.5", [("b", "(-8) ** 0.5 is NaN: a negative number to a fractional power")]),
        ("a = 800; b = exp(a)", [("b", "exp(800) is Infinity: too large for a float (overflow)")]),
        ("a = 1; b = 0; c = a / b", [("**", "0 ** -1 is Infinity: division by zero")]),
        (
            "a = 800; b = exp(a); c = b * 0",
            [("b", "exp(800) is Infinity: too large for a float (overflow)"), ("c", "Infinity * 0 is NaN")],
        ),
        ("a = 1e308; b = a * 10", [("b", "1e+308 * 10 is Infinity: too large for a float (overflow)")]),
        ("a = 1/0", [("a", "a is Infinity")]),
        (
            "1/0 + x",
            [("constant", "a constant is Infinity: arithmetic on plain numbers (such as 1/0 or 1e308 * 10) made it")],
        ),
        ("a = -2; b = a ** 1e400", [("b", "(-2) ** Infinity is Infinity: too large for a float (overflow)")]),
        ("a = -2; b = a ** (0/0)", [("b", "(-2) ** NaN is NaN")]),
        ("a = 1e-300; b = a * 1e300; c = b * 1e300", [("a", "the gradient overflows: 1e+300 × 1e+300 is Infinity")]),
        ("a = 0; b = a ** 0.5", [("b", "the local gradient of 0 ** 0.5 is Infinity")]),
    ],
)
def test_warnings_name_the_first_node(source, expected):
    assert warnings(source, x=1.0) == expected


def test_only_the_first_appearance_is_warned():
    assert warnings("a = 0; b = log(a); c = b * 2 + 1; d = exp(c)") == [("b", "log(0) is -Infinity")]


def test_finite_programs_have_no_warnings():
    for source in PROGRAMS:
        assert trace(run(source)).warnings == []


def test_finite_numbers_whose_sum_overflows_have_no_warnings():
    # the all-finite check sums the numbers first; an overflowing sum is only a reason to look closer
    assert warnings("a = 1e308; b = a * 1; c = b + a * -1; d = c - 1e308") == []


@pytest.mark.parametrize(
    "x, text",
    [
        (2.0, "2"),
        (-3.0, "-3"),
        (0.5, "0.5"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
        (math.nan, "NaN"),
        (1e300, "1e+300"),
        (0.1, "0.1"),
    ],
)
def test_format_number(x, text):
    assert format_number(x) == text


# --- every walk's records in the order they happen (issue 11, item 9) ---------------------------

RECORD_ORDER_PROGRAMS = [
    "a = 2; b = 3; c = a * b; L = c + a",
    "a = 1; b = a + a; c = b + b",
    "u1 = 0.5; u2 = -1.5; v1 = 1.2; v2 = 0.4; bias = 0.3; z = u1*v1 + u2*v2 + bias; y = tanh(z)",
    "z1 = 2; z2 = 1; z3 = 0.1; e1 = exp(z1); e2 = exp(z2); e3 = exp(z3); s = e1 + e2 + e3; p1 = e1 / s; L = -log(p1)",
    "a = -1; b = log(a); c = b * 2 + a; L = c * c",
    "a = 2; b = a * a; c = b * a + b; d = c * a",
]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("program", RECORD_ORDER_PROGRAMS)
def test_each_update_starts_from_the_childs_previous_grad(program, variant):
    t = trace(run(program), variant=variant)
    grads = {t.output: 1.0}
    for step in t.propagate:
        assert step.grad == pytest.approx(grads.get(step.node, 0.0), nan_ok=True), (
            "a node walks with the grad the records gave it"
        )
        for u in step.updates:
            before = grads.get(u.child, 0.0)
            expected = u.delta if variant == "assign" else before + u.delta
            assert u.grad == pytest.approx(expected, nan_ok=True)
            grads[u.child] = u.grad
    assert [grads.get(i, 0.0) for i in range(len(t.nodes))] == pytest.approx([n.grad for n in t.nodes], nan_ok=True)
