"""A learner's own value class at its edges, each found by probing the answer with unusual but plausible
classes: a whole number past the largest float in a node is Infinity (IEEE), not a 500; what read_graph
refuses in a program's own graph is the program's error at the line that made the node (400), not a posted
graph's 422; `x / x` with its inputs kept in a set is checked as the course's rule says; a built-in Value's
backward() after the class's own shows its own run; the nudge test measures the replayed function."""

import math
import re

import pytest

from engine.check import CheckNode, check

COLUMNS = {"Accept": "application/vnd.valuegraph.columns+json"}

# The course's class: data, _children, _local_grads, _op; backward with a visited set and +=.
COURSE = """
class Value:
    def __init__(self, data, children=(), local_grads=(), op=''):
        self.data = data
        self.grad = 0
        self._children = children
        self._local_grads = local_grads
        self._op = op
    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data + other.data, (self, other), (1, 1), '+')
    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data * other.data, (self, other), (other.data, self.data), '*')
    def backward(self):
        topo = []
        visited = set()
        def build(v):
            if v not in visited:
                visited.add(v)
                for ch in v._children:
                    build(ch)
                topo.append(v)
        build(self)
        self.grad = 1
        for v in reversed(topo):
            for ch, lg in zip(v._children, v._local_grads):
                ch.grad += lg * v.grad
"""

# micrograd's style: _prev as a set, _op, a _backward closure per node.
MICRO = """
import math
class Value:
    def __init__(self, data, _children=(), _op=''):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op
    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), '+')
        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out
    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), '*')
        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out
    def __truediv__(self, other):
        out = Value(self.data / other.data, (self, other), '/')
        def _backward():
            self.grad += (1 / other.data) * out.grad
            other.grad += (-self.data / other.data**2) * out.grad
        out._backward = _backward
        return out
    def sigmoid(self):
        s = 1 / (1 + math.exp(-self.data))
        out = Value(s, (self,), 'sigmoid')
        def _backward():
            self.grad += s * (1 - s) * out.grad
        out._backward = _backward
        return out
    def backward(self):
        topo = []
        visited = set()
        def build(v):
            if v not in visited:
                visited.add(v)
                for ch in v._prev:
                    build(ch)
                topo.append(v)
        build(self)
        self.grad = 1.0
        for v in reversed(topo):
            v._backward()
"""


async def post(client, program, **more):
    return await client.post("/backward", json={"expression": program, **more})


def by_label(body):
    return {node["label"]: node for node in body["nodes"]}


def line_of(program, text):
    return next(i for i, line in enumerate(program.split("\n"), 1) if text in line)


BIG = "1" + "0" * 400


@pytest.mark.anyio
@pytest.mark.parametrize("headers", [{}, COLUMNS], ids=["json", "columns"])
async def test_a_whole_number_past_the_largest_float_in_a_node_is_infinity(client, headers):
    for tail in (f"out = Value({BIG})\n", f"a = Value(1.0)\nout = Value(2.0, (a,), ({BIG},), 'exp')\n"):
        response = await client.post("/backward", json={"expression": COURSE + tail}, headers=headers)
        assert response.status_code == 200, response.text
        assert "Infinity" in response.text


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tail", "made", "said"),
    [
        (
            "a = Value(2.0)\nb = Value(3.0)\nc = Value(6.0, (a, b), (3.0,), '*')\nc.backward()\n",
            "c = Value(6.0",
            "2 children but 1 local gradients",
        ),
        ("a = Value(2.0)\na.label = 'x' * 5000\nb = a * 3\nb.backward()\n", "a = Value(2.0)", "the limit is 200"),
        (
            "a = Value(2.0)\nb = a * 3\nc = b + 1\na._children = (c,)\na._local_grads = (1,)\nc.backward()\n",
            "a = Value(2.0)",  # the node whose input comes after it
            "a cycle",
        ),
    ],
    ids=["local_grads_short", "long_label", "cycle"],
)
async def test_what_a_programs_own_graph_cannot_be_is_the_programs_error_where_it_made_the_node(
    client, tail, made, said
):
    program = COURSE + tail
    response = await post(client, program)
    assert response.status_code == 400, response.text
    detail = response.json()["detail"]
    assert said in detail["message"] and detail["line"] == line_of(program, made), detail


@pytest.mark.anyio
async def test_x_over_x_with_its_input_kept_in_a_set_is_checked_by_the_courses_rule(client):
    body = (await post(client, MICRO + "a = Value(3.0)\nc = a / a\nd = c * a\nd.backward()\nprint(a.grad)\n")).json()
    assert body["printed"] == ["1.0"]  # CPython's
    assert body["gradient_check"]["status"] == "ok", body["gradient_check"]


