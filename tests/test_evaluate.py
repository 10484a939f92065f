"""The language's semantics: the graph a program builds is the one micrograd builds for
the same Python, with labels, constant leaves, free variables and the last statement as
the output; plus evaluation errors, non-finite numbers and deep programs."""

import math
import re
import sys

import pytest

from engine import Limits, ProgramError, Value, evaluate, parse, trace


def run(source, limits=Limits(), **variables):
    return evaluate(parse(source, limits), variables)


def nodes_of(source, **variables):
    """Every node the output reaches, in id order, as (label, op, data, child ids)."""
    t = trace(run(source, **variables))
    ids = {node: i for i, node in enumerate(t.nodes)}
    return [(n.label, n.op, n.data, [ids[c] for c in n._children]) for n in t.nodes]


def error(source, **variables):
    with pytest.raises(ProgramError) as caught:
        run(source, **variables)
    return caught.value


# --- the chapter exercises through the language ------------------------------------------


def test_chapter_1_exercise_in_the_language():
    program = "a = 2\nb = 3\nc = a * b\nd = c + a\ne = d ** 2"
    for name, expected in [("c", 6.0), ("d", 8.0), ("e", 64.0)]:
        out = run(program + f"\n{name}")
        assert out.data == expected and out.label == name


def test_chapter_2_exercise_in_the_language():
    out = run("a = 2; b = 3; c = a * b; L = c + a")
    out.backward()
    c, a = out._children
    b = c._children[1]
    assert (a.label, b.label, c.label, out.label) == ("a", "b", "c", "L")
    assert a.grad == 4.0 and b.grad == 2.0


def test_reuse_in_the_language():
    assert nodes_of("a = 1; b = a + a; c = b + b") == [
        ("a", None, 1.0, []),
        ("b", "+", 2.0, [0, 0]),
        ("c", "+", 4.0, [1, 1]),
    ]
    t = trace(run("a = 1; b = a + a; c = b + b"))
    assert t.nodes[0].grad == 4.0


# --- derived operations' shapes, as the course's Python builds them ----------------------


@pytest.mark.parametrize(
    "source, expected",
    [
        ("-a", [("a", None, 2.0, []), (None, None, -1.0, []), (None, "*", -2.0, [0, 1])]),
        (
            "a - b",
            [
                ("a", None, 2.0, []),
                ("b", None, 3.0, []),
                (None, None, -1.0, []),
                (None, "*", -3.0, [1, 2]),
                (None, "+", -1.0, [0, 3]),
            ],
        ),
        ("a / b", [("a", None, 2.0, []), ("b", None, 3.0, []), (None, "**", 1 / 3, [1]), (None, "*", 2 / 3, [0, 2])]),
        ("a / 2", [("a", None, 2.0, []), (None, None, 0.5, []), (None, "*", 1.0, [0, 1])]),
        ("a - 2", [("a", None, 2.0, []), (None, None, -2.0, []), (None, "+", 0.0, [0, 1])]),
        ("3 + a", [("a", None, 2.0, []), (None, None, 3.0, []), (None, "+", 5.0, [0, 1])]),
        (
            "3 - a",
            [
                ("a", None, 2.0, []),
                (None, None, -1.0, []),
                (None, "*", -2.0, [0, 1]),
                (None, None, 3.0, []),
                (None, "+", 1.0, [2, 3]),
            ],
        ),
        ("2 * a", [("a", None, 2.0, []), (None, None, 2.0, []), (None, "*", 4.0, [0, 1])]),
        ("2 / a", [("a", None, 2.0, []), (None, "**", 0.5, [0]), (None, None, 2.0, []), (None, "*", 1.0, [1, 2])]),
        ("a * a", [("a", None, 2.0, []), (None, "*", 4.0, [0, 0])]),
        ("-a**2", [("a", None, 2.0, []), (None, "**", 4.0, [0]), (None, None, -1.0, []), (None, "*", -4.0, [1, 2])]),
        ("+a", [("a", None, 2.0, [])]),
    ],
)
def test_derived_operation_shapes(source, expected):
    assert nodes_of(source, a=2.0, b=3.0) == expected


def test_power_records_its_exponent():
    out = run("a ** -1", a=2.0)
    assert out.op == "**" and out.exponent == -1 and out.data == 0.5


def test_method_and_function_calls_are_the_same_graph():
    assert (
        nodes_of("x.log()", x=4.0)
        == nodes_of("log(x)", x=4.0)
        == [("x", None, 4.0, []), (None, "log", math.log(4.0), [0])]
    )
    assert nodes_of("(a*b).relu()", a=2.0, b=-3.0) == [
        ("a", None, 2.0, []),
        ("b", None, -3.0, []),
        (None, "*", -6.0, [0, 1]),
        (None, "relu", 0.0, [2]),
    ]


@pytest.mark.parametrize("source", ["log(2)", "(2).log()", "log(1 + 1)"])
def test_call_on_a_plain_number_makes_a_constant_leaf_first(source):
    assert nodes_of(source) == [(None, None, 2.0, []), (None, "log", math.log(2.0), [0])]


