"""Issue 20: a program's own value class runs as CPython runs it. Every program of
tests/own_classes/ (learner-style classes written for valuegraph: the course's, micrograd's and
microgpt's styles, correct and broken) and micrograd's own engine.py, read from the installed
PyPI package at test time, print the same lines under valuegraph as under CPython, and the
graph valuegraph observes has the same nodes, data and grads (1e-12 relative) as the objects
CPython made."""

import contextlib
import importlib.util
import io
import math
import random
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import ProgramError, run_program, trace
from engine.python import run_python
from engine.python.objects import BasesError, Class
from engine.python.observe import derive_local_grads
from tests.cpython import cpython_printed

OWN_CLASSES = sorted((Path(__file__).parent / "own_classes").glob("*.py"))
MICROGRAD_README = """
a = Value(-4.0)
b = Value(2.0)
c = a + b
d = a * b + b**3
c += c + 1
c += 1 + c + (-a)
d += d * 2 + (b + a).relu()
d += 3 * d + (b - a).relu()
e = c - d
f = e**2
g = f / 2.0
g += 10.0 / f
print(f'{g.data:.4f}')
g.backward()
print(f'{a.grad:.4f}')
print(f'{b.grad:.4f}')
print(g)
out = g
"""
DATA_FIELDS = ("data", "Data", "value")
INPUT_FIELDS = ("_children", "children", "_prev", "_inputs", "inputs")


def micrograd_engine() -> str:
    return Path(importlib.util.find_spec("micrograd.engine").origin).read_text(encoding="utf-8")


def programs():
    yield from ((path.stem, path.read_text(encoding="utf-8")) for path in OWN_CLASSES)
    yield "micrograd_engine_readme", micrograd_engine() + MICROGRAD_README


def _field(obj, names):
    return next((getattr(obj, name) for name in names if hasattr(obj, name)), None)


def cpython_graph(text):
    """Run the text with CPython; (printed lines, [(data, grad)] of the nodes `out` reaches)."""
    random.seed(0)
    namespace = {"__name__": "__main__"}
    printed = io.StringIO()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)  # CPython's default of 1,000 stops the 3,000-deep chain; valuegraph's does not
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(text, "<program>", "exec"), namespace)  # the test's own corpus, run as CPython would
    finally:
        sys.setrecursionlimit(limit)
    out = namespace["out"]
    seen, pending = {id(out): out}, [out]
    while pending:
        for child in _field(pending.pop(), INPUT_FIELDS):
            if id(child) not in seen:
                seen[id(child)] = child
                pending.append(child)
    nodes = [(float(_field(n, DATA_FIELDS)), _grad(getattr(n, "grad", None))) for n in seen.values()]
    return printed.getvalue().splitlines(), nodes


def _grad(grad):
    return float(grad) if isinstance(grad, (int, float)) else None


def _close(a, b):
    if a is None or b is None:
        return a is b
    return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300)


def assert_same(text):
    expected_printed, expected_nodes = cpython_graph(text)
    result = run_python(text)
    assert result.printed == expected_printed
    graph = result.graph
    assert graph is not None
    assert len(graph["nodes"]) == len(expected_nodes)
    ours = sorted((n["data"], n["grad"]) for n in graph["nodes"])
    theirs = sorted(expected_nodes)
    for (data, grad), (expected_data, expected_grad) in zip(ours, theirs):
        assert _close(data, expected_data) and _close(grad, expected_grad), (data, grad, expected_data, expected_grad)
    return result


def test_the_corpus_has_at_least_20_classes_of_the_three_styles():
    texts = [path.read_text(encoding="utf-8") for path in OWN_CLASSES]
    assert len(texts) >= 20
    assert sum("_local_grads" in t for t in texts) >= 5 and sum("_backward" in t for t in texts) >= 4
    assert sum("__slots__" in t for t in texts) >= 3 and sum("set()" in t for t in texts) >= 5
    assert all(t.startswith("# Written") for t in texts)


@pytest.mark.parametrize(("name", "text"), list(programs()), ids=[name for name, _ in programs()])
def test_the_program_runs_as_cpython_runs_it(name, text):
    assert_same(text)


HEAD = (
    "class V:\n    def __init__(self, data, children=()):\n"
    "        self.data = data\n        self.grad = 0\n        self._children = children\n"
)