@pytest.mark.anyio
async def test_a_built_in_values_backward_after_the_classs_own_shows_its_own_run(client):
    own = COURSE.replace("class Value", "class Scalar").replace("Value(", "Scalar(").replace("Value)", "Scalar)")
    program = own + "a = Scalar(2.0)\nb = a * 3\nb.backward()\nx = Value(5.0)\ny = x * x\ny.backward()\n"
    last, asked = (await post(client, program)).json(), (await post(client, program, run=1)).json()
    assert last["run"] == 1 == asked["run"]
    assert [n["data"] for n in last["nodes"]] == [n["data"] for n in asked["nodes"]] == [5.0, 25.0]


@pytest.mark.anyio
async def test_the_nudge_test_measures_the_replayed_function_not_the_stored_data(client):
    # b holds 0.9 where tanh(0.5) is 0.46: the measured slope is of tanh(a) + a, replayed at a and at a + h
    program = COURSE + "a = Value(0.5)\nb = Value(0.9, (a,), (0.19,), 'tanh')\nc = b + a\nc.backward()\n"
    measured = by_label((await post(client, program, check=True)).json())["a"]["numeric_grad"]
    assert math.isclose(measured, 2 - math.tanh(0.5) ** 2, rel_tol=1e-3), measured


@pytest.mark.anyio
async def test_grads_below_an_op_the_course_has_no_rule_for_are_not_called_wrong(client):
    # sigmoid has no rule and stores no local gradients: the nodes below it cannot be checked, not "wrong"
    program = MICRO + "a = Value(0.5)\nb = Value(2.0)\nc = a * b\nd = c.sigmoid()\ne = d + a\ne.backward()\n"
    check = (await post(client, program, check=True)).json()["gradient_check"]
    assert check["status"] == "ok" and check["wrong"] == [], check
    assert "Below d, whose local gradients no rule of the course gives" in check["message"]
    assert "3 nodes are not checked" in check["message"]
    # above it, a wrong grad is still found: a seed of 2
    seeded = program.replace("self.grad = 1.0", "self.grad = 2.0")
    wrong = (await post(client, seeded, check=True)).json()["gradient_check"]
    assert wrong["status"] == "wrong" and wrong["first"] is not None, wrong


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tail", "made", "said"),
    [
        ("a = Value(2.0)\nb = Value(3.0, (a, 5.0), (1, 1), '+')\nprint(b.data)\n", "b = Value(3.0", "must be nodes"),
        ("a = Value('x')\nb = Value(3.0, (a,), (1,), 'exp')\nb.backward()\n", "a = Value('x')", "holds a string"),
    ],
    ids=["an_input_that_is_no_node", "data_that_is_no_number"],
)
async def test_a_node_that_cannot_be_read_is_reported_where_the_program_made_it(client, tail, made, said):
    program = COURSE + tail
    response = await post(client, program)
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert said in detail["message"] and detail["line"] == line_of(program, made), detail


GRAPH = "a = Value(2.0)\nb = Value(3.0)\nc = a * b\nout = c + a\n"
BACKWARD_FUNCTION = COURSE.split("    def backward")[0] + (
    "def backward(root):\n"
    "    topo = []\n"
    "    visited = set()\n"
    "    def build(v):\n"
    "        if v not in visited:\n"
    "            visited.add(v)\n"
    "            for ch in v._children:\n"
    "                build(ch)\n"
    "            topo.append(v)\n"
    "    build(root)\n"
    "    root.grad = 1\n"
    "    for v in reversed(topo):\n"
    "        for ch, lg in zip(v._children, v._local_grads):\n"
    "            ch.grad = lg * v.grad\n"  # the = mistake: a.grad ends 3.0, not 4.0
)
RECURSIVE = COURSE.split("    def backward")[0] + (
    "    def backward(self, seed=True):\n"
    "        if seed:\n"
    "            self.grad = 1\n"
    "        for ch, lg in zip(self._children, self._local_grads):\n"
    "            ch.grad += lg * self.grad\n"
    "            ch.backward(False)\n"
)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "program",
    [
        COURSE.replace("ch.grad += lg * v.grad", "ch.grad = lg * v.grad") + GRAPH + "Value.backward(out)\n",
        BACKWARD_FUNCTION + GRAPH + "backward(out)\n",
    ],
    ids=["Value.backward(out)", "backward(out)"],
)
async def test_a_backward_called_as_a_function_is_the_learners_own(client, program):
    body = (await post(client, program + "print(a.grad)\n", check=True)).json()
    assert body["printed"] == ["3.0"] and by_label(body)["a"]["grad"] == 3.0  # CPython's, the = mistake's
    assert body["gradient_check"]["status"] == "wrong" and body["learner_walk"]