def test_each_function():
    for name, f in [("log", math.log), ("exp", math.exp), ("tanh", math.tanh), ("relu", lambda x: max(0.0, x))]:
        out = run(f"{name}(x)", x=0.75)
        assert out.op == name and out.data == f(0.75)


# --- constants, labels, variables, output, ids ---------------------------------------------


def test_plain_numbers_fold_into_one_constant_leaf():
    assert nodes_of("2 * 3 + a", a=1.0) == [("a", None, 1.0, []), (None, None, 6.0, []), (None, "+", 7.0, [0, 1])]


def test_plain_arithmetic_follows_python():
    assert run("2**3**2").data == 512.0
    assert run("2 * -3").data == -6.0
    assert run("-2**2").data == -4.0
    assert run("7 - 2 - 1").data == 4.0
    assert run("8 / 2 / 2").data == 2.0
    assert run("1 + 2 * 3 ** 2").data == 19.0


def test_assigned_number_becomes_a_labelled_leaf():
    out = run("a = 2 * 3")
    assert out.label == "a" and out.op is None and out.data == 6.0


def test_labels_name_assigned_nodes_only():
    labels = [n[0] for n in nodes_of("a = 2; b = a * 3 + 1; b * b")]
    assert labels == ["a", None, None, None, "b", None]


def test_reassigning_a_name_keeps_the_first_label():
    # c = a is the same Value as a; micrograd has no copy, so the node keeps its name
    assert nodes_of("a = 2; c = a; c * 1")[0][0] == "a"


def test_free_variables_come_from_the_mapping():
    out = run("x * y + x", x=2.0, y=5)
    assert out.data == 12.0
    out.backward()
    x, y = out._children[0]._children
    assert (x.label, y.label) == ("x", "y")
    assert x.grad == 6.0 and y.grad == 2.0


def test_assignment_shadows_a_variable():
    assert run("x = 10; x + 1", x=2.0).data == 11.0


def test_free_variable_reused_is_one_node():
    assert nodes_of("x + x", x=2.0) == [("x", None, 2.0, []), (None, "+", 4.0, [0, 0])]


def test_non_number_variable_is_a_type_error():
    with pytest.raises(TypeError):
        run("x", x="2")
    with pytest.raises(TypeError):
        run("x", x=True)


def test_last_statement_is_the_output():
    out = run("a = 2\nb = a * 3\nb + 1\na - 1")
    assert out.data == 1.0


def test_last_statement_may_be_an_assignment():
    out = run("a = 2; b = a * 3")
    assert out.label == "b" and out.data == 6.0


def test_plain_number_output_becomes_a_leaf():
    out = run("1 + 2")
    assert isinstance(out, Value) and out.data == 3.0 and out._children == ()


def test_ids_are_creation_order_among_reached_nodes():
    t = trace(run("a = 1; unused = a * 100; b = 2; c = b + a"))
    assert [(n.label, n.data) for n in t.nodes] == [("a", 1.0), ("b", 2.0), ("c", 3.0)]
    assert t.output == 2


# --- evaluation errors ----------------------------------------------------------------------


def test_unknown_name():
    err = error("a = 1\nb = a + zz")
    assert (err.line, err.column, err.offset) == (2, 9, 14)
    assert err.message.startswith("unknown name 'zz'")
    assert "defined so far: a" in err.message


def test_unknown_name_that_is_a_function():
    err = error("log + 1")
    assert "to call the function write log(x)" in err.message


def test_use_before_assignment_is_unknown():
    err = error("b = a * 2; a = 1")
    assert (err.line, err.column) == (1, 5)
    assert "unknown name 'a'" in err.message


def test_unknown_function():
    err = error("x = 1\ny = sqrt(x)")
    assert (err.line, err.column, err.offset) == (2, 5, 10)
    assert err.message == "unknown function 'sqrt': the functions are log, exp, relu, tanh"


def test_unknown_method():
    err = error("x = 1; x.sin()")
    assert (err.line, err.column) == (1, 10)
    assert "unknown function 'sin'" in err.message


@pytest.mark.parametrize(
    "source, count, column", [("log(1, 2)", 2, 1), ("a = 1; exp()", 0, 8), ("tanh(1, 2, 3)", 3, 1)]
)
def test_wrong_argument_count(source, count, column):
    err = error(source)
    assert (err.line, err.column) == (1, column)
    assert f"takes exactly one argument, got {count}" in err.message


@pytest.mark.parametrize(
    "source, column", [("a = 2; b = 3; a ** b", 17), ("a = 2; 2 ** a", 10), ("a = 2; 2 ** (a * 1)", 10)]
)
def test_value_exponent(source, column):
    err = error(source)
    assert (err.line, err.column) == (1, column)
    assert "exp(b * log(a))" in err.message
    assert "plain number" in err.message


# --- non-finite numbers: IEEE results, never an exception -----------------------------------