@pytest.mark.parametrize(
    ("program", "message"),
    [
        (HEAD + "    def __add__(self, o):\n        while True:\n            pass\nV(1) + V(2)", "statements"),
        (
            HEAD + "    def __add__(self, o):\n        return self + o\nV(1) + V(2)",
            "calls nest deeper than 4000",
        ),
        (
            HEAD + "    def __repr__(self):\n        return 1 / 0 + ''\nprint(V(1))",
            "`+` does not work on float and string",
        ),
        (HEAD + "    def __repr__(self):\n        return 5\nprint(V(1))", "__repr__ of V must return a string"),
        (HEAD + "    def backward(self):\n        self.grad = 1\nout = V('x', ())\nout.backward()", "holds a string"),
        (HEAD + "a = V(1)\nb = V(2)\nc = a - b", "unsupported operand type(s) for -: 'V' and 'V'"),
        (HEAD + "out = V(1, (V('two'),))", "its .data holds a string, not a number"),
        (HEAD + "    def __repr__(self):\n        return str(self)\nprint(V(1))", "calls nest deeper than 4000"),
        (HEAD + "__slots__ = ('data',)\nclass W:\n    __slots__ = ('data',)\nW().grad = 1", "__slots__ lists data"),
    ],
)
def test_hostile_classes_end_in_the_one_error_type(program, message):
    with pytest.raises(ProgramError) as caught:
        run_program(program)
    assert message in caught.value.message


def test_recursion_is_bounded_by_the_programs_own_call_depth_not_pythons():
    deep = (OWN_CLASSES[0].parent / "deep_chain_recursion.py").read_text(encoding="utf-8")
    assert run_python(deep).graph is not None  # 3,000 deep, past CPython's default recursion limit
    from engine import Limits

    with pytest.raises(ProgramError, match="calls nest deeper than 500"):
        run_python(deep, Limits(max_call_depth=500))


def test_the_walk_of_micrograds_backward_is_recorded_in_the_order_its_closures_ran():
    result = run_python(micrograd_engine() + "a = Value(2.0)\nb = Value(3.0)\nc = a * b\nout = c + a\nout.backward()")
    walk = result.graph["walk"].steps()  # each node as its position in nodes
    at = {n["data"]: i for i, n in enumerate(result.graph["nodes"])}
    assert walk[0] == {"node": None, "updates": [{"child": at[8.0], "grad": 1.0}]}  # the seed: self.grad = 1
    assert walk[1]["node"] == at[8.0]
    assert sorted(update["child"] for update in walk[1]["updates"]) == sorted([at[6.0], at[2.0]])
    assert result.graph["calls"][:2] == [at[8.0], at[6.0]]  # the _backward calls, in the order they ran
    ops = {n["data"]: n["op"] for n in result.graph["nodes"]}
    assert ops[8.0] == "+" and ops[6.0] == "*" and result.graph["inputs_are_sets"]
    locals_of_c = next(n["local_grads"] for n in result.graph["nodes"] if n["data"] == 6.0)
    assert locals_of_c == [3.0, 2.0]  # derived from _op '*' and the inputs in the order __mul__ passed them


def test_the_output_of_an_own_class_program_is_its_observed_graph_as_values_made_when_asked():
    # The server's answer reads the observed graph itself; the Values are made on the first read of output.
    text = micrograd_engine() + "a = Value(2.0)\nb = Value(3.0)\nc = a * b\nout = c + a\nout.backward()"
    program = run_program(text)
    assert program.python._output is None  # not made by the run
    output = program.output
    assert output is program.output is program.python.output  # made once
    nodes = trace(output).nodes
    observed = program.python.graph["nodes"]
    assert [(n.data, n.op, n.label) for n in nodes] == [(n["data"], n["op"], n["label"]) for n in observed]
    assert [len(n._children) for n in nodes] == [len(n["children"]) for n in observed]
    assert run_program("a = Value(2.0)\nb = a * a\nb.backward()").output.data == 4.0  # built-in Values: as before
    assert run_program("a = 2\nb = a * a").output.data == 4.0  # the shorthand: as before