@pytest.mark.anyio
async def test_a_backward_that_calls_backward_on_its_inputs_is_one_run_with_every_write(client):
    body = (await post(client, RECURSIVE + GRAPH + "out.backward()\nprint(a.grad, b.grad)\n", check=True)).json()
    assert body["printed"] == ["4.0 2.0"] and body["runs"] == [{"line": body["runs"][0]["line"], "data": 8.0}]
    labels = {node["id"]: node["label"] for node in body["nodes"]}
    written = [(labels[u["child"]], u["grad"]) for step in body["learner_walk"] for u in step["updates"]]
    assert written == [("out", 1.0), ("c", 1.0), ("a", 3.0), ("b", 2.0), ("a", 4.0)]  # CPython's, in order
    assert body["gradient_check"]["status"] == "ok"


# Grads an earlier backward() left, not reset: a training loop without zero_grad, and two outputs' backward()
# calls on shared nodes. The check knows what each grad held when the chosen backward() began.
TRAINING = """
a = Value(2.0)
b = Value(3.0)
for step in range(3):
    c = a * b + a
    c.backward()
    a.data -= 0.1 * a.grad
"""
TWO_OUTPUTS = "a = Value(2.0)\nb = a * 3\nc = b * a\nb.backward()\nc.backward()\n"
SHARED_INSIDE = """
a = Value(2.0)
b = Value(3.0)
for step in range(2):
    d = a * b
    c = d * d + d
    c.backward()
    a.data -= 0.01 * a.grad
"""
LEFT = "These grads add to what an earlier backward() left: when this backward() began, "
RESET = "set every grad back to 0 before each backward() call, unless you mean to add them up."
NO_VISITED = (  # the course's sort, and the same without its visited set
    "            if v not in visited:\n                visited.add(v)\n"
    "                for ch in v._children:\n                    build(ch)\n                topo.append(v)",
    "            for ch in v._children:\n                build(ch)\n            topo.append(v)",
)
ASSIGNED = (
    "a is used by 2 nodes; its grad holds only the last one (yours 3, expected 4): "
    "add each contribution with +=, not =."
)


@pytest.mark.anyio
@pytest.mark.parametrize("cls", [COURSE, MICRO], ids=["course", "micrograd"])
@pytest.mark.parametrize(
    ("tail", "said"),
    [
        (TRAINING, "b's grad was already 3.6 (and the grad of 1 other node not 0)"),  # b.grad: 3 + 0.6 + ...
        (TWO_OUTPUTS, "b's grad was already 1 (and the grads of 2 other nodes not 0)"),  # b's own seed
        (SHARED_INSIDE, "b's grad was already 26 (and the grad of 1 other node not 0)"),
    ],
    ids=["training_loop", "two_outputs", "shared_inside"],
)
async def test_grads_left_by_an_earlier_backward_are_named_as_the_cause_not_a_local_gradient(client, cls, tail, said):
    answer = (await post(client, cls + tail, check=True)).json()
    check = answer["gradient_check"]
    assert check["status"] == "wrong"
    assert check["message"] == LEFT + said + "; " + RESET, check["message"]
    assert check["local"] == []  # no rule is blamed
    labels = {node["id"]: node["label"] for node in answer["nodes"]}
    assert labels[check["first"]] == "b"  # the node the message names, where the page goes first
    # the same program with the grads set back to 0 before each call: nothing wrong
    zeroed = tail.replace("    c.backward()", "    a.grad = 0\n    b.grad = 0\n    c.backward()")
    if zeroed != tail:
        assert (await post(client, cls + zeroed, check=True)).json()["gradient_check"]["status"] == "ok"
    # the first backward() began from grads of 0: it is right
    first = (await post(client, cls + tail, check=True, run=0)).json()["gradient_check"]
    assert first["status"] == "ok", first


