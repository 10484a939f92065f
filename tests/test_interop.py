"""show() and export() on graphs built with other Value classes: PyPI micrograd's (installed) and
the course's (a class with the course's fields, written here), compared with our engine on the
same computations; and mismatches named with their node and reason."""

import html
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from micrograd.engine import Value as MicrogradValue

from app.interop import MICROGRAD_ORDER_NOTE, GraphMismatch, as_engine_value
from app.notebook import export, show
from engine import Value, trace

REPO = Path(__file__).resolve().parent.parent


class CourseValue:
    """The course's shape: data, grad, _children and _local_grads (no op, no label)."""

    __slots__ = ("data", "grad", "_children", "_local_grads")

    def __init__(self, data, children=(), local_grads=()):
        self.data, self.grad, self._children, self._local_grads = data, 0, children, local_grads

    def _lift(self, other):
        return other if isinstance(other, CourseValue) else CourseValue(other)

    def __add__(self, other):
        other = self._lift(other)
        return CourseValue(self.data + other.data, (self, other), (1, 1))

    def __mul__(self, other):
        other = self._lift(other)
        return CourseValue(self.data * other.data, (self, other), (other.data, self.data))

    def __pow__(self, n):
        return CourseValue(self.data**n, (self,), (n * self.data ** (n - 1),))

    def log(self):
        return CourseValue(math.log(self.data), (self,), (1 / self.data,))

    def exp(self):
        return CourseValue(math.exp(self.data), (self,), (math.exp(self.data),))

    def relu(self):
        return CourseValue(max(0, self.data), (self,), (float(self.data > 0),))

    __radd__ = __add__
    __rmul__ = __mul__

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def __truediv__(self, other):
        return self * other**-1

    def backward(self):
        order, seen = [], set()

        def visit(node):
            if id(node) not in seen:
                seen.add(id(node))
                for child in node._children:
                    visit(child)
                order.append(node)

        visit(self)
        self.grad = 1
        for node in reversed(order):
            for child, local in zip(node._children, node._local_grads):
                child.grad += local * node.grad


def neuron(V):
    """A small graph using every op the class has, with reuse: the same in each class."""
    x, w, b = V(0.5), V(-1.5), V(2.0)
    z = x * w + b
    y = (z * z + x).relu() + z**3 - w / b
    return y, (x, w, b)


def engine_grads(output, leaves):
    trace(output)
    return [leaf.grad for leaf in leaves]


@pytest.mark.parametrize("V", [MicrogradValue, CourseValue], ids=["micrograd", "course"])
def test_gradients_match_the_classes_own_backward(V):
    y, leaves = neuron(V)
    y.backward()
    expected = [leaf.grad for leaf in leaves]
    assert expected == pytest.approx(engine_grads(*neuron(Value)), rel=1e-12)
    converted = as_engine_value(y)
    trace(converted)
    by_data = {}
    stack, seen = [converted], set()
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            stack.extend(node._children)
            if not node._children:
                by_data.setdefault(node.data, []).append(node.grad)
    got = [sum(by_data[leaf.data]) for leaf in leaves]
    assert got == pytest.approx(expected, rel=1e-12)
    assert converted.data == pytest.approx(y.data, rel=1e-15)


def test_micrograd_and_our_engine_agree_node_for_node():
    y, _ = neuron(MicrogradValue)
    ours, _ = neuron(Value)
    a, b = as_engine_value(y), ours
    count = lambda root: len(trace(root).nodes)
    assert count(a) == count(b)
    ops = lambda root: sorted(str(node.op) for node in trace(root).nodes)
    assert ops(a) == ops(b)


def test_a_set_folds_a_plus_a_but_the_graph_keeps_both_edges():
    a = MicrogradValue(3.0)
    s = a + a
    p = a * a
    for node, op, local in ((s, "+", (1.0, 1.0)), (p, "*", (3.0, 3.0))):
        assert len(node._prev) == 1  # micrograd's set kept one
        converted = as_engine_value(node)
        assert converted.op == op and len(converted._children) == 2 and converted._children[0] is converted._children[1]
        assert converted._local_grads == local
    total = p + s
    converted = as_engine_value(total)
    trace(converted)
    (leaf,) = {id(node): node for node in trace(converted).nodes if node.op is None}.values()
    assert converted.data == total.data and leaf.grad == 2 * 3.0 + 2  # d(a*a + a+a)/da