def _own(name):
    return (OWN_CLASSES[0].parent / f"{name}.py").read_text(encoding="utf-8")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("program", "status", "wrong", "message"),
    [
        ("micrograd", "ok", [], "Your gradients match the course's backward from out on every node"),
        ("micrograd_style", "ok", [], "Your gradients match the course's backward from out on every node"),
        ("course_assign_not_accumulate", "wrong", ["a"], "a is used by 2 nodes; its grad holds only the last one"),
        ("micrograd_no_visited_set", "wrong", ["a", "b"], "c's backward ran 2 times"),
        ("visited_list_equal_by_data", "wrong", ["a", None], "c's backward never ran"),
        ("microgpt_wrong_pow", "wrong", [], "Your `__pow__` gives the input of node 1 the local gradient 3"),
        ("never_seeded", "wrong", ["a", None, "out"], "was never seeded with 1"),
        ("grads_not_reset", "wrong", ["w"], "when this backward() began, w's grad was already 4.19"),
        ("node_inputs_value", "no_backward", [], "backward() has not run"),
    ],
)
async def test_backward_answers_with_the_learners_graph_grads_and_check(client, program, status, wrong, message):
    text = micrograd_engine() + MICROGRAD_SMALL if program == "micrograd" else _own(program)
    body = (await client.post("/backward", json={"expression": text, "check": True})).json()
    check = body["gradient_check"]
    labels = {node["id"]: node["label"] for node in body["nodes"]}
    assert check["status"] == status and message in check["message"], check
    assert [labels[i] for i in check["wrong"]] == wrong
    expected_printed, expected_nodes = cpython_graph(text)
    assert body["printed"] == expected_printed
    ours = sorted((n["data"], n["grad"] if status != "no_backward" else None) for n in body["nodes"])
    assert [data for data, _ in ours] == sorted(data for data, _ in expected_nodes)
    if status != "no_backward":  # the grads shown are the learner's, as CPython's objects hold them
        assert all(_close(a, b) for (_, a), (_, b) in zip(ours, sorted(expected_nodes)))
    for node in body["nodes"]:
        assert "expected_grad" in node


MICROGRAD_SMALL = "\na = Value(2.0)\nb = Value(3.0)\nc = a * b\nout = c + a\nout.backward()\nprint(out)\n"


def _class_of(name):
    """The class definitions of one corpus program: its text up to the first top-level statement."""
    lines = _own(name).split("\n")
    end = next(
        i
        for i, line in enumerate(lines)
        if line and not line[0].isspace() and not line.startswith(("class", "import", "#"))
    )
    return "\n".join(lines[:end])


STYLES = {"course": "course_value", "micrograd": "micrograd_style", "microgpt": "microgpt_style"}


@st.composite
def random_graphs(draw):
    """A program body over Value: leaves, then nodes that reuse earlier ones (+, *, with constants)."""
    leaves = draw(st.integers(1, 4))
    lines = [f"v{i} = Value({draw(st.floats(-3, 3, allow_nan=False)):.6f})" for i in range(leaves)]
    count = leaves
    for _ in range(draw(st.integers(1, 25))):
        a, b = draw(st.integers(0, count - 1)), draw(st.integers(0, count - 1))
        form = draw(st.sampled_from(["v{a} + v{b}", "v{a} * v{b}", "v{a} + 1.5", "2 * v{a}", "v{a} * v{a}"]))
        lines.append(f"v{count} = " + form.format(a=a, b=b))
        count += 1
    lines += [f"out = v{count - 1}", "out.backward()", "print(out.data)"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("style", sorted(STYLES))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=random_graphs())
def test_random_graphs_run_as_cpython_runs_them_in_each_style(style, body):
    assert_same(_class_of(STYLES[style]) + "\n\n" + body)


@pytest.mark.anyio
async def test_the_time_budget_stops_a_program_running_on_a_fresh_stack(make_client):
    import threading
    import time

    def program_threads():
        return sum(1 for thread in threading.enumerate() if thread.name == "valuegraph program")

    before = program_threads()
    deep_then_endless = "def f(n):\n    if n > 0:\n        return f(n - 1)\n    while True:\n        pass\nf(1500)"
    client = make_client(time_budget=0.5, max_statements=10**12)
    started = time.monotonic()
    response = await client.post("/backward", json={"expression": deep_then_endless})
    assert response.status_code == 503 and time.monotonic() - started < 5
    for _ in range(600):  # the stopped call ends, and with the run its kept threads (up to 30 s on a loaded machine)
        if program_threads() == before:
            break
        time.sleep(0.05)
    assert program_threads() == before


# A class's bases in order (Class.mro): CPython's own order (C3), checked against CPython's classes built
# the same way; lookups search them in that order.