@pytest.mark.anyio
async def test_the_first_node_is_the_one_the_leftover_message_names_not_the_output(client):
    # seeded with += 1: the output's own leftover comes last in the message, and the page goes to the node named
    adding = COURSE.replace("        self.grad = 1\n", "        self.grad += 1\n")
    assert adding != COURSE
    answer = (await post(client, adding + TWO_OUTPUTS.replace("b.backward()", "c.backward()"), check=True)).json()
    check = answer["gradient_check"]
    labels = {node["id"]: node["label"] for node in answer["nodes"]}
    assert check["message"].startswith(LEFT + "b's grad was already"), check["message"]
    assert labels[check["first"]] == "b" and "c" in [labels[i] for i in check["wrong"]], check


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("mistake", "tail", "first"),
    [
        (
            NO_VISITED,
            SHARED_INSIDE,
            "d is reached by 3 paths and passed its gradient on 3 times",
        ),
        (
            ("(other.data, self.data), '*'", "(other.data, other.data), '*'"),
            TRAINING,
            "Your `__mul__` gives the second input of node 2 the local gradient 3; the rule",
        ),
    ],
    ids=["no_visited_set", "wrong_rule"],
)
async def test_a_mistake_on_top_of_grads_left_by_an_earlier_backward_is_found_and_both_are_said(
    client, mistake, tail, first
):
    program = COURSE.replace(*mistake)
    assert program != COURSE
    message = (await post(client, program + tail, check=True)).json()["gradient_check"]["message"]
    assert message.startswith(first), message
    assert "when this backward() began, b's grad was already" in message and message.endswith(RESET), message


@pytest.mark.anyio
async def test_a_mistake_that_gives_the_grads_from_0_is_said_alone_whatever_was_left_before(client):
    # `=` for `+=` overwrites what an earlier backward() left: that mistake alone explains the grads
    program = COURSE.replace("ch.grad += lg * v.grad", "ch.grad = lg * v.grad")
    message = (await post(client, program + TRAINING, check=True)).json()["gradient_check"]["message"]
    assert message == ASSIGNED


@pytest.mark.anyio
async def test_a_backward_that_zeroes_the_grads_first_started_from_0_whatever_they_held(client):
    zeroing = COURSE.replace(
        "        self.grad = 1\n", "        for v in topo:\n            v.grad = 0\n        self.grad = 1\n"
    )
    assert zeroing != COURSE
    assert (await post(client, zeroing + TRAINING, check=True)).json()["gradient_check"]["status"] == "ok"
    # with `=` for `+=` as well: that mistake alone, and nothing said of grads left before
    assigning = zeroing.replace("ch.grad += lg * v.grad", "ch.grad = lg * v.grad")
    message = (await post(client, assigning + TRAINING, check=True)).json()["gradient_check"]["message"]
    assert message == ASSIGNED


@pytest.mark.anyio
@pytest.mark.parametrize("cls", [COURSE, MICRO], ids=["course", "micrograd"])
async def test_a_grad_left_before_and_brought_to_exactly_0_is_a_leftover_not_a_reset(client, cls):
    # a.grad: -3 left by L1, then +3 from L2: 0, and the class is right
    tail = "a = Value(2.0)\nb = Value(-3.0)\nL1 = a * b\nL1.backward()\nL2 = a * 3\nL2.backward()\n"
    message = (await post(client, cls + tail, check=True)).json()["gradient_check"]["message"]
    assert message.startswith(LEFT + "a's grad was already -3"), message


@pytest.mark.anyio
async def test_a_node_the_walk_never_writes_still_holds_what_was_left(client):
    # a walk that skips a node whose grad is 0, as the course's does: w1, behind a dead relu, is not written
    # in the second call and keeps what the first left
    skipping = COURSE.replace(
        "        for v in reversed(topo):\n",
        "        for v in reversed(topo):\n            if v.grad == 0:\n                continue\n",
    ).replace(
        "    def backward(self):",
        "    def relu(self):\n"
        "        return Value(max(0, self.data), (self,), (float(self.data > 0),), 'relu')\n    def backward(self):",
    )
    tail = """
w1 = Value(0.5)
w2 = Value(-1.0)
v = Value(2.0)
for x, y in [(1.0, 2.0), (-2.0, 1.0)]:
    h = (w1 * x).relu()
    out = h * v + w2 * y
    out.backward()
"""
    message = (await post(client, skipping + tail, check=True)).json()["gradient_check"]["message"]
    assert message.startswith(LEFT + "w2's grad was already 2 (and the grads of 2 other nodes not 0)"), message


@pytest.mark.anyio
async def test_a_wrong_rule_in_a_closure_is_named_on_top_of_what_was_left(client):
    # __mul__'s closure gives self its own data; without a reset, b's grad is right (what was left plus its
    # due), and a, the input that got the wrong amount, is the first wrong node
    program = MICRO.replace("self.grad += other.data * out.grad", "self.grad += self.data * out.grad") + TRAINING
    check = (await post(client, program, check=True)).json()
    labels = {node["id"]: node["label"] for node in check["nodes"]}
    check = check["gradient_check"]
    assert labels[check["first"]] == "a", check
    assert check["message"].startswith("a gets "), check["message"]
    assert "the rule for `__mul__` (the other input's data)" in check["message"]
    assert "Besides, when this backward() began" in check["message"]


