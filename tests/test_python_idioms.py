"""The two loops of a value class's backward() that run as one step (engine/python/idioms.py): the
textbook topological sort and the gradient's accumulation. Each program here runs twice, with the
shapes recognised and with them run as written, and must print the same lines, count the same
statements, leave the same graph and fail with the same message at the same place; where CPython
can run it, it prints what CPython prints. The counters show which way each loop actually ran."""

from pathlib import Path

import pytest

from engine import Limits, ProgramError
from engine.python import idioms, run_python
from engine.python.observe import learner_walk
from tests.cpython import cpython_printed

OWN_CLASSES = Path(__file__).parent / "own_classes"
# microgpt's style of class (the course's): its backward hands back the order it sorted
VALUE_CLASS = (
    (OWN_CLASSES / "microgpt_style.py")
    .read_text()
    .split("\n\nw = [")[0]
    .replace(
        "                child.grad += local_grad * v.grad\n",
        "                child.grad += local_grad * v.grad\n        return topo\n",
    )
)

COURSE = (
    VALUE_CLASS
    + """
a, b, c = Value(2.0), Value(-3.0), Value(10.0)
e = a * b
d = e + c
L = d * a + a * a
order = L.backward()
print([v.data for v in order])
print(a.grad, b.grad, c.grad, e.grad, d.grad, L.grad)
again = L.backward()
print(len(again), a.grad, b.grad)
"""
)

# the course's names changed, the product written the other way round, children in a set and in
# lists, the sort's set and list made in the function around it
RENAMED = """
class Node:
    def __init__(self, data, prev=(), grads=()):
        self.data = data
        self.grad = 0.0
        self.prev = set(prev)
        self.order = list(prev)
        self.grads = list(grads)

def mul(x, y):
    return Node(x.data * y.data, (x, y), (y.data, x.data))

def add(x, y):
    return Node(x.data + y.data, (x, y), (1.0, 1.0))

def backprop(root):
    seen = set()
    ordered = []
    def walk(n):
        if n not in seen:
            seen.add(n)
            for p in n.prev:
                walk(p)
            ordered.append(n)
    walk(root)
    root.grad = 1.0
    for n in reversed(ordered):
        for parent, g in zip(n.order, n.grads):
            parent.grad += n.grad * g
    return ordered

xs = [Node(float(i) + 0.5) for i in range(6)]
total = xs[0]
for i in range(1, 6):
    total = add(mul(total, xs[i]), xs[i - 1])
walked = backprop(total)
print(len(walked), [round(x.grad, 6) for x in xs])
"""


def run(text, *, one_step=True, monkeypatch=None, shows_graph=True, **limits):
    """(printed lines, runs, observed graph, statement counts at each progress point) of a run, or
    the ProgramError it fails with."""
    if not one_step:
        monkeypatch.setattr(idioms, "sorting_visit", lambda node: None)
        monkeypatch.setattr(idioms, "accumulating_loop", lambda node: None)
        monkeypatch.setattr(idioms, "operator_method", lambda node: None)
    counts = []
    try:
        result = run_python(
            text, Limits(**limits), progress=lambda state: counts.append(state.steps), shows_graph=shows_graph
        )
    except ProgramError as error:
        return ("error", error.message, error.span)
    finally:
        monkeypatch.undo()
    # Either way the program's own walk is the same steps of the same nodes once attributed: run in one
    # step, a pass of the accumulation is known to be its node's; run as written, its writes say so.
    graph = result.graph and dict(result.graph, walk=learner_walk(result.graph))
    return (result.printed, result.runs, graph, counts)


@pytest.fixture
def ways(monkeypatch):
    """ways(text, **limits) -> (one step, as written, {loop: [one step, as written] counts})."""

    def both(text, shows_graph=True, **limits):
        taken = {"sort": [0, 0], "accumulation": [0, 0]}
        walk_graph, accumulate = idioms.walk_graph, idioms.accumulate

        def counted_walk(*arguments):
            result = walk_graph(*arguments)
            taken["sort"][result is None] += 1
            return result

        def counted_accumulate(*arguments):
            result = accumulate(*arguments)
            taken["accumulation"][result is None] += 1
            return result

        monkeypatch.setattr(idioms, "walk_graph", counted_walk)
        monkeypatch.setattr(idioms, "accumulate", counted_accumulate)
        one_step = run(text, monkeypatch=monkeypatch, shows_graph=shows_graph, **limits)
        as_written = run(text, one_step=False, monkeypatch=monkeypatch, shows_graph=shows_graph, **limits)
        return one_step, as_written, taken

    return both