def _random_hierarchy(rng, refusals):
    """(our class, CPython's class) pairs; bases CPython refuses are refused by both (appended to refusals)."""
    classes = []
    for i in range(rng.randint(1, 10)):
        picked = [rng.randrange(len(classes)) for _ in range(rng.randint(0, min(3, len(classes))))]
        attributes = {name: f"{name} of C{i}" for name in ("a", "b", "__eq__") if rng.random() < 0.3}
        if rng.random() < 0.7:
            attributes["__slots__"] = rng.choice(["x", ("x", "y"), (), [f"z{i}"]])
        try:
            theirs = type(f"C{i}", tuple(classes[k][1] for k in picked), {})
        except TypeError as refused:
            with pytest.raises(BasesError) as ours_refused:
                Class(f"C{i}", tuple(classes[k][0] for k in picked), attributes)
            message = str(refused).replace("\n", " ").replace("object, ", "")  # our classes have no object
            assert message[0].lower() + message[1:] == str(ours_refused.value)
            refusals.append(message)
            continue
        classes.append((Class(f"C{i}", tuple(classes[k][0] for k in picked), attributes), theirs))
    return classes


def test_the_order_and_lookups_are_cpythons():
    rng = random.Random(5)
    refusals, ordered = [], 0
    for _ in range(400):
        classes = _random_hierarchy(rng, refusals)
        ours = [cls for cls, _ in classes]
        by_name = {cls.name: cls for cls in ours}
        for cls, theirs in classes:
            met = [by_name[c.__name__] for c in theirs.__mro__[:-1]]  # CPython's order, without object
            assert cls.mro == tuple(met)
            ordered += len(cls.bases) > 1
            for name in ("a", "b", "__eq__", "c"):
                having = [c.attributes[name] for c in met if name in c.attributes]
                assert cls.get(name, "none") == (having[0] if having else "none")
            assert [cls.is_subclass_of(other) for other in ours] == [other in met for other in ours]
            assert cls.equal_by_identity == all("__eq__" not in c.attributes for c in met)
            if all("__slots__" in c.attributes for c in met):
                slots = [c.attributes["__slots__"] for c in met]
                assert cls.slots == {n for s in slots for n in ((s,) if type(s) is str else s)}
            else:
                assert cls.slots is None
    assert ordered > 200, "hierarchies with several bases were made"
    assert {message.split(" ")[0] for message in refusals} == {"duplicate", "Cannot"}, "and bases CPython refuses"


class _CountedBases(tuple):
    """A class's bases that count how often anything walks through them."""

    walks = 0

    def __iter__(self):
        _CountedBases.walks += 1
        return super().__iter__()


def _walks(action):
    before = _CountedBases.walks
    action()
    return _CountedBases.walks - before


def test_a_diamond_hierarchy_is_walked_once_per_class_not_once_per_path():
    # C{i}(C{i-1}, C{i-2}): the paths to C0 double every two classes (fib(20) of them from C19)
    classes = [Class("C0", _CountedBases(), {"f": 1})]
    classes.append(Class("C1", _CountedBases(classes[-1:]), {}))
    for i in range(2, 20):
        made = _walks(lambda: classes.append(Class(f"C{i}", _CountedBases((classes[i - 1], classes[i - 2])), {})))
        assert made <= 2 * (i + 1)  # the bases of each class it builds on, a few times at most
    last = classes[-1]
    for lookup in (lambda: last.get("f"), lambda: last.get("g"), lambda: last.is_subclass_of(classes[0])):
        assert _walks(lookup) == 0  # the order made with the class is read, not walked again
    assert last.get("f") == 1 and last.is_subclass_of(classes[0]) and not classes[0].is_subclass_of(last)


def test_a_deep_diamond_hierarchy_runs_as_cpython_runs_it():
    # 2**40 paths from C79 to C0: walking each one never ended
    program = (
        "class C0:\n    def f(self):\n        return 'f of C0'\n"
        "class C1(C0):\n    def g(self):\n        return 'g of C1'\n"
        + "".join(f"class C{i}(C{i - 1}, C{i - 2}):\n    pass\n" for i in range(2, 80))
        + "o = C79()\nprint(o.f(), o.g(), isinstance(o, C0), isinstance(C0(), C79), isinstance(o, C40))\n"
    )
    assert run_python(program, shows_graph=False).printed == cpython_printed(program)