def test_grads_before_on_nodes_the_output_does_not_reach_are_left_out():
    nodes = [
        CheckNode(0, "a", None, 2.0, 5.0, (), ()),
        CheckNode(1, "b", None, 3.0, 2.0, (), ()),
        CheckNode(2, "c", "*", 6.0, 1.0, (0, 1), (3.0, 2.0)),
        CheckNode(3, "x", None, 1.0, 0.0, (), ()),
    ]
    result = check(nodes, 2, before={3: 7.0}).gradient_check
    assert result["status"] == "wrong" and "earlier backward()" not in result["message"]


@pytest.mark.anyio
async def test_a_walk_that_adds_every_grad_is_not_said_to_assign_whatever_the_numbers(client):
    # chapter 2's graph with __mul__'s closure giving self its own data: a.grad = 2 + 1 = 3, which `=` for `+=`
    # would give too; the program adds with +=, so that is not what the check says
    program = MICRO.replace("self.grad += other.data * out.grad", "self.grad += self.data * out.grad")
    message = (await post(client, program + "a = Value(2.0)\nb = Value(3.0)\nc = a * b + a\nc.backward()\n")).json()[
        "gradient_check"
    ]["message"]
    assert "not =" not in message and "the rule for `__mul__`" in message, message
    # the same class written with = is still told so
    assigning = MICRO.replace("self.grad += other.data * out.grad", "self.grad = other.data * out.grad")
    message = (await post(client, assigning + "a = Value(2.0)\nb = Value(3.0)\nc = a * b + a\nc.backward()\n")).json()[
        "gradient_check"
    ]["message"]
    assert message.startswith("a is used by 2 nodes; its grad holds only the last one"), message


@pytest.mark.anyio
async def test_a_seed_added_on_top_of_what_was_left_is_simulated_as_added(client):
    # the output's grad seeded with += 1 over what the first call left, and no visited set: that is named,
    # not a rule of `*` the class keeps
    program = COURSE.replace(NO_VISITED[0], NO_VISITED[1]).replace(
        "        self.grad = 1\n", "        self.grad += 1\n"
    )
    tail = "a = Value(2.0)\nb = Value(3.0)\nd = a * b\nL = d * d + d\nL.backward()\nL.backward()\n"
    message = (await post(client, program + tail, check=True)).json()["gradient_check"]["message"]
    assert message.startswith("d is reached by 3 paths and passed its gradient on 3 times"), message


@pytest.mark.anyio
async def test_a_relu_closure_that_sets_its_input_grad_to_0_with_equals_is_told_to_add(client):
    # a dead relu's closure writes 0 with =: no reset, but the `=` mistake
    relu = (
        "    def relu(self):\n"
        "        out = Value(0 if self.data < 0 else self.data, (self,), 'ReLU')\n"
        "        def _backward():\n"
        "            self.grad = (out.data > 0) * out.grad\n"
        "        out._backward = _backward\n"
        "        return out\n"
    )
    program = MICRO.replace("    def backward(self):", relu + "    def backward(self):")
    tail = "x = Value(-2.0)\nw = Value(3.0)\nL = x.relu() + x * w\nL.backward()\n"
    message = (await post(client, program + tail, check=True)).json()["gradient_check"]["message"]
    assert message.startswith("x is used by 2 nodes; its grad holds only the last one"), message


@pytest.mark.anyio
async def test_grads_that_start_as_none_held_nothing_before_the_first_backward(client):
    # grads start as None and the first contribution is set, later ones added (PyTorch's way): one backward()
    # of a class whose __mul__ closure gives self its own data has nothing left from before
    accumulating = re.sub(r"(self|other)\.grad \+= (.*out\.grad.*)", r"\1.add_grad(\2)", MICRO)
    accumulating = accumulating.replace("        self.grad = 0.0\n", "        self.grad = None\n").replace(
        "    def backward(self):",
        "    def add_grad(self, x):\n        if self.grad is None:\n            self.grad = x\n"
        "        else:\n            self.grad += x\n    def backward(self):",
    )
    assert accumulating.count(".add_grad(") == 7 and "grad +=" not in accumulating.split("def add_grad")[0]
    tail = "a = Value(2.0)\nb = Value(5.0)\nc = a * b + a\nc.backward()\n"
    assert (await post(client, accumulating + tail, check=True)).json()["gradient_check"]["status"] == "ok"
    broken = accumulating.replace("self.add_grad(other.data * out.grad)", "self.add_grad(self.data * out.grad)")
    assert broken != accumulating
    message = (await post(client, broken + tail, check=True)).json()["gradient_check"]["message"]
    assert "the rule for `__mul__`" in message and "earlier backward()" not in message, message