@pytest.mark.parametrize(
    "source, expected",
    [
        ("log(0)", -math.inf),
        ("log(-1)", math.nan),
        ("(-8) ** 0.5", math.nan),
        ("exp(800)", math.inf),
        ("1/0", math.inf),
        ("-1/0", -math.inf),
        ("0/0", math.nan),
        ("a = 1; b = 0; a / b", math.inf),
        ("a = -8; a ** 0.5", math.nan),
        ("a = 0; log(a)", -math.inf),
        ("exp(800) * 0", math.nan),
        ("a = 800; exp(a) * 0", math.nan),
        ("10 ** 400", math.inf),
        ("1e308 * 10", math.inf),
        ("relu(0/0)", math.nan),
    ],
)
def test_non_finite_results(source, expected):
    out = run(source)
    t = trace(out)  # the backward pass must not raise either
    if math.isnan(expected):
        assert math.isnan(out.data)
    else:
        assert out.data == expected
    assert t.nodes[t.output] is out


# --- deep programs ---------------------------------------------------------------------------


def test_100000_statement_chain_with_default_recursion_limit():
    limit = sys.getrecursionlimit()
    source = "x = 1\n" + "x=x*1.0001\n" * 100_000
    out = run(source, Limits(max_source_length=len(source)))
    out.backward()
    assert sys.getrecursionlimit() == limit
    assert out.data == pytest.approx(1.0001**100_000, rel=1e-9)
    leaf = out
    while leaf._children:
        leaf = leaf._children[0]
    assert leaf.label == "x" and leaf.data == 1.0
    assert leaf.grad == pytest.approx(1.0001**100_000, rel=1e-9)


def test_50000_operation_expression_within_the_default_source_limit():
    """One expression as deep as the default 100,000-character limit allows: a 50,000-deep
    syntax tree that the evaluator and the trace walk without recursion."""
    limit = sys.getrecursionlimit()
    source = "x = 1\nx" + "*1" * 49_990
    assert len(source) <= 100_000
    out = run(source)
    depth = 0
    node = out
    while node._children:
        node, depth = node._children[0], depth + 1
    assert depth == 49_990
    t = trace(out, Limits(max_nodes=200_000))
    assert len(t.nodes) == 2 * 49_990 + 1
    assert node.grad == 1.0
    assert sys.getrecursionlimit() == limit


def test_10000_nested_parentheses_and_signs_with_a_raised_depth_limit():
    limits = Limits(max_depth=30_000)
    assert run("(" * 10_000 + "a" + ")" * 10_000, limits, a=3.0).data == 3.0
    out = run("-" * 10_001 + "a", limits, a=3.0)
    assert out.data == -3.0
    out.backward()
    assert run("log(" * 2_000 + "a" + ")" * 2_000, limits, a=1e300).op == "log"


def test_a_very_long_unknown_name_is_not_echoed_whole():
    name = "x" * 90_000  # within the default source limit
    with pytest.raises(ProgramError) as error:
        evaluate(parse(f"{name} + 1"))
    assert len(error.value.message) < 300 and "…" in error.value.message
    assert (error.value.line, error.value.column) == (1, 1)


# --- where each node's code is: spans widened over their parentheses -------------------------


def widened_by_walking(text, start, end):
    """What a span [start, end) widens to, found by walking its characters: the rule, written plainly."""
    if "." in text[start:end] and re.match(r"[ \t]*\(\)", text[end:]):  # `a.tanh` of `a.tanh()`
        end += len(re.match(r"[ \t]*\(\)", text[end:]).group())
    depth = lowest = 0
    for char in text[start:end]:
        if char in "()":
            depth += 1 if char == "(" else -1
            lowest = min(lowest, depth)
    for _ in range(-lowest):  # a ')' in the span closes a '(' before it
        if text.rfind("(", 0, start) >= 0:
            start = text.rfind("(", 0, start)
    for _ in range(depth - lowest):  # a '(' in the span is closed after it
        if text.find(")", end) >= 0:
            end = text.find(")", end) + 1
    return start, end


def test_spans_widen_over_their_parentheses_and_are_named_as_the_plain_rules_say():
    """The widening reads each parenthesis's depth from a table made once for the text, and a name
    reads the text with its blank runs made one space, made once too: every span of random texts
    widens as walking its characters says, and is named as its whole text shortened."""
    import random

    from engine.program import ShorthandOrigins, _shorten

    rng = random.Random(22)
    for _ in range(2_000):
        text = "".join(
            rng.choice(["a", "b", "(", "(", ")", ")", ".", "()", " ", "  ", "\n", "\t", "\xa0", "\x1c", "x" * 30])
            for _ in range(rng.randrange(40))
        )
        origins = ShorthandOrigins(text, [])
        for _ in range(10):
            start = rng.randrange(len(text) + 1)
            end = rng.randrange(start, len(text) + 1)
            assert origins._balanced(start, end) == widened_by_walking(text, start, end), (text, start, end)
            assert origins._name(start, end) == _shorten(text[start:end]), (text, start, end)
