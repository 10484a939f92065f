"""Issue 20, the answer's view of a program's own value class: where each node was made (span,
expr, as built-in Values have), and the learner's own backward as `learner_walk`, whether it
ran micrograd-style `_backward` closures or a loop over the nodes."""

import importlib.util
from pathlib import Path

import pytest

from engine import run_program
from engine.python.observe import LearnerWalk, learner_walk
from tests.columnar import decoded

OWN_CLASSES = Path(__file__).parent / "own_classes"
COLUMNS = {"Accept": "application/vnd.valuegraph.columns+json"}


def _text(name):
    return (OWN_CLASSES / f"{name}.py").read_text()


async def _answer(client, text, **more):
    response = await client.post("/backward", json={"expression": text, **more})
    assert response.status_code == 200, response.text
    return response.json()


def _by_label(answer):
    return {node["label"]: node for node in answer["nodes"]}


@pytest.mark.anyio
async def test_each_node_of_the_learners_class_has_the_span_and_text_of_the_code_that_made_it(client):
    text = _text("micrograd_no_visited_set")
    lines = text.splitlines()
    nodes = _by_label(await _answer(client, text))
    assert nodes["c"]["expr"] == "a * b"
    assert nodes["out"]["expr"] == "d * c"
    assert nodes["a"]["expr"] == "Value(2.0)"
    for node in nodes.values():
        span = node["span"]
        line = lines[span["line"] - 1]
        assert line[span["column"] - 1 : span["end_column"] - 1] == node["expr"]


@pytest.mark.anyio
async def test_a_node_made_inside_a_method_takes_the_place_of_the_program_code_that_used_it(client):
    # a - b is a + (-b), and -b is b * -1: the -1 and b * -1 are made inside the class's methods
    text = (
        "class V:\n"
        "    def __init__(self, data, children=(), local_grads=()):\n"
        "        self.data = data\n"
        "        self.grad = 0\n"
        "        self._children = children\n"
        "        self._local_grads = local_grads\n"
        "    def __add__(self, other):\n"
        "        return V(self.data + other.data, (self, other), (1, 1))\n"
        "    def __mul__(self, other):\n"
        "        other = other if isinstance(other, V) else V(other)\n"
        "        return V(self.data * other.data, (self, other), (other.data, self.data))\n"
        "    def __neg__(self):\n"
        "        return self * -1\n"
        "    def __sub__(self, other):\n"
        "        return self + (-other)\n"
        "a = V(5.0)\n"
        "b = V(2.0)\n"
        "out = a - b\n"
    )
    answer = await _answer(client, text)
    assert len(answer["nodes"]) == 5
    made_inside = [node for node in answer["nodes"] if node["label"] not in ("a", "b")]
    assert {node["expr"] for node in made_inside} - {"-1"} == {"a - b"}
    assert all(node["span"]["line"] == 18 for node in made_inside)


@pytest.mark.anyio
async def test_the_walk_of_micrograd_style_closures_is_the_order_they_ran_with_the_grads_they_wrote(client):
    answer = await _answer(client, _text("micrograd_no_visited_set"))
    names = {node["id"]: node["label"] for node in answer["nodes"]}
    walk = answer["learner_walk"]
    assert walk[0] == {"node": None, "updates": [{"child": answer["output"], "grad": 1.0}]}  # the seed
    # no visited set: c (and below it a, b) is walked twice, once through d and once from out
    assert [names[step["node"]] for step in walk[1:]] == ["out", "c", "b", "a", "d", "a", "c", "b", "a"]
    passed_on_by_d = walk[5]["updates"]
    assert [(names[u["child"]], u["grad"]) for u in passed_on_by_d] == [("c", 14.0), ("a", 30.0)]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "name",
    ["course_value", "microgpt_style", "scalar_iterative", "grads_not_reset", "course_assign_not_accumulate"],
)
async def test_a_backward_loop_over_the_nodes_is_walked_node_by_node(client, name):
    answer = await _answer(client, _text(name))
    nodes = answer["nodes"]
    walk = answer["learner_walk"]
    assert walk[0]["node"] is None and walk[0]["updates"][0]["child"] == answer["output"]
    for step in walk[1:]:
        node = nodes[step["node"]]
        assert [u["child"] for u in step["updates"]] == node["children"]
    # every node with inputs passed its gradient on once, parents before their inputs
    walked = [step["node"] for step in walk[1:]]
    assert sorted(walked) == sorted(node["id"] for node in nodes if node["children"])
    position = {node: i for i, node in enumerate(walked)}
    for node in walked:
        for child in nodes[node]["children"]:
            assert position.get(child, len(walked)) > position[node]