def test_what_the_output_held_before_a_seed_set_with_equals_is_not_said_to_matter():
    # c = a * b seeded with c.grad = 1 over the 1 an earlier call left; a got a wrong local gradient
    nodes = [
        CheckNode(0, "a", None, 2.0, 5.0, (), ()),
        CheckNode(1, "b", None, 3.0, 2.0, (), ()),
        CheckNode(2, "c", "*", 6.0, 1.0, (0, 1), (3.0, 2.0)),
    ]
    message = check(nodes, 2, before={2: 1.0}).gradient_check["message"]
    assert message.startswith("a gets 5 × 1 from c") and "earlier backward()" not in message, message


# micrograd's style with numbers kept as no node (x * 4, -x written `-`) and ** kept as "**" without its exponent
WITH_NUMBERS = MICRO.replace(
    "    def __mul__(self, other):\n        other = other if isinstance(other, Value) else Value(other)\n",
    "    def __mul__(self, other):\n"
    "        if not isinstance(other, Value):\n"
    "            out = Value(self.data * other, (self,), '*')\n"
    "            def _backward():\n"
    "                self.grad += other * out.grad\n"
    "            out._backward = _backward\n"
    "            return out\n",
).replace(
    "    def backward(self):",
    "    def __neg__(self):\n"
    "        out = Value(-self.data, (self,), '-')\n"
    "        def _backward():\n"
    "            self.grad += -out.grad\n"
    "        out._backward = _backward\n"
    "        return out\n"
    "    def __pow__(self, n):\n"
    "        out = Value(self.data ** n, (self,), '**')\n"
    "        def _backward():\n"
    "            self.grad += n * self.data ** (n - 1) * out.grad\n"
    "        out._backward = _backward\n"
    "        return out\n"
    "    def backward(self):",
)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "tail",
    [
        "x = Value(3.0)\ny = x * 4\nz = y * x\nz.backward()\n",  # 4 * x: one input, in a set
        "a = Value(3.0)\nb = Value(2.0)\nc = -a * b\nc.backward()\n",  # -a written `-`
        "x = Value(-3.0)\ny = (x * x + x) ** 2\ny.backward()\n",  # "**" and a negative base
    ],
    ids=["number_times_x", "minus_as_negation", "power_without_its_exponent"],
)
async def test_a_node_made_with_a_number_the_class_keeps_as_no_node_is_checked_by_its_rule(client, tail):
    assert "'**'" in WITH_NUMBERS and "(self,), '*'" in WITH_NUMBERS
    check = (await post(client, WITH_NUMBERS + tail, check=True)).json()["gradient_check"]
    assert check["status"] == "ok", check


@pytest.mark.anyio
async def test_a_course_class_keeping_double_star_without_its_exponent_squares_a_negative_number(client):
    squaring = COURSE.replace(
        "    def backward(self):",
        "    def __pow__(self, n):\n"
        "        return Value(self.data ** n, (self,), (n * self.data ** (n - 1),), '**')\n"
        "    def backward(self):",
    )
    response = await post(client, squaring + "y = Value(0.25)\nloss = (y + -1.0) ** 2\nloss.backward()\n", check=True)
    assert response.status_code == 200, response.text
    assert response.json()["gradient_check"]["status"] == "ok"


@pytest.mark.anyio
@pytest.mark.parametrize("reset", ["v.grad *= 0", "v.grad -= v.grad", "v.grad = 0"])
async def test_a_backward_that_zeroes_its_grads_any_way_began_from_0(client, reset):
    zeroing = MICRO.replace(
        "        self.grad = 1.0\n", f"        for v in topo:\n            {reset}\n        self.grad = 1.0\n"
    )
    assert zeroing != MICRO
    assert (await post(client, zeroing + TRAINING, check=True)).json()["gradient_check"]["status"] == "ok"
    # __mul__'s closure gives self its own data: that is said, and nothing of grads left before
    broken = zeroing.replace("self.grad += other.data * out.grad", "self.grad += self.data * out.grad")
    message = (await post(client, broken + TRAINING, check=True)).json()["gradient_check"]["message"]
    assert message.startswith("a gets ") and "the rule for `__mul__`" in message, message
    assert "earlier backward()" not in message, message