def test_the_course_backward_runs_in_one_step_and_means_the_same(ways):
    one_step, as_written, taken = ways(COURSE)
    assert one_step == as_written
    assert one_step[0] == cpython_printed(COURSE)
    assert one_step[0][0] == "[2.0, -3.0, -6.0, 10.0, 4.0, 8.0, 4.0, 12.0]"  # the sort's order, inputs first
    assert taken == {"sort": [2, 0], "accumulation": [16, 0]}  # two backward() calls, 8 nodes each
    assert one_step[2] is not None and len(one_step[2]["nodes"]) == 8  # the learner's graph, observed


def test_any_names_sets_of_children_and_the_product_either_way(ways):
    one_step, as_written, taken = ways(RENAMED, shows_graph=False)  # no class named as a value class
    assert one_step == as_written
    assert one_step[0] == cpython_printed(RENAMED)
    assert taken["sort"] == [1, 0] and taken["accumulation"][0] == 16 and taken["accumulation"][1] == 0


@pytest.mark.parametrize(
    "changes, ends, fallbacks",
    [
        # leaves without the field: the class's default serves them, so the sort runs as written
        (
            [
                ('__slots__ = ("data", "grad", "_children", "_local_grads")', "_children = ()"),
                (
                    "        self._children = children\n",
                    "        if children:\n            self._children = children\n",
                ),
            ],
            "printed",
            {"sort": 2},
        ),
        # a class that defines __eq__ cannot be in a set: the program's own error, at its place
        (
            [
                (
                    "    def backward(self):",
                    "    def __eq__(self, other):\n        return False\n\n    def backward(self):",
                )
            ],
            "error",
            {},
        ),
        # the nodes to walk back over are no list: the error at the loop's call
        ([("reversed(topo)", "reversed(len(topo))")], "error", {}),
        # a child that is no instance: the error reading its field
        ([("a, b, c = Value(2.0)", "a, b, c = Value(2.0, (1.5,), (1,))")], "error", {"sort": 1}),
        # local gradients that are values of the class: the accumulation into a product's inputs makes
        # nodes, as written, in the walk's pass; into a sum's inputs it still runs in one step
        (
            [("(other.data, self.data))", "(other, self))")],
            "ran",  # its gradients are values, printed as objects: not CPython's text
            {"accumulation": 3},
        ),
    ],
)
def test_what_the_loops_cannot_do_runs_as_written(ways, changes, ends, fallbacks):
    text = COURSE
    for change in changes:
        assert change[0] in text
        text = text.replace(*change)
    one_step, as_written, taken = ways(text, shows_graph=ends == "error")
    assert one_step == as_written
    assert (one_step[0] == "error") == (ends == "error"), one_step
    if ends == "printed":
        assert one_step[0] == cpython_printed(text)
    for loop, count in fallbacks.items():
        assert taken[loop][1] >= count  # the loop found it could not, and ran as written
    if ends == "ran":
        assert taken["accumulation"][0] > 0  # the passes into a sum's inputs, in one step beside them


def test_a_field_other_than_grad_is_accumulated_but_not_walked(ways):
    text = (
        COURSE.replace('"_local_grads")', '"_local_grads", "acc")')
        .replace(
            "        self._local_grads = local_grads\n",
            "        self._local_grads = local_grads\n        self.acc = 0\n",
        )
        .replace("child.grad += local_grad * v.grad", "child.acc += local_grad * v.acc")
        .replace("        self.grad = 1\n", "        self.acc = 1\n")
    )
    text += "print(a.acc, b.acc, e.acc)\n"
    one_step, as_written, taken = ways(text)
    assert one_step == as_written and taken["accumulation"] == [16, 0]
    assert one_step[0] == cpython_printed(text)
    assert one_step[2]["nodes"][0]["grad"] == 0  # the graph's grads: none written, none walked


