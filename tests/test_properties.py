"""Property tests: whatever the text, parsing and evaluating either give a Value or raise
the one ProgramError, never anything else, and never take a second.

Time is measured as this process's CPU time, not wall time: the suite shares its cores
with browsers and servers, and a busy neighbour must not fail a property about our code."""

import functools
import math
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import VARIANTS, Limits, ProgramError, Value, evaluate, measure_leaf_gradients, parse, trace

SECOND = 1.0
VARIABLES = {"x": 1.5, "y": -0.5, "w": 0.0}
COMMON = settings(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def run_everything(source, variant="correct"):
    """The whole engine pipeline; returns the output Value or the ProgramError raised."""
    try:
        output = evaluate(parse(source), VARIABLES)
        trace(output, variant=variant)
        measure_leaf_gradients(output, limits=Limits(max_check_evaluations=20_000))
    except ProgramError as err:
        assert isinstance(err.message, str) and err.message
        assert err.line >= 1 and err.column >= 1 and 0 <= err.offset <= len(source)
        assert str(err).startswith(f"{err.line}:{err.column}: ")
        return err
    assert isinstance(output, Value)
    return output


def within_a_second(source, variant="correct"):
    start = time.process_time()
    result = run_everything(source, variant)
    elapsed = time.process_time() - start
    assert elapsed < SECOND, f"{elapsed:.2f} s of CPU for {source!r}"
    return result


# --- random text ------------------------------------------------------------------------------


@settings(COMMON, max_examples=500)
@given(st.text(max_size=200))
def test_any_unicode_text(source):
    within_a_second(source)


PIECES = [
    "a", "b", "x", "y", "w", "log", "exp", "relu", "tanh", "sqrt", "0", "1", "2.5", ".5", "1e3", "1e", "2x", "1e400",
    " ", "\t", "\n", ";", "#", "=", "+", "-", "*", "/", "**", "(", ")", ",", ".", ".log()", ".relu()", "a = ", "x ** y",
    "\u0430", "\u200f", "\x00", "\u00d7", "'", "\r\n", "(((", ")))", "-" * 50,
]  # fmt: skip


@settings(COMMON, max_examples=500)
@given(st.lists(st.sampled_from(PIECES), max_size=60).map("".join), st.sampled_from(VARIANTS))
def test_soup_of_language_pieces(source, variant):
    within_a_second(source, variant)


# --- random valid programs ----------------------------------------------------------------------

NUMBERS = st.one_of(
    st.integers(0, 1000).map(str),
    st.floats(0, 100, allow_nan=False).map(lambda f: repr(f) if "e" not in repr(f) else "1.5"),
    st.sampled_from([".5", "2.", "1e-3", "1E+2", "0.0", "1e400", "3e-320"]),
)
SPACE = st.sampled_from(["", " ", "  ", "\t"])
FUNCTIONS = st.sampled_from(["log", "exp", "relu", "tanh"])


def numeric(children):
    """A plain-number expression: what may stand as an exponent."""
    return st.one_of(
        st.tuples(children, st.sampled_from(["+", "-", "*", "/", "**"]), children).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        children.map(lambda c: f"-{c}"),
    )


EXPONENTS = st.recursive(NUMBERS, numeric, max_leaves=4)


@functools.cache  # building a recursive strategy is costly; there are only five name sets
def expressions(names):
    leaves = st.one_of(NUMBERS, st.sampled_from(names))

    def extend(children):
        return st.one_of(
            st.tuples(children, SPACE, st.sampled_from(["+", "-", "*", "/"]), SPACE, children).map("".join),
            st.tuples(children, st.sampled_from(["**", " ** "]), EXPONENTS).map(lambda t: f"({t[0]}){t[1]}{t[2]}"),
            st.tuples(st.sampled_from(["-", "+", "- "]), children).map("".join),
            st.tuples(FUNCTIONS, children).map(lambda t: f"{t[0]}({t[1]})"),
            st.tuples(children, FUNCTIONS).map(lambda t: f"({t[0]}).{t[1]}()"),
            st.tuples(children, st.sampled_from(["", "\n", " \n  "])).map(lambda t: f"({t[1]}{t[0]}{t[1]})"),
        )

    return st.recursive(leaves, extend, max_leaves=20)


@st.composite
def programs(draw):
    names = tuple(VARIABLES)
    lines = []
    for index in range(draw(st.integers(0, 4))):
        name = f"v{index}"
        lines.append(f"{name}{draw(SPACE)}={draw(SPACE)}{draw(expressions(names))}")
        names += (name,)
    lines.append(draw(expressions(names)))
    separators = st.sampled_from(["\n", ";", " ; ", "\n\n", "  # note\n", "\r\n"])
    source = lines[0]
    for line in lines[1:]:
        source += draw(separators) + line
    return source + draw(st.sampled_from(["", "\n", " # end", ";"]))


@settings(COMMON, max_examples=400)
@given(programs(), st.sampled_from(VARIANTS))
def test_valid_programs_always_evaluate(source, variant):
    result = within_a_second(source, variant)
    assert isinstance(result, Value), f"{source!r} raised {result}"
    # non-finite numbers are results, not failures
    assert isinstance(result.data, float)


@settings(COMMON, max_examples=150)
@given(programs())
def test_trace_gradients_equal_backward(source):
    output = evaluate(parse(source), VARIABLES)
    output.backward()
    reached = sorted(_reached(output), key=lambda node: node._serial)
    from_backward = [node.grad for node in reached]
    t = trace(output)  # zeroes the gradients and walks again, recording every step
    assert t.nodes == reached
    assert all(_same(node.grad, grad) for node, grad in zip(t.nodes, from_backward))


def _reached(output):
    seen, stack = {output}, [output]
    while stack:
        for child in stack.pop()._children:
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return seen


def _same(a, b):
    return a == b or (math.isnan(a) and math.isnan(b))