def test_writes_that_are_not_a_nodes_step_stay_steps_of_their_own():
    text = _text("course_value").replace("        self.grad = 1\n", "        self.grad = 1\n        self.grad = 1\n")
    walk = learner_walk(run_program(text).python.graph).steps()
    assert [step["node"] for step in walk[:2]] == [None, None]
    assert walk[2]["node"] is not None


@pytest.mark.anyio
async def test_programs_without_their_own_class_or_without_backward_have_no_learner_walk(client):
    assert "learner_walk" not in await _answer(client, "a = Value(2.0)\nb = a * a\nb.backward()")
    no_backward = _text("micrograd_style").replace("out.backward()", "")
    answer = await _answer(client, no_backward)
    assert answer["gradient_check"]["status"] == "no_backward"
    assert "learner_walk" not in answer


@pytest.mark.anyio
async def test_the_columnar_encoding_carries_the_learner_walk_and_spans(client):
    text = _text("micrograd_style")
    plain = await _answer(client, text)
    columns = await client.post("/backward", json={"expression": text}, headers=COLUMNS)
    assert decoded(columns.json()) == plain
    assert plain["learner_walk"]


@pytest.mark.anyio
async def test_openapi_describes_the_learner_walk(client):
    schemas = (await client.get("/openapi.json")).json()["components"]["schemas"]
    walk = schemas["BackwardResponse"]["properties"]["learner_walk"]
    assert walk["items"]["$ref"].endswith("/LearnerStep")
    assert "`_backward()` call" in walk["description"] and "node null" in walk["description"]
    assert set(schemas["LearnerStep"]["properties"]) == {"node", "updates"}
    assert set(schemas["LearnerUpdate"]["properties"]) == {"child", "grad"}


@pytest.mark.anyio
async def test_the_micrograd_example_reads_engine_py_from_the_installed_package(client):
    engine = Path(importlib.util.find_spec("micrograd.engine").origin).read_text(encoding="utf-8")
    response = await client.get("/examples/micrograd-engine.py")
    assert response.status_code == 200
    assert response.text == engine
    # x * x: micrograd keeps the inputs in a set, so the node has one input, with local gradient 2x
    answer = await _answer(client, response.text + "\nx = Value(2.0)\ny = x * x + x\ny.backward()\n")
    assert answer["gradient_check"]["status"] == "ok" and answer["learner_walk"]
    square = next(node for node in answer["nodes"] if node["expr"] == "x * x")
    assert square["children"] == [0] and square["local_grads"] == [4.0]
    assert answer["nodes"][0]["grad"] == answer["nodes"][0]["expected_grad"] == 5.0


@pytest.mark.anyio
async def test_without_micrograd_installed_the_example_says_so(client, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name.startswith("micrograd") else real(name, *a)
    )
    response = await client.get("/examples/micrograd-engine.py")
    assert response.status_code == 200
    assert response.text.startswith("# micrograd is not installed on this server")


@pytest.mark.anyio
async def test_the_answer_says_whether_the_class_keeps_its_inputs_in_a_set(client):
    engine = Path(importlib.util.find_spec("micrograd.engine").origin).read_text(encoding="utf-8")
    in_sets = await _answer(client, engine + "\na = Value(2.0)\nb = a * 3 + a\nb.backward()\n")
    assert in_sets["inputs_in_sets"] is True
    assert (await _answer(client, _text("course_value")))["inputs_in_sets"] is False
    assert "inputs_in_sets" not in await _answer(client, "a = Value(2.0)\nb = a * a\nb.backward()")


def test_a_loop_walk_over_a_node_used_by_many_is_walked_node_by_node():
    # x feeds 300 products: each write to x's grad has 300 nodes it could be the first input of
    text = _text("course_value").split("\na = Value(2.0)")[0] + (
        "\nx = Value(0.5)\ntotal = x * 1\nfor k in range(2, 301):\n    total = total + x * k\ntotal.backward()\n"
    )
    graph = run_program(text).python.graph
    walk = learner_walk(graph).steps()
    with_inputs = [i for i, node in enumerate(graph["nodes"]) if node["children"]]
    assert walk[0]["node"] is None
    assert sorted(step["node"] for step in walk[1:]) == with_inputs
    x = graph["nodes"][0]
    writes_to_x = [u["grad"] for step in walk for u in step["updates"] if u["child"] == 0]
    assert len(writes_to_x) == 300 and writes_to_x[-1] == x["grad"] == sum(range(1, 301))


def _walk(answer):
    return [(step["node"], [(u["child"], u["grad"]) for u in step["updates"]]) for step in answer["learner_walk"]]


