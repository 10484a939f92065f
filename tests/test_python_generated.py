"""Generated Python-subset programs (hypothesis) run by valuegraph and by PyPI micrograd in a
CPython subprocess build the same graph: node count, op multiset, data and leaf gradients.

The programs mix what learners write: leaves, the operators with numbers on either side, relu,
powers, reassignment, augmented assignment, for and while loops, comprehensions, sum, zip, small
functions and a class with __init__ and __call__. Values stay finite (where CPython raises on 0 ** -1 or an overflow,
valuegraph follows IEEE instead, so those examples are set aside)."""

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from micrograd_oracle import assert_same_graph, micrograd_calls

LEAF = st.floats(min_value=0.1, max_value=3.0).map(lambda x: round(x, 3)) | st.floats(
    min_value=-3.0, max_value=-0.1
).map(lambda x: round(x, 3))
CONSTANT = st.sampled_from(["2", "0.5", "-1.5", "3.0", "1"])


@st.composite
def expressions(draw, names):
    a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
    k = draw(CONSTANT)
    return draw(
        st.sampled_from(
            [
                f"{a} + {b}",
                f"{a} * {b}",
                f"{a} - {b}",
                f"{a} / {b}",
                f"{a} ** 2",
                f"{a} ** -1",
                f"{a} ** 3",
                f"-{a}",
                f"{k} * {a}",
                f"{a} + {k}",
                f"{k} - {a}",
                f"{k} / {a}",
                f"{a}.relu()",
                f"({a} * {b}).relu() + {k}",
                f"{a} * {a}",
                f"{a} / {k}",
            ]
        )
    )


@st.composite
def programs(draw):
    lines = ["from micrograd.engine import Value"]
    names = []
    for i in range(draw(st.integers(1, 4))):
        lines.append(f"v{i} = Value({draw(LEAF)})")
        names.append(f"v{i}")
    for i in range(draw(st.integers(1, 7))):
        shape = draw(
            st.sampled_from(["assign", "reassign", "augmented", "loop", "comprehension", "function", "while", "class"])
        )
        target = f"t{i}"
        if shape == "assign":
            lines.append(f"{target} = {draw(expressions(names))}")
        elif shape == "reassign":
            name = draw(st.sampled_from(names))
            lines.append(f"{target} = {name}")
            lines.append(f"{target} = {draw(expressions([target, *names]))}")
        elif shape == "augmented":
            lines.append(f"{target} = {draw(st.sampled_from(names))}")
            lines.append(
                f"{target} {draw(st.sampled_from(['+=', '-=', '*=']))} {draw(st.sampled_from([*names, '2', '0.5']))}"
            )
        elif shape == "loop":
            lines.append(f"{target} = {draw(st.sampled_from(names))}")
            lines.append(f"for k in range({draw(st.integers(1, 3))}):")
            lines.append(f"    {target} = {target} * {draw(st.sampled_from(names))} + k")
        elif shape == "comprehension":
            chosen = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3))
            weights = draw(st.lists(CONSTANT, min_size=len(chosen), max_size=len(chosen)))
            lines.append(f"{target} = sum(w * x for w, x in zip([{', '.join(weights)}], [{', '.join(chosen)}]))")
        elif shape == "while":
            lines.append(f"{target} = {draw(st.sampled_from(names))}")
            lines.append(f"n{i} = 0")
            lines.append(f"while n{i} < {draw(st.integers(1, 3))}:")
            lines.append(f"    {target} = {target} + {draw(st.sampled_from(names))} * n{i}")
            lines.append(f"    n{i} += 1")
        elif shape == "class":
            lines.append(f"class Scale{i}:")
            lines.append("    def __init__(self, w):")
            lines.append("        self.w = w")
            lines.append("    def __call__(self, x):")
            lines.append("        return self.w * x + x")
            lines.append(f"{target} = Scale{i}({draw(st.sampled_from(names))})({draw(st.sampled_from(names))})")
        else:
            lines.append(f"def f{i}(a, b=2.0):")
            lines.append("    return a * b + a")
            lines.append(
                f"{target} = f{i}({draw(st.sampled_from(names))}) + f{i}({draw(st.sampled_from(names))}, "
                f"b={draw(st.sampled_from(names))})"
            )
        names.append(target)
    lines.append(f"out = {' + '.join(draw(st.lists(st.sampled_from(names), min_size=1, max_size=3)))}")
    lines.append("out = out * 1.0")  # the output is never a leaf or one of the operands above
    lines.append("out.backward()")
    return "\n".join(lines) + "\n"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_generated_programs_build_micrographs_graph(program):
    calls = micrograd_calls(program, lecture=False, arithmetic_errors=True)
    assume(calls is not None)
    assert_same_graph(program, oracle_calls=calls)