def test_micrograd_children_follow_its_set_order():
    a, b = MicrogradValue(2.0), MicrogradValue(3.0)
    c = a * b
    converted = as_engine_value(c)
    assert [child.data for child in converted._children] == [child.data for child in c._prev]
    assert converted._local_grads == tuple(other.data for other in reversed(list(c._prev)))


def test_the_note_on_the_set_order_is_shown_in_the_notebook_and_the_file(tmp_path):
    y, _ = neuron(MicrogradValue)
    shown = show(y)._repr_html_()
    assert html.escape(MICROGRAD_ORDER_NOTE) in shown
    document = export(y, tmp_path / "lesson.html").read_text()
    assert 'data-vg="note"' in document and MICROGRAD_ORDER_NOTE in html.unescape(document)
    course_y, _ = neuron(CourseValue)
    assert 'data-vg="note"' not in export(course_y, tmp_path / "course.html").read_text()
    assert "micrograd" not in show(course_y)._repr_html_().split("<div data-vg-still>")[0]


def test_the_file_holds_the_graph_with_derived_local_grads(tmp_path):
    a, b = MicrogradValue(2.0), MicrogradValue(3.0)
    L = a * b + a
    document = export(L, tmp_path / "l.html").read_text()
    data = json.loads(re.search(r'<script type="application/json" id="vg-data">(.*?)</script>', document, re.S)[1])
    nodes = data["response"]["nodes"]
    times = next(node for node in nodes if node["op"] == "*")
    assert sorted(times["local_grads"]) == [2.0, 3.0]
    assert sorted(node["grad"] for node in nodes if node["op"] is None) == [2.0, 4.0]


@pytest.mark.parametrize(
    ("op", "data", "local"),
    [
        ("tanh", math.tanh(0.5), 1 - math.tanh(0.5) ** 2),
        ("exp", math.exp(0.5), math.exp(0.5)),
        ("log", math.log(0.5), 2.0),
    ],
)
def test_the_lectures_tanh_exp_and_log_nodes_take_the_courses_rules(op, data, local):
    """PyPI's micrograd has none of them; the lecture's Value (and a learner's) writes _op as these."""
    x = MicrogradValue(0.5)
    node = _with(MicrogradValue(data), _prev={x}, _op=op)
    converted = as_engine_value(node)
    assert converted.op == op and converted.data == data and converted._local_grads == (local,)
    with pytest.raises(GraphMismatch) as error:
        as_engine_value(_with(MicrogradValue(data + 1.0), _prev={x}, _op=op))
    assert f"'{op}' of its children's data gives" in str(error.value)


def test_a_deep_micrograd_chain_needs_no_recursion():
    x = MicrogradValue(1.0)
    for _ in range(5_000):
        x = x * 1.0001 + 0.0
    converted = as_engine_value(x)
    assert len(trace(converted).nodes) > 10_000