@pytest.mark.parametrize(
    ("op", "data", "inputs", "local"),
    [
        ("log", -math.inf, [0.0], [math.inf]),  # IEEE, as the course's C#: 1/0 is Infinity, not an error
        ("/", math.inf, [1.0, 0.0], [math.inf, -math.inf]),
        ("**-1", math.inf, [0.0], [-math.inf]),
        ("exp", math.inf, [1000.0], [math.inf]),
        ("ReLU", 0.0, [-1.0], [0.0]),
        ("+", 3.0, [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]),  # a sum of any number of inputs
        ("*", 4.0, [2.0], [4.0]),  # x * x, its inputs kept in a set: one input
        ("-", 0.0, [2.0], [0.0]),  # x - x likewise
        ("**", 4.0, [2.0], [math.nan]),  # no exponent: the gradient is not known
        ("sigmoid", 0.5, [0.0], None),  # not an op the course defines
        ("*", 6.0, [2.0], [3.0]),  # 3 * x, the 3 kept as no node: one input in a tuple
        ("+", 5.0, [2.0], [1.0]),  # x + 3 likewise
        ("-", -2.0, [2.0], [-1.0]),  # -x written `-`
        ("-", -1.0, [2.0], None),  # x - 3 or 3 - x: not known without the 3
        ("/", 0.5, [2.0], None),  # x / 4 or 1 / x likewise
    ],
)
def test_local_gradients_a_node_does_not_hold_come_from_the_courses_rules(op, data, inputs, local):
    in_set = local is not None and len(inputs) == 1 and op in ("*", "-") and data in (4.0, 0.0)  # x * x, x - x
    derived = derive_local_grads(op, data, inputs, from_set=in_set)
    assert derived == local or (local is not None and all(map(math.isnan, derived)) and all(map(math.isnan, local)))


def test_multiple_inheritance_looks_up_in_cpythons_order():
    # D(B, C) with B(A): CPython's order is D, B, A, C (C3), not breadth first (D, B, C, A)
    program = (
        "class A:\n    def f(self):\n        return 'A'\n    def g(self):\n        return 'g of A'\n"
        "class B(A):\n    def g(self):\n        return 'B then ' + super().g()\n"
        "class C:\n    def f(self):\n        return 'C'\n    def g(self):\n        return 'g of C'\n"
        "class D(B, C):\n    pass\n"
        "class E(A):\n    def g(self):\n        return 'E then ' + super().g()\n"
        "class F(B, E):\n    pass\n"
        "print(D().f(), D().g(), F().g(), isinstance(F(), E))\n"
    )
    assert (
        run_python(program, shows_graph=False).printed
        == cpython_printed(program)
        == ["A B then g of A B then E then g of A True"]
    )


@pytest.mark.parametrize(
    ("bases", "message"),
    [
        ("A, A", "duplicate base class A"),
        ("A, B", "cannot create a consistent method resolution order (MRO) for bases A, B"),
    ],
)
def test_bases_no_class_can_have_are_an_error_where_the_class_is_defined(bases, message):
    program = f"class A:\n    pass\nclass B(A):\n    pass\nclass C({bases}):\n    pass\n"
    with pytest.raises(ProgramError) as raised:
        run_python(program, shows_graph=False)
    assert raised.value.message == message and raised.value.span.line == 5


EQUAL_BY_X = "class P:\n    def __init__(self, x):\n        self.x = x\n    def __eq__(self, other):\n"


@pytest.mark.parametrize(
    "program",
    [
        # `in`, ==, != and index() on lists and tuples ask the class's __eq__ (Python's own, on the interpreter's
        # objects, knew only identity)
        EQUAL_BY_X + "        return isinstance(other, P) and self.x == other.x\np, q, r = P(1), P(1), P(2)\n"
        "print(p in [q], p in (q,), p not in [q], [p] == [q], (p,) == (q,), [p] != [q], [[p]] == [[q]], [p] == [r])\n"
        "print(r in [p, q], [p, r].index(P(2)), 1 in [p], [1, p] == [1, q], (p, 1) == [q, 1])\n",
        # __eq__ returning NotImplemented: the other's, then identity
        EQUAL_BY_X
        + "        return NotImplemented\np = P(1)\nprint(p == p, p == P(1), p != P(1), p in [P(1)], p in [p])\n",
        # a comparison a class lacks is its reflection of the other's: a > b by b's __lt__, for one class too
        "class P:\n    def __init__(self, x):\n        self.x = x\n    def __lt__(self, other):\n"
        "        return self.x < other.x\nl = [P(3), P(1), P(2)]\n"
        "print(max(l).x, min(l).x, P(1) > P(2), sorted(l, reverse=True)[0].x)\n",
    ],
    ids=["equal by __eq__", "NotImplemented", "reflected comparison"],
)
def test_containers_and_comparisons_ask_the_classs_own_methods_as_cpython_does(program):
    assert run_python(program, shows_graph=False).printed == cpython_printed(program)