def test_a_shadowed_zip_or_a_rebound_sort_function_runs_as_written(ways):
    shadowed = COURSE.replace("a, b, c = ", "def zip(xs, ys):\n    return []\n\na, b, c = ")
    one_step, as_written, taken = ways(shadowed)
    assert one_step == as_written and taken["accumulation"] == [0, 0]
    assert one_step[0] == cpython_printed(shadowed) != cpython_printed(COURSE)  # no gradient arrived
    rebound = VALUE_CLASS + (
        "x = Value(1.0)\ny = x * 2.0 + x\nseen, order = set(), []\n"
        "def visit(v):\n    if v not in seen:\n        seen.add(v)\n        for c in v._children:\n"
        "            visit(c)\n        order.append(v)\n"
        "first = visit\ndef visit(v):\n    order.append('the second visit')\n"
        "first(y)\nprint(len(order), len([v for v in order if v == 'the second visit']))\n"
    )
    one_step, as_written, taken = ways(rebound, shows_graph=False)
    assert one_step == as_written and one_step[0] == cpython_printed(rebound) == ["3 2"]
    assert taken["sort"] == [0, 0]  # its recursive call is another function's: run as written


def test_the_statement_limit_stops_at_the_same_statement(ways):
    one_step, _, _ = ways(COURSE)
    total = one_step[3][-1]  # the statements run by the last print
    for limit in (total - 1, total - 40, total // 2 + 7, total // 2):
        stopped, as_written, taken = ways(COURSE, max_statements=limit)
        assert stopped == as_written
        assert stopped[0] == "error" and "statements" in stopped[1]
    assert ways(COURSE, max_statements=total + 5)[0][0] != "error"


def test_the_call_depth_limit_and_collection_limit_fail_as_written(ways):
    chain = VALUE_CLASS + (
        "x = Value(1.0)\ny = x\nfor i in range(60):\n    y = y * 1.01\nprint(len(y.backward()), round(x.grad, 9))\n"
    )
    fine, as_written, taken = ways(chain)
    assert fine == as_written and fine[0] == cpython_printed(chain) and taken["sort"] == [1, 0]
    for depth in (20, 61, 62, 63, 64):
        one_step, as_written, _ = ways(chain, max_call_depth=depth)
        assert one_step == as_written
    assert ways(chain, max_call_depth=20)[0][0] == "error"
    assert ways(chain, max_call_depth=200)[0][0] != "error"
    one_step, as_written, _ = ways(chain, max_collection_length=100)
    assert one_step == as_written and one_step[0] == "error" and "100" in one_step[1]


def test_recognised_shapes_and_near_misses():
    import ast

    def shape(text, finder):
        node = ast.parse(text).body[0]
        return finder(node)

    sort = (
        "def f(v):\n    if v not in s:\n        s.add(v)\n        for c in v.kids:\n            f(c)\n"
        "        o.append(v)\n"
    )
    assert shape(sort, idioms.sorting_visit)[:4] == ("v", "s", "o", "kids")
    for near_miss in (
        sort.replace("f(c)", "g(c)"),  # calls another function
        sort.replace("f(c)", "f(v)"),  # calls itself on the node again
        sort.replace("o.append(v)", "o.append(c)"),
        sort.replace("s.add(v)", "t.add(v)"),  # adds to another set than it tests
        sort.replace("for c in", "for v in"),  # the loop rebinds the node
        sort.replace("not in", "in"),
        sort.replace("def f(v):", "def f(v, w=1):"),
        sort + "    return v\n",
        sort.replace("        o.append(v)\n", "        o.append(v)\n    else:\n        pass\n"),
    ):
        assert shape(near_miss, idioms.sorting_visit) is None, near_miss
    loop = "for c, g in zip(n.kids, n.grads):\n    c.grad += g * n.grad\n"
    assert shape(loop, idioms.accumulating_loop) == ("c", "g", "n", "kids", "grads", "grad", True)
    assert shape(loop.replace("g * n.grad", "n.grad * g"), idioms.accumulating_loop)[-1] is False
    for near_miss in (
        loop.replace("c.grad +=", "c.grad -="),
        loop.replace("g * n.grad", "g + n.grad"),
        loop.replace("n.grads", "m.grads"),  # fields of two nodes
        loop.replace("g * n.grad", "g * c.grad"),
        loop.replace("c.grad +=", "c.data +="),  # another field than the one the product reads
        loop.replace("zip(", "enumerate(").replace(", n.grads", ""),
        loop + "    print(c)\n",
    ):
        assert shape(near_miss, idioms.accumulating_loop) is None, near_miss


def test_a_pass_run_in_one_step_is_its_own_nodes_step_even_beside_a_twin():
    # c and d are twins: the same op on the same inputs, each given 1 by L. Their passes write the
    # same numbers to a and b; only the pass run in one step knows which node's loop it was.
    twins = VALUE_CLASS + "a, b = Value(2.0), Value(-3.0)\nc = a * b\nd = a * b\nL = c + d\nL.backward()\n"
    graph = run_python(twins).graph
    assert [node["label"] for node in graph["nodes"]] == ["a", "b", "c", "d", "L"]
    c, d, out = 2, 3, 4  # positions: in the order they were made
    steps = learner_walk(graph).steps()
    assert [step["node"] for step in steps] == [None, out, d, c]  # the seed, then the sort's order reversed
    assert [update["child"] for update in steps[2]["updates"]] == [0, 1]


@pytest.mark.parametrize("path", sorted(OWN_CLASSES.glob("*.py")), ids=lambda path: path.stem)
def test_every_own_class_program_means_the_same_either_way(ways, path):
    one_step, as_written, _ = ways(path.read_text())
    assert one_step == as_written


# ---- a value class's + and * (idioms.operator_in_one_step) ----

DIVIDING = VALUE_CLASS.replace(
    "    def __truediv__(self, other):\n        return self * other**-1\n",
    "    def __truediv__(self, other):\n        other = other if isinstance(other, Value) else Value(other)\n"
    "        return Value(self.data / other.data, (self, other), (1 / other.data, -self.data / other.data**2))\n",
)
NEURON = """
w = [Value(0.5), Value(-1.5), Value(2.0)]
x = [1.0, 2, Value(-3.0)]
out = sum((wi * xi for wi, xi in zip(w, x)), 0.25) * 2 + 1
out.backward()
print(out.data, [wi.grad for wi in w], x[2].grad)
"""


def operator_calls(monkeypatch):
    """A list that counts the calls of a class's __add__ and __mul__ as functions in the next run."""
    from engine.python.calls import Calls

    called = []
    call_function = Calls.call_function

    def counted(self, function, args, kwargs, scope=None, name=None):
        if function.name in ("__add__", "__mul__"):
            called.append(function.name)
        return call_function(self, function, args, kwargs, scope, name)

    monkeypatch.setattr(Calls, "call_function", counted)
    return called


def test_the_class_operators_run_in_one_step_and_mean_the_same(ways, monkeypatch):
    text = VALUE_CLASS + NEURON + "print(out * 3 == out, (w[0] + w[1]).data, (2 * w[2]).data)\n"
    called = operator_calls(monkeypatch)
    one_step, as_written, _ = ways(text)
    assert one_step == as_written and one_step[0] == cpython_printed(text)
    assert called == []  # the products, the sum's additions (through __radd__), * 2, + 1, ...: none called


@pytest.mark.parametrize(
    "change, ends, calls_the_method",
    [
        ("x = [1.0, 2, Value(-3.0)]", "ok", False),
        # a number that is no int or float: the method called as written
        ("x = [True, 2, Value(-3.0)]", "ok", True),
        # a field that holds no number: the returned call as written, which fails as written
        ("x = [1.0, 2, Value('a')]", "error", False),
        ("x = [1.0, 2, Value(-3.0)]\nw[1].data = None", "error", False),
        # the class's name or isinstance read something else at the time of the call
        ("x = [1.0, 2, Value(-3.0)]\nOld = Value\nValue = None\nw = [Old(0.5), Old(-1.5), Old(2.0)]", "error", True),
        ("x = [1.0, 2, Value(-3.0)]\ndef isinstance(a, b):\n    return hasattr(a, 'data')", "ok", True),
        # an operand of a subclass, and a subclass's inherited operator
        ("class Sub(Value):\n    pass\nx = [1.0, 2, Sub(-3.0)]", "ok", True),
        ("class Sub(Value):\n    pass\nx = [1.0, 2, Value(-3.0)]\nw = [Sub(0.5), Sub(-1.5), Sub(2.0)]", "ok", True),
        # ints past 64 bits become floats, as the interpreter's `*` makes them (CPython keeps them whole)
        ("x = [2**40, 2**40, Value(2**40)]\nw = [Value(2**40), Value(2**40), Value(2)]", "floats", False),
    ],
)
def test_what_the_operators_cannot_do_in_one_step_runs_as_written(ways, monkeypatch, change, ends, calls_the_method):
    text = VALUE_CLASS + NEURON.replace("x = [1.0, 2, Value(-3.0)]", change)
    called = operator_calls(monkeypatch)
    one_step, as_written, _ = ways(text)
    assert one_step == as_written
    assert (one_step[0] == "error") == (ends == "error"), one_step
    if ends == "ok":
        assert one_step[0] == cpython_printed(text)
    assert bool(called) == calls_the_method


def test_an_operators_failure_has_the_same_message_and_place(ways):
    text = VALUE_CLASS + "a = Value(1.0)\nb = a * 2\nc = Value('text') * b\n"
    one_step, as_written, _ = ways(text)
    assert one_step == as_written and one_step[0] == "error"
    assert one_step[2].line == 20  # `self.data * other.data` in __mul__, where the product of a str fails
    assert DIVIDING != VALUE_CLASS
    dividing = DIVIDING + "a = Value(3.0) / 4\nb = a / (a * 0)\nprint(a.data, a._local_grads, b.data)\n"
    one_step, as_written, _ = ways(dividing)
    assert one_step == as_written and one_step[0] == ["0.75 (0.25, -0.1875) inf"]  # IEEE, as the engine's Values


def test_the_operators_stop_at_the_same_statement_and_depth(ways):
    text = VALUE_CLASS + NEURON
    total = ways(text)[0][3][-1]
    for limit in range(total - 60, total - 20, 3):  # some within a product's or a sum's call
        one_step, as_written, _ = ways(text, max_statements=limit)
        assert one_step == as_written and one_step[0] == "error"
    nested = (
        VALUE_CLASS + "def f(n, x):\n    return x * 2 if n == 0 else f(n - 1, x)\ny = f(6, Value(1.5))\ny.backward()\n"
    )
    ended = []
    for depth in range(6, 12):  # the product's call, then its Value's __init__, one deeper each
        one_step, as_written, _ = ways(nested, max_call_depth=depth)
        assert one_step == as_written
        ended.append(one_step[0] == "error")
    assert ended[0] and not ended[-1]


def test_recognised_operator_shapes_and_near_misses():
    import ast

    method = VALUE_CLASS.split("    def __mul__")[1].split("\n\n")[0]
    text = "def __mul__" + method.replace("\n    ", "\n")
    found = idioms.operator_method(ast.parse(text).body[0])
    assert found is not None and found[:3] == ("self", "other", "Value")
    for near_miss in (
        text.replace("(self, other), (", "(other, self), ("),
        text.replace("isinstance(other, Value)", "isinstance(other, Other)"),
        text.replace("else Value(other)", "else float(other)"),
        text.replace("self.data * other.data", "self.data * other.grad()"),
        text.replace("self.data * other.data", "math.log(self.data)"),
        text.replace("(other.data, self.data))", "(other.data,))"),
        text.replace("def __mul__(self, other):", "def __mul__(self, other, k=1):"),
        text + "\n    print(other)",
    ):
        assert idioms.operator_method(ast.parse(near_miss).body[0]) is None, near_miss