@pytest.mark.anyio
@pytest.mark.parametrize("style", ["course", "micrograd"])
async def test_reflected_operators_keeping_self_first_are_checked_as_made(client, style):
    # `9 - w` and `3 / w` made by __rsub__ and __rtruediv__ as Value(other - self, (self, other), ...)
    if style == "course":
        methods = (
            "    def __rsub__(self, other):\n"
            "        other = other if isinstance(other, Value) else Value(other)\n"
            "        return Value(other.data - self.data, (self, other), (-1, 1), '-')\n"
            "    def __rtruediv__(self, other):\n"
            "        other = other if isinstance(other, Value) else Value(other)\n"
            "        local = (-other.data / self.data**2, 1 / self.data)\n"
            "        return Value(other.data / self.data, (self, other), local, '/')\n"
        )
        cls = COURSE
    else:
        methods = (
            "    def __rsub__(self, other):\n"
            "        other = Value(other)\n"
            "        out = Value(other.data - self.data, (self, other), '-')\n"
            "        def _backward():\n"
            "            self.grad += -out.grad\n"
            "            other.grad += out.grad\n"
            "        out._backward = _backward\n"
            "        return out\n"
            "    def __rtruediv__(self, other):\n"
            "        other = Value(other)\n"
            "        out = Value(other.data / self.data, (self, other), '/')\n"
            "        def _backward():\n"
            "            self.grad += -other.data / self.data**2 * out.grad\n"
            "            other.grad += 1 / self.data * out.grad\n"
            "        out._backward = _backward\n"
            "        return out\n"
        )
        cls = MICRO
    program = cls.replace("    def backward(self):", methods + "    def backward(self):")
    tail = "w = Value(10.0)\nv = 9 - w\nu = 3 / w\nL = v * u\nL.backward()\n"
    check = (await post(client, program + tail, check=True)).json()["gradient_check"]
    assert check["status"] == "ok", check
    if style == "micrograd":  # a wrong sign in the closure is still found (a stored one is used as given)
        wrong = program.replace("self.grad += -out.grad", "self.grad += out.grad")
        assert wrong != program
        assert (await post(client, wrong + tail, check=True)).json()["gradient_check"]["status"] == "wrong"


# Chapter 3's class (Python): log and relu as the course writes them, and a backward without chapter 2's skip of a
# node whose grad is 0. Its answers at the IEEE edges are the course's own, not the learner's mistakes.
CHAPTER_3 = COURSE.replace(
    "    def backward(self):",
    "    def log(self):\n"
    "        return Value(math.log(self.data), (self,), (1 / self.data,), 'log')\n"
    "    def relu(self):\n"
    "        return Value(max(0, self.data), (self,), (float(self.data > 0),), 'relu')\n"
    "    def backward(self):",
)


@pytest.mark.anyio
async def test_relu_of_nan_is_0_as_python_max_gives_it(client):
    # log(-1) is NaN, and Python's max(0, nan) is 0 where C#'s Math.Max(0, NaN) is NaN: both are the course's
    program = "import math\n" + CHAPTER_3 + "a = Value(-1.0)\nb = a.log()\nc = b.relu()\nc.backward()\n"
    answer = (await post(client, program)).json()
    assert by_label(answer)["c"]["data"] == 0
    assert answer["gradient_check"]["status"] == "ok", answer["gradient_check"]


@pytest.mark.anyio
async def test_a_walk_that_passes_a_grad_of_0_on_is_the_course_walk_too(client):
    # -(p * log p) at p = 0: log's grad is 0 (p's data) and its local gradient Infinity. Chapter 2's walk skips
    # a node whose grad is 0 and leaves p's grad Infinity; chapter 3's, as this class's, passes 0 × Infinity on
    program = "import math\n" + CHAPTER_3 + "p = Value(0.0)\nH = (p * p.log()) * Value(-1.0)\nH.backward()\n"
    answer = (await post(client, program)).json()
    check, p = answer["gradient_check"], by_label(answer)["p"]
    assert check["status"] == "ok" and check["wrong"] == [] and check["first"] is None, check
    assert check["message"].startswith("Your gradients match the course's backward from H on every node."), check
    assert "p's grad is NaN (0 × Infinity is NaN); chapter 2's walk skips" in check["message"], check["message"]
    assert p["grad"] == p["expected_grad"] == "NaN"
    # the same class with chapter 2's skip: as the course's walk gives it, and nothing to say
    skipping = CHAPTER_3.replace(
        "        for v in reversed(topo):\n",
        "        for v in reversed(topo):\n            if v.grad == 0:\n                continue\n",
    )
    assert skipping != CHAPTER_3
    answer = (await post(client, program.replace(CHAPTER_3, skipping))).json()
    assert answer["gradient_check"]["message"] == "Your gradients match the course's backward from H on every node."
    assert by_label(answer)["p"]["grad"] == by_label(answer)["p"]["expected_grad"] == "Infinity"
    # a mistake on top is still found: = for +=
    assigning = CHAPTER_3.replace("ch.grad += lg * v.grad", "ch.grad = lg * v.grad")
    answer = (await post(client, "import math\n" + assigning + "a = Value(3.0)\nb = a * a\nb.backward()\n")).json()
    assert answer["gradient_check"]["status"] == "wrong"