@pytest.mark.parametrize(
    "build, words",
    [
        (lambda: _with(MicrogradValue(1.0) + MicrogradValue(2.0), _op="%"), "unknown _op '%'"),
        (lambda: _with(MicrogradValue(2.0) ** 2, _op="**two"), "cannot read the exponent"),
        (lambda: _with(MicrogradValue(1.0) + MicrogradValue(2.0), data=7.0), "'+' of its children's data gives 3.0"),
        (
            lambda: _with(MicrogradValue(1.0).relu(), _prev={MicrogradValue(1.0), MicrogradValue(2.0)}),
            "'ReLU' takes 1 input, its _prev holds 2",
        ),
        (lambda: _with(MicrogradValue(1.0), _prev={MicrogradValue(1.0)}), "has no _op but 1 children"),
        (lambda: CourseValue(5.0, (CourseValue(2.0), CourseValue(3.0)), (1, 2)), "match none of"),
        (lambda: CourseValue(5.0, (CourseValue(2.0), CourseValue(3.0)), (1,)), "has 2 children but 1 local gradients"),
        (lambda: CourseValue("five"), "not a number"),
        (lambda: _with(MicrogradValue(1.0) + MicrogradValue(2.0), _op=3), "_op is 3, not a string"),
        (
            lambda: _with(
                MicrogradValue(1.0) + MicrogradValue(2.0),
                _prev={MicrogradValue(1.0), MicrogradValue(2.0), MicrogradValue(4.0)},
            ),
            "'+' takes 2 inputs, its _prev holds 3",
        ),
        (
            lambda: CourseValue(5.0, (CourseValue(2.0), CourseValue(3.0)), ("one", "one")),
            "_local_grads is ('one', 'one'), not numbers",
        ),
    ],
    ids=[
        "unknown op",
        "bad exponent",
        "stale data",
        "relu with two",
        "leaf with children",
        "course no op fits",
        "course counts",
        "not a number",
        "op not a string",
        "three inputs to +",
        "local grads not numbers",
    ],
)
def test_mismatches_name_the_node_and_why(build, words):
    node = build()
    with pytest.raises(GraphMismatch) as error:
        show(node)
    assert words in str(error.value)


def test_the_mismatch_names_a_labelled_node():
    a, b = MicrogradValue(1.0), MicrogradValue(2.0)
    c = a + b
    c.label = "c"
    a.data = 10.0  # an optimiser step after the forward pass
    with pytest.raises(GraphMismatch) as error:
        export(c, "unused.html")
    assert str(error.value).startswith("node 'c' (data 3.0): '+' of its children's data gives 12.0")


def test_anything_else_is_a_type_error():
    with pytest.raises(TypeError) as error:
        show(3.0)
    assert "not float" in str(error.value)


def _with(node, **fields):
    for name, value in fields.items():
        setattr(node, name, value)
    return node


def test_the_cli_exports_a_micrograd_graph_from_a_module(tmp_path):
    (tmp_path / "mymodel.py").write_text(
        "from micrograd.engine import Value\na = Value(2.0); b = Value(3.0)\nloss = a * b + a\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "export", "--graph", "mymodel:loss", "-o", "out.html"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "children in a set" in done.stderr
    document = (tmp_path / "out.html").read_text()
    data = json.loads(re.search(r'<script type="application/json" id="vg-data">(.*?)</script>', document, re.S)[1])
    assert sorted(node["grad"] for node in data["response"]["nodes"] if node["op"] is None) == [2.0, 4.0]
    names = {node["label"] or node["expr"] for node in data["response"]["nodes"]}
    assert names in ({"a", "b", "a*b", "loss"}, {"a", "b", "b*a", "loss"})  # by the module's variables
    assert 'data-vg="note"' in document
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "export", "--graph", "mymodel:nothing", "-o", "out.html"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "mymodel has no 'nothing'" in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "export", "--graph", "mymodel:a.data", "-o", "out.html"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "not float" in done.stderr


def test_micrograd_leaves_the_caller_holds_are_values_named_by_its_variables():
    from micrograd.nn import MLP

    x, y = MicrogradValue(2.0), MicrogradValue(-1.0)
    z = (x * y + 1).relu() * x
    nodes = _nodes_of(show(z))
    leaves = {node["label"] or node["expr"]: node["label"] is not None for node in nodes if node["op"] is None}
    assert leaves == {"x": True, "y": True, "1": False}  # the 1 of `+ 1` stays a constant, as in the page
    (relu,) = [node["expr"] for node in nodes if node["op"] == "relu"]
    assert re.fullmatch(r"relu\(((x\*y|y\*x)\+1|1\+(x\*y|y\*x))\)", relu), relu  # in the order of micrograd's sets
    model = MLP(2, [1])
    out = model([x, y])
    labels = {node["label"] for node in _nodes_of(show(out)) if node["op"] is None}
    assert {"model.layers[0].neurons[0].w[0]", "model.layers[0].neurons[0].b", "x", "y"} <= labels


def _nodes_of(shown):
    data = json.loads(
        re.search(r'<script type="application/json" id="vg-data">(.*?)</script>', shown.document, re.S)[1]
    )
    return data["response"]["nodes"]