SQUARE_TIMES_W_PLUS_X = "\nx = Value(3.0)\nw = Value(5.0)\ny = x * x\ns = y * w\nout = s + x\nout.backward()\n"


@pytest.mark.anyio
async def test_a_loop_walk_is_attributed_write_by_write_to_the_nodes_that_passed_each_gradient_on(client):
    # ids: x 0, w 1, y = x * x 2, s = y * w 3, out = s + x 4; y passes its gradient on to x twice
    head = _text("course_value").split("\na = Value(2.0)")[0]
    answer = await _answer(client, head + SQUARE_TIMES_W_PLUS_X)
    assert _walk(answer) == [
        (None, [(4, 1.0)]),  # the seed
        (4, [(3, 1.0), (0, 1.0)]),
        (3, [(2, 5.0), (1, 9.0)]),
        (2, [(0, 16.0), (0, 31.0)]),  # x's grad after each of y's two writes: 1 + 3 * 5, then + 3 * 5
    ]
    # the same program with `=` where `+=` belongs: each write is local * the node's grad
    mistaken = await _answer(client, head.replace("child.grad += local", "child.grad = local") + SQUARE_TIMES_W_PLUS_X)
    assert _walk(mistaken) == [
        (None, [(4, 1.0)]),
        (4, [(3, 1.0), (0, 1.0)]),
        (3, [(2, 5.0), (1, 9.0)]),
        (2, [(0, 15.0), (0, 15.0)]),
    ]
    # backward() called again without resetting the grads: the first write to each grad adds to what the
    # first call left, which the walk of the second call (run 1) never saw
    again = await _answer(client, head + SQUARE_TIMES_W_PLUS_X + "out.backward()\n", run=1)
    assert _walk(again) == [
        (None, [(4, 1.0)]),
        (4, [(3, 2.0), (0, 32.0)]),
        (3, [(2, 15.0), (1, 27.0)]),
        (2, [(0, 77.0), (0, 122.0)]),
    ]


@pytest.mark.anyio
async def test_the_walk_of_closures_over_inputs_kept_in_a_set_is_one_step_per_call(client):
    engine = Path(importlib.util.find_spec("micrograd.engine").origin).read_text(encoding="utf-8")
    # ids: x 0, y = x * x 1 (its set holds x once), z = y + x 2; x's own _backward writes nothing
    answer = await _answer(client, engine + "\nx = Value(2.0)\ny = x * x\nz = y + x\nz.backward()\n")
    assert _walk(answer) == [(None, [(2, 1.0)]), (2, [(1, 1.0), (0, 1.0)]), (1, [(0, 3.0), (0, 5.0)]), (0, [])]


def test_a_loop_walks_writes_within_rounding_are_its_nodes_steps_and_a_write_of_no_number_is_not():
    # ids: x 10 (2.0), w 11 (3.0), s = x * w 12, out = s + x 13; positions 0 to 3
    nodes = [
        {"id": 10, "children": [], "local_grads": []},
        {"id": 11, "children": [], "local_grads": []},
        {"id": 12, "children": [10, 11], "local_grads": [3.0, 2.0]},
        {"id": 13, "children": [12, 10], "local_grads": [1.0, 1.0]},
    ]
    seed, from_out = [(None, [(3, 1.0)])], [(None, [(2, 1.0)]), (None, [(0, 1.0)])]

    def attributed(writes_of_s):
        steps = seed + from_out + [(None, [write]) for write in writes_of_s]
        observed = LearnerWalk(
            [node for node, _ in steps],
            [len(writes) for _, writes in steps],
            [child for _, writes in steps for child, _ in writes],
            [grad for _, writes in steps for _, grad in writes],
        )
        walk = learner_walk({"nodes": nodes, "output": 13, "walk": observed}).steps()
        return [(step["node"], [(u["child"], u["grad"]) for u in step["updates"]]) for step in walk]

    exact = [(0, 4.0), (1, 2.0)]
    assert attributed(exact)[1:] == [(3, [(2, 1.0), (0, 1.0)]), (2, exact)]
    rounded = [(0, 4.0 * (1 + 1e-12)), (1, 2.0 * (1 - 1e-12))]  # another order of the same sums: still s's step
    assert attributed(rounded)[2] == (2, rounded)
    assert attributed([(0, None), (1, 2.0)])[2:] == [(None, [(0, None)]), (None, [(1, 2.0)])]  # x.grad = "text"
    assert attributed([(0, 4.5), (1, 2.0)])[2:] == [(None, [(0, 4.5)]), (None, [(1, 2.0)])]  # not what s passes on