@pytest.mark.anyio
@pytest.mark.parametrize(
    "written, holds",
    [("None", "None"), ("str(self.data * out.grad)", "a string"), ("[self.data * out.grad]", "a list")],
)
async def test_a_grad_the_backward_leaves_holding_no_number_is_named_not_called_0(client, written, holds):
    """A learner's backward that sets a grad to None or to a string is a mistake in the walk: the check names the
    node, what its grad holds and whose step wrote it, where before it said the node got 0 from its user."""
    program = MICRO.replace("other.grad += self.data * out.grad", f"other.grad = {written}")
    body = (await post(client, program + "a = Value(2.0)\nb = Value(3.0)\nL = a * b\nL.backward()\n")).json()
    check, nodes = body["gradient_check"], by_label(body)
    assert check["message"] == (
        f"b.grad holds {holds} after your backward(), not a number (written in L's backward step). "
        "A grad must be a number: check the line that sets it."
    )
    assert check["status"] == "wrong"
    assert check["wrong"] == [nodes["b"]["id"]] and check["first"] == nodes["b"]["id"]


@pytest.mark.anyio
async def test_every_grad_left_holding_no_number_is_wrong_and_the_nearest_the_output_is_named(client):
    program = MICRO.replace("self.grad += out.grad", "self.grad = 'x'").replace(
        "other.grad += out.grad", "other.grad = None"
    )
    tail = "a = Value(2.0)\nb = Value(3.0)\nc = Value(4.0)\nd = a + b\nL = d * c\nL.backward()\n"
    body = (await post(client, program + tail)).json()
    check, nodes = body["gradient_check"], by_label(body)
    assert check["message"].startswith(
        "b.grad holds None after your backward(), not a number (written in d's backward step); "
        "1 other grad holds none either."
    )
    assert check["wrong"] == sorted(nodes[name]["id"] for name in ("a", "b"))


@pytest.mark.anyio
async def test_a_grad_reset_to_none_before_the_walk_is_no_mistake(client):
    """zero_grad setting None before backward() seeds the output is a reset, not the walk's mistake."""
    program = MICRO.replace(
        "self.grad += other.data * out.grad", "self.grad = (self.grad or 0) + other.data * out.grad"
    ).replace("other.grad += self.data * out.grad", "other.grad = (other.grad or 0) + self.data * out.grad")
    tail = "a = Value(2.0)\nb = Value(3.0)\nL = a * b\nfor v in (a, b, L):\n    v.grad = None\nL.backward()\n"
    check = (await post(client, program + tail)).json()["gradient_check"]
    assert check["status"] == "ok", check["message"]


@pytest.mark.anyio
async def test_the_grad_named_is_the_first_the_courses_walk_reaches_and_an_unnamed_node_is_named_by_its_id(client):
    program = MICRO.replace("other.grad += self.data * out.grad", "other.grad = None")
    tail = "b = Value(3.0)\na = Value(2.0)\nc = Value(4.0)\nm = c * a\nn = m * b\nn.backward()\n"
    body = (await post(client, program + tail)).json()
    check, nodes = body["gradient_check"], by_label(body)
    assert check["first"] == nodes["b"]["id"]  # n's step comes before m's: b before a, though b was made first
    assert check["message"].startswith("b.grad holds None after your backward(), not a number (written in n's")
    unnamed = (await post(client, program + "a = Value(2.0)\nL = a * Value(3.0)\nL.backward()\n")).json()
    three = next(node for node in unnamed["nodes"] if node["data"] == 3.0)
    assert unnamed["gradient_check"]["message"].startswith(
        f"node {three['id']}.grad holds None after your backward(), not a number (written in L's backward step)"
    )
