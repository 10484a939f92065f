"""POST /backward with `graph` (issue 25, "A graph from any language"): the usual answer on a
graph built elsewhere, with expected_grad and gradient_check; every bad graph a 422 naming the
node and the field; any answer's nodes and output post back as they stand."""

import copy
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.config import Settings
from app.schemas import CHAPTER_2_GRAPH

pytestmark = pytest.mark.anyio

NODE_FIELDS = ("id", "label", "op", "data", "grad", "children", "local_grads")


def chapter_2(**changes):
    graph = copy.deepcopy(CHAPTER_2_GRAPH)
    graph.update(changes)
    return graph


async def post_graph(client, graph, **options):
    return await client.post("/backward", json={"graph": graph, **options})


def only_error(response, loc):
    assert response.status_code == 422, response.text
    (problem,) = response.json()["detail"]
    assert problem["loc"] == ["body", "graph", *loc], problem
    return problem["msg"]


async def test_chapter_2_graph_is_ok_and_traced(client):
    response = await post_graph(client, chapter_2(), layout=True)
    assert response.status_code == 200
    answer = response.json()
    assert [node["expected_grad"] for node in answer["nodes"]] == [4.0, 2.0, 1.0, 1.0]
    assert [node["grad"] for node in answer["nodes"]] == [4.0, 2.0, 1.0, 1.0]
    assert answer["gradient_check"] == {
        "status": "ok",
        "wrong": [],
        "first": None,
        "message": "Your gradients match the course's backward from L on every node.",
        "local": [],
    }
    # valuegraph's own walk on that graph: chapter 2's tables
    assert [step["action"] for step in answer["trace"]["sort"]].count("skip") == 1
    assert answer["trace"]["propagate"][0]["updates"][1] == {"child": 0, "local_grad": 1.0, "delta": 1.0, "grad": 1.0}
    assert answer["layout"]["ranks"] == 3


async def test_assign_for_add_is_wrong_and_names_the_first_wrong_node(client):
    graph = chapter_2()
    graph["nodes"][0]["grad"] = 3.0  # the learner's = kept only c's contribution
    answer = (await post_graph(client, graph)).json()
    check = answer["gradient_check"]
    assert check["status"] == "wrong" and check["wrong"] == [0] and check["first"] == 0
    assert check["message"].startswith("a is used by 2 nodes; its grad holds only the last one")
    assert answer["nodes"][0]["grad"] == 3.0 and answer["nodes"][0]["expected_grad"] == 4.0


async def test_a_typescript_walk_that_passes_a_grad_of_0_on_is_right(client):
    # y = log(x) * x at x = 0: log's grad is 0 and its local gradient Infinity; a walk without chapter 2's skip
    # of a 0 grad makes x's grad NaN (0 × Infinity), as chapter 3's walk does: right, and said
    graph = {
        "language": "typescript",
        "output": 2,
        "nodes": [
            {"id": 0, "label": "x", "data": 0, "grad": "NaN", "children": [], "local_grads": []},
            {
                "id": 1,
                "label": "lx",
                "data": "-Infinity",
                "grad": 0,
                "op": "log",
                "children": [0],
                "local_grads": ["Infinity"],
            },
            {
                "id": 2,
                "label": "y",
                "data": "NaN",
                "grad": 1,
                "op": "*",
                "children": [1, 0],
                "local_grads": [0, "-Infinity"],
            },
        ],
    }
    answer = (await post_graph(client, graph)).json()
    check = answer["gradient_check"]
    assert check["status"] == "ok", check
    assert (
        "x's grad is NaN (0 × Infinity is NaN); chapter 2's walk skips a node whose grad is 0 and gives -Infinity"
        in (check["message"])
    )
    assert answer["nodes"][0]["expected_grad"] == "NaN"


async def test_grads_an_earlier_backward_left_are_named_when_the_graph_says_what_each_held(client):
    # a C# learner's training loop: a and b held 0.5 and 1.5 when this backward() began, and it added 4 and 2
    graph = chapter_2(language="csharp")
    graph["nodes"][0].update(grad=4.5, grad_before=0.5)
    graph["nodes"][1].update(grad=3.5, grad_before=1.5)
    check = (await post_graph(client, graph)).json()["gradient_check"]
    assert check["status"] == "wrong" and check["wrong"] == [0, 1] and check["local"] == []
    assert check["message"] == (
        "These grads add to what an earlier backward() left: when this backward() began, b's grad was already 1.5 "
        "(and the grad of 1 other node not 0); set every grad back to 0 before each backward() call, "
        "unless you mean to add them up."
    )
    # without grad_before nothing says so: a local gradient is blamed
    for node in graph["nodes"]:
        node.pop("grad_before", None)
    check = (await post_graph(client, graph)).json()["gradient_check"]
    assert "earlier backward()" not in check["message"] and "local gradient" in check["message"]
    # grad_before of 0, or on grads a fresh walk gives: nothing wrong
    graph = chapter_2()
    graph["nodes"][0]["grad_before"] = 0.0
    assert (await post_graph(client, graph)).json()["gradient_check"]["status"] == "ok"


async def test_without_grads_no_backward_and_the_walk_still_plays(client):
    graph = chapter_2()
    for node in graph["nodes"]:
        del node["grad"]
    answer = (await post_graph(client, graph)).json()
    assert answer["gradient_check"]["status"] == "no_backward"
    assert [node["grad"] for node in answer["nodes"]] == [4.0, 2.0, 1.0, 1.0]  # the course's walk's grads
    assert len(answer["trace"]["propagate"]) == 4
    assert "course's walk" in answer["gradient_check"]["message"]


async def test_without_grads_a_variants_walk_is_said_to_be_the_variants(client):
    graph = chapter_2()
    for node in graph["nodes"]:
        del node["grad"]
    answer = (await post_graph(client, graph, variant="assign")).json()
    assert [node["grad"] for node in answer["nodes"]] == [3.0, 2.0, 1.0, 1.0]  # a's second += written as =
    check = answer["gradient_check"]
    assert check["status"] == "no_backward" and "course's walk gives" not in check["message"]
    assert "variant 'assign'" in check["message"]


async def test_op_rules_check_data_and_local_gradients(client):
    graph = chapter_2()
    graph["nodes"][2]["data"] = 5.0
    check = (await post_graph(client, graph)).json()["gradient_check"]
    assert check["status"] == "wrong"
    assert check["message"] == "node c: 2 × 3 is 6, yours holds 5."
    graph = chapter_2(language="csharp")
    graph["nodes"][2]["local_grads"] = [2.0, 3.0]
    graph["nodes"][0]["grad"] = 3.0  # what the backward gives with those
    graph["nodes"][1]["grad"] = 3.0
    check = (await post_graph(client, graph)).json()["gradient_check"]
    assert check["local"] == [
        {"node": 2, "input": 0, "stored": 2.0, "expected": 3.0},
        {"node": 2, "input": 1, "stored": 3.0, "expected": 2.0},
    ]
    assert check["message"].startswith("Your `operator *` gives the first input the local gradient `a.Data`")


async def test_the_learners_walk_names_a_missing_visited_set(client):
    # d = a * b; L = d * d: without a visited set d's step runs twice
    nodes = [
        {"id": 10, "label": "a", "data": 2.0, "grad": 0.0, "children": [], "local_grads": []},
        {"id": 11, "label": "b", "data": 3.0, "grad": 0.0, "children": [], "local_grads": []},
        {"id": 12, "label": "d", "op": "*", "data": 6.0, "grad": 12.0, "children": [10, 11], "local_grads": [3.0, 2.0]},
        {"id": 13, "label": "L", "op": "*", "data": 36.0, "grad": 1.0, "children": [12, 12], "local_grads": [6.0, 6.0]},
    ]
    nodes[0]["grad"], nodes[1]["grad"] = 72.0, 48.0  # d passed its 12 on twice: 2 * 36, 2 * 24
    graph = {"nodes": nodes, "output": 13, "walk": [13, 12, 11, 10, 12, 11, 10]}
    answer = (await post_graph(client, graph)).json()
    check = answer["gradient_check"]
    assert check["status"] == "wrong" and check["wrong"] == [0, 1]  # the answer's ids: positions
    assert check["message"].startswith("d's backward ran 2 times")


async def test_derived_ops_ids_and_labels_as_given(client):
    graph = {
        "nodes": [
            {"id": 7, "label": "x", "data": 6.0, "children": [], "local_grads": []},
            {"id": 3, "label": "y", "data": 3.0, "children": [], "local_grads": []},
            {"id": 9, "label": "q", "op": "div", "data": 2.0, "children": [7, 3], "local_grads": [1 / 3, -6 / 9]},
            {"id": 1, "label": "r", "op": "-", "data": -1.0, "children": [9, 3], "local_grads": [1.0, -1.0]},
            {"id": 4, "label": "s", "op": "**2", "data": 1.0, "children": [1], "local_grads": [-2.0]},
        ],
        "output": 4,
    }
    answer = (await post_graph(client, graph, check=True)).json()
    assert [node["op"] for node in answer["nodes"]] == [None, None, "/", "-", "**"]
    assert answer["nodes"][4]["exponent"] == 2.0
    assert answer["gradient_check"]["status"] == "no_backward" and answer["gradient_check"]["local"] == []
    x = answer["nodes"][0]
    assert math.isclose(x["expected_grad"], -2.0 / 3.0) and math.isclose(x["numeric_grad"], -2.0 / 3.0, rel_tol=1e-3)


async def test_a_power_without_its_exponent_takes_it_from_the_numbers_when_they_say_it(client):
    def power(x, data, local):
        return {
            "nodes": [
                {"id": 0, "label": "x", "data": x, "children": [], "local_grads": []},
                {"id": 1, "label": "y", "op": "**", "data": data, "children": [0], "local_grads": [local]},
            ],
            "output": 1,
        }

    answer = (await post_graph(client, power(3.0, 9.0, 6.0))).json()  # 3 ** 2: n = 2
    assert answer["nodes"][1]["op"] == "**" and answer["nodes"][1]["exponent"] == 2.0
    assert answer["nodes"][0]["grad"] == 6.0
    answer = (await post_graph(client, power(4.0, 2.0, 0.25))).json()  # 4 ** 0.5: a fraction is kept as it is
    assert answer["nodes"][1]["exponent"] == 0.5
    message = only_error(await post_graph(client, power(-2.0, 4.0, -4.0)), ("nodes", 1, "exponent"))
    assert message == "node 1 (y): op '**' needs its exponent n (x ** n): add \"exponent\": n to the node"


async def test_a_minus_with_one_input_is_a_negation(client):
    graph = {
        "nodes": [
            {"id": 0, "label": "x", "data": 2.0, "children": [], "local_grads": []},
            {"id": 1, "label": "y", "op": "-", "data": -2.0, "children": [0], "local_grads": [-1.0]},
        ],
        "output": 1,
    }
    answer = (await post_graph(client, graph, check=True)).json()
    assert [node["op"] for node in answer["nodes"]] == [None, "neg"] and answer["nodes"][0]["grad"] == -1.0
    graph["nodes"][1]["data"] = 2.0
    check = (await post_graph(client, graph, check=True)).json()["gradient_check"]
    assert check["message"] == "node y: -2 is -2, yours holds 2."


async def test_op_recognised_when_left_out(client):
    graph = chapter_2()
    for node in graph["nodes"]:
        node.pop("op", None)
    answer = (await post_graph(client, graph)).json()
    assert [node["op"] for node in answer["nodes"]] == [None, None, "*", "+"]


async def test_non_finite_numbers_as_strings(client):
    graph = {
        "nodes": [
            {"id": 0, "label": "x", "data": 0.0, "grad": "-Infinity", "children": [], "local_grads": []},
            {"id": 1, "op": "log", "data": "-Infinity", "grad": 1.0, "children": [0], "local_grads": ["Infinity"]},
        ],
        "output": 1,
    }
    response = await post_graph(client, graph)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["nodes"][0]["expected_grad"] == "Infinity"
    assert answer["gradient_check"]["status"] == "wrong" and answer["gradient_check"]["wrong"] == [0]


# Bad graphs: a 422 naming the node and the field.


async def test_cycle_through_a_later_node(client):
    graph = chapter_2()
    graph["nodes"][2]["children"] = [0, 3]  # c's input is L, whose input is c
    msg = only_error(await post_graph(client, graph), ("nodes", 2, "children", 1))
    assert msg == "a cycle: 2 → 3 → 2 (each a child of the one before)"


async def test_node_its_own_child(client):
    graph = chapter_2()
    graph["nodes"][3]["children"] = [2, 3]
    assert (
        only_error(await post_graph(client, graph), ("nodes", 3, "children", 1))
        == "a cycle: node 3 (L) is its own child"
    )


async def test_forward_child(client):
    graph = chapter_2()
    graph["nodes"][2]["children"] = [0, 1]
    graph["nodes"][0], graph["nodes"][2] = graph["nodes"][2], graph["nodes"][0]
    msg = only_error(await post_graph(client, graph), ("nodes", 0, "children", 0))
    assert msg.startswith("node 2 (c): child 0 comes later in nodes")


async def test_unknown_child(client):
    graph = chapter_2()
    graph["nodes"][3]["children"] = [2, 99]
    assert only_error(await post_graph(client, graph), ("nodes", 3, "children", 1)) == (
        "node 3 (L): child 99 is not the id of any node"
    )


async def test_duplicate_ids(client):
    graph = chapter_2()
    graph["nodes"][1]["id"] = 0
    assert "id 0 is already the id of node 0" in only_error(await post_graph(client, graph), ("nodes", 1, "id"))


async def test_children_and_local_grads_of_different_lengths(client):
    graph = chapter_2()
    graph["nodes"][2]["local_grads"] = [3.0]
    assert only_error(await post_graph(client, graph), ("nodes", 2, "local_grads")).startswith(
        "node 2 (c) has 2 children but 1 local gradients"
    )


async def test_output_not_a_node(client):
    assert only_error(await post_graph(client, chapter_2(output=12)), ("output",)) == (
        "the output 12 is not the id of any node"
    )


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
async def test_non_finite_json_numbers_are_refused(client, literal):
    body = json.dumps({"graph": chapter_2()}).replace('"data": 3.0', f'"data": {literal}')
    response = await client.post("/backward", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422
    locs = [problem["loc"][:6] for problem in response.json()["detail"]]
    assert ["body", "graph", "nodes", 1, "data", "float"] in locs


async def test_over_long_label(make_client):
    client = make_client(max_label_length=5)
    graph = chapter_2()
    graph["nodes"][1]["label"] = "b" * 6
    msg = only_error(await post_graph(client, graph), ("nodes", 1, "label"))
    assert msg == "node 1's label is 6 characters; the limit is 5 (VALUEGRAPH_MAX_LABEL_LENGTH)"
    graph["nodes"][1]["label"] = "b" * 5
    assert (await post_graph(client, graph)).status_code == 200


async def test_more_nodes_than_the_node_limit(make_client):
    client = make_client(max_nodes=3)
    msg = only_error(await post_graph(client, chapter_2()), ("nodes",))
    assert msg == "the graph has 4 nodes; the limit is 3 (VALUEGRAPH_MAX_NODES)"
    assert (await post_graph(make_client(max_nodes=4), chapter_2())).status_code == 200


async def test_unknown_op_and_wrong_arity(client):
    graph = chapter_2()
    graph["nodes"][3]["op"] = "sigmoid"
    assert "unknown op 'sigmoid'" in only_error(await post_graph(client, graph), ("nodes", 3, "op"))
    graph["nodes"][3]["op"] = "tanh"
    assert only_error(await post_graph(client, graph), ("nodes", 3, "children")) == (
        "node 3 (L): op 'tanh' takes 1 input, the node has 2"
    )


async def test_grad_on_some_nodes_only(client):
    graph = chapter_2()
    del graph["nodes"][1]["grad"]
    assert "no grad while 3 other nodes have one" in only_error(await post_graph(client, graph), ("nodes", 1, "grad"))


async def test_unknown_walk_id(client):
    assert only_error(await post_graph(client, chapter_2(walk=[3, 8])), ("walk", 1)) == (
        "walk step 1: 8 is not the id of any node"
    )


@pytest.mark.parametrize("field", ["data", "grad", "grad_before"])
async def test_true_and_false_are_no_numbers(client, field):
    graph = chapter_2()
    graph["nodes"][1][field] = False
    problems = (await post_graph(client, graph)).json()["detail"]
    assert problems[0]["loc"][:5] == ["body", "graph", "nodes", 1, field], problems
    graph["nodes"][1][field] = 3  # a whole number is one
    assert (await post_graph(client, graph)).status_code == 200


async def test_nudge_test_needs_ops(client):
    graph = chapter_2()
    graph["nodes"][2]["op"] = None
    graph["nodes"][2]["local_grads"] = [3.5, 2.0]  # no rule fits: stays without an op
    assert "replays each node's op" in only_error(await post_graph(client, graph, check=True), ("nodes", 2, "op"))


@pytest.mark.parametrize(
    "body",
    [
        {"expression": "a = 2", "graph": CHAPTER_2_GRAPH},
        {},
        {"graph": CHAPTER_2_GRAPH, "variables": {"a": 1.0}},
        {"graph": {**CHAPTER_2_GRAPH, "nodes": [{**CHAPTER_2_GRAPH["nodes"][0], "lable": "x"}]}},
    ],
)
async def test_request_shape_problems(client, body):
    assert (await client.post("/backward", json=body)).status_code == 422


async def test_a_large_bad_graph_is_refused_within_the_budget(make_client):
    """A 20,000-node chain whose first node takes the last as its input: the cycle is found in
    one pass, and the 422 names the whole loop's ends. (The budget is generous for a loaded machine:
    the point is a 422 found in linear time, where a search per node would take minutes.)"""
    client = make_client(max_body_bytes=10_000_000, time_budget=30.0)
    n = 20_000
    nodes = [{"id": 0, "data": 1.0, "children": [n - 1], "local_grads": [1.0]}]
    nodes += [{"id": i, "data": 1.0, "children": [i - 1], "local_grads": [1.0]} for i in range(1, n)]
    response = await post_graph(client, {"nodes": nodes, "output": n - 1})
    msg = only_error(response, ("nodes", 0, "children", 0))
    assert msg.startswith("a cycle: 0 → 19999 → 19998") and msg.endswith("→ 1 → 0 (each a child of the one before)")


# Round trips: the nodes and output of any answer are a valid graph, and give the same graph back.


def as_graph(answer):
    return {"nodes": answer["nodes"], "output": answer["output"]}


def graph_part(answer):
    return [{field: node.get(field) for field in NODE_FIELDS + ("exponent",)} for node in answer["nodes"]]


PROGRAMS = [
    "a = 2; b = 3; c = a * b; L = c + a",
    "x = -1.5; y = x ** 3; z = y.tanh() + y.relu() + x.exp(); L = z / (x - 4)",
    "a = 0; L = log(a) * 2",  # -Infinity data, NaN on the way
    "a = 3; L = a * a * a",
    "a = 2; b = -a; L = (b + 1) ** 2",
]


@pytest.mark.parametrize("program", PROGRAMS)
async def test_an_answer_posts_back_as_a_graph(client, program):
    first = (await client.post("/backward", json={"expression": program})).json()
    again = await post_graph(client, as_graph(first))
    assert again.status_code == 200, again.text
    second = again.json()
    assert graph_part(second) == graph_part(first)
    assert second["trace"] == first["trace"] and second["order"] == first["order"]
    assert second["gradient_check"]["status"] == "ok"
    assert [node["expected_grad"] for node in second["nodes"]] == [node["grad"] for node in first["nodes"]]
    third = (await post_graph(client, as_graph(second))).json()  # a graph answer posts back too
    assert graph_part(third) == graph_part(second) and third["gradient_check"] == second["gradient_check"]


async def test_a_python_program_answer_posts_back(client):
    program = "a = Value(2.0)\nb = Value(-3.0)\nc = (a * b).tanh() + a ** 2\nc.backward()\nprint(a.grad)"
    first = (await client.post("/backward", json={"expression": program})).json()
    second = (await post_graph(client, as_graph(first))).json()
    assert graph_part(second) == graph_part(first) and second["gradient_check"]["status"] == "ok"


async def test_ordinary_programs_carry_no_check_fields(client):
    answer = (await client.post("/backward", json={"expression": PROGRAMS[0]})).json()
    assert "gradient_check" not in answer and all("expected_grad" not in node for node in answer["nodes"])


async def test_the_openapi_schema_describes_graph_and_check(client):
    schema = (await client.get("/openapi.json")).json()["components"]["schemas"]
    assert "graph" in schema["BackwardRequest"]["properties"]
    assert set(schema["GraphNode"]["required"]) == {"id", "data", "children", "local_grads"}
    assert "gradient_check" in schema["BackwardResponse"]["properties"]
    assert "expected_grad" in schema["Node"]["properties"]
    assert schema["GradientCheck"]["properties"]["status"]["enum"] == ["ok", "wrong", "no_backward"]


LEAF_NAMES = st.sampled_from("abcdefgh")


@st.composite
def programs(draw):
    """Random shorthand programs: leaves, then operations on any earlier names (so with reuse)."""
    names = []
    lines = []
    for name in draw(st.lists(LEAF_NAMES, min_size=1, max_size=4, unique=True)):
        lines.append(f"{name} = {draw(st.integers(-3, 3))}")
        names.append(name)
    for k in range(draw(st.integers(1, 8))):
        a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        form = draw(
            st.sampled_from(["{a} + {b}", "{a} * {b}", "{a} - {b}", "tanh({a})", "relu({a}) * {b}", "{a} ** 2"])
        )
        lines.append(f"v{k} = " + form.format(a=a, b=b))
        names.append(f"v{k}")
    return "; ".join(lines)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(program=programs())
async def test_random_answers_round_trip(client, program):
    first = (await client.post("/backward", json={"expression": program})).json()
    second = (await post_graph(client, as_graph(first))).json()
    assert graph_part(second) == graph_part(first), program
    assert second["gradient_check"]["status"] == "ok", second["gradient_check"]
    assert second["trace"] == first["trace"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(program=programs(), node=st.integers(0, 100), delta=st.sampled_from([1.0, -0.5, 1e6]))
async def test_a_changed_grad_is_found(client, program, node, delta):
    first = (await client.post("/backward", json={"expression": program})).json()
    graph = copy.deepcopy(as_graph(first))
    target = graph["nodes"][node % len(graph["nodes"])]
    target["grad"] = target["grad"] + delta
    check = (await post_graph(client, graph)).json()["gradient_check"]
    assert check["status"] == "wrong" and target["id"] in check["wrong"] and check["first"] is not None


def test_a_graph_answer_written_a_chunk_at_a_time_is_the_built_answer(monkeypatch):
    from app import schemas, serialize
    from app.service import compute
    from engine import Limits

    monkeypatch.setattr(serialize, "CHUNK", 3)
    graph = chapter_2()
    graph["nodes"][0]["grad"] = 3.0
    made = compute(schemas.BackwardRequest(graph=graph, layout=True), Limits())
    written = made.json()
    assert written == serialize.to_json(made.response())
    assert b'"expected_grad":4.0' in written and b'"gradient_check":{"status":"wrong"' in written


def test_the_page_writes_the_derived_ops_of_posted_graphs(tmp_path):
    """format.js (run by node, as the page imports it) writes "-" and "/" between their inputs
    and neg before its one, as for the engine's own ops."""
    import pathlib
    import shutil
    import subprocess

    format_js = pathlib.Path(__file__).parent.parent / "static" / "js" / "format.js"
    script = (
        f"import {{ formula }} from {json.dumps(format_js.as_uri())};\n"
        "const nodes = [{id: 0, label: 'x', op: null, children: []}, {id: 1, label: 'y', op: null, children: []},\n"
        "  {id: 2, label: 'q', op: '/', children: [0, 1]}, {id: 3, label: 'r', op: '-', children: [2, 1]},\n"
        "  {id: 4, label: 's', op: 'neg', children: [3]}];\n"
        "console.log(JSON.stringify(nodes.slice(2).map((node) => formula(node, nodes))));\n"
    )
    node = shutil.which("node")
    assert node, "node is not installed"
    done = subprocess.run(
        [node, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(done.stdout) == ["x / y", "q - y", "-r"]


NUMBERS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.sampled_from(["NaN", "Infinity", "-Infinity", 0.0, -0.0, 1.0]),
)
OPS = st.sampled_from([None, "+", "*", "**", "-", "/", "neg", "exp", "log", "relu", "ReLU", "tanh", "**3"])


@st.composite
def any_graphs(draw):
    """Graphs of any numbers, ops and sharing (children always earlier), grads on all nodes or none."""
    size = draw(st.integers(1, 12))
    with_grads = draw(st.booleans())
    nodes = []
    for i in range(size):
        children = draw(st.lists(st.integers(0, i - 1), max_size=2)) if i else []
        node = {
            "id": i,
            "data": draw(NUMBERS),
            "children": children,
            "local_grads": [draw(NUMBERS) for _ in children],
            "op": draw(OPS),
        }
        if with_grads:
            node["grad"] = draw(NUMBERS)
        nodes.append(node)
    walk = draw(st.none() | st.lists(st.integers(0, size - 1), max_size=20))
    return {"nodes": nodes, "output": size - 1, **({"walk": walk} if walk is not None else {})}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(graph=any_graphs(), check_=st.booleans())
async def test_any_graph_is_answered_or_refused_never_a_500(client, graph, check_):
    """IEEE numbers never raise: whatever the numbers, ops and grads, the answer is 200 with a
    gradient_check, or a 422 naming the node (an op whose inputs do not fit it)."""
    response = await post_graph(client, graph, check=check_)
    assert response.status_code in (200, 422), response.text
    if response.status_code == 200:
        answer = response.json()
        assert answer["gradient_check"]["status"] in ("ok", "wrong", "no_backward")
        assert all("expected_grad" in node for node in answer["nodes"])
    else:
        assert response.json()["detail"][0]["loc"][:3] == ["body", "graph", "nodes"]


async def test_the_page_revives_the_checks_numbers(client, tmp_path):
    """api.js's reviveNumbers (run by node) turns the strings of non-finite numbers back into
    numbers in expected_grad and in gradient_check.local, as in every other number field."""
    import pathlib
    import shutil
    import subprocess

    graph = {
        "nodes": [
            {"id": 0, "label": "x", "data": 0.0, "grad": 1.0, "children": [], "local_grads": []},
            {"id": 1, "op": "log", "data": "-Infinity", "grad": 1.0, "children": [0], "local_grads": [2.0]},
        ],
        "output": 1,
    }
    answer = (await post_graph(client, graph)).json()
    assert answer["nodes"][0]["expected_grad"] == 2.0 and answer["gradient_check"]["local"][0]["expected"] == "Infinity"
    (tmp_path / "answer.json").write_text(json.dumps(answer))
    api_js = pathlib.Path(__file__).parent.parent / "static" / "js" / "api.js"
    script = (
        f"import {{ reviveNumbers }} from {json.dumps(api_js.as_uri())};\n"
        "import { readFileSync } from 'node:fs';\n"
        "const answer = reviveNumbers(JSON.parse(readFileSync('answer.json', 'utf8')));\n"
        "const local = answer.gradient_check.local[0];\n"
        "console.log(JSON.stringify([answer.nodes[1].data === -Infinity, local.expected === Infinity,"
        " typeof answer.nodes[0].expected_grad]));\n"
    )
    node = shutil.which("node")
    assert node, "node is not installed"
    done = subprocess.run(
        [node, "--input-type=module", "-e", script], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [True, True, "number"]


@pytest.mark.parametrize("path", ["/export/html", "/export/scorm"])
async def test_exports_take_a_graph_too(client, path):
    """The HTML file and the SCORM package replay a posted graph as they replay a program."""
    response = await client.post(path, json={"graph": chapter_2()})
    assert response.status_code == 200, response.text[:300]
    assert len(response.content) > 1000


async def test_a_broken_walk_variant_keeps_the_course_expected_grads(client):
    """variant picks valuegraph's walk to show; expected_grad and the check stay the course's."""
    graph = chapter_2()
    graph["nodes"][0]["grad"] = 3.0
    correct = (await post_graph(client, graph)).json()
    assigned = (await post_graph(client, graph, variant="assign")).json()
    assert assigned["variant"] == "assign" and assigned["trace"] != correct["trace"]
    assert assigned["gradient_check"] == correct["gradient_check"]
    assert [n["expected_grad"] for n in assigned["nodes"]] == [n["expected_grad"] for n in correct["nodes"]]


@pytest.mark.parametrize("size,paused", [(10_000, False), (1_200_000, True)])
async def test_the_collector_is_paused_while_a_large_body_is_read(size, paused):
    """A large body (a graph posted whole) is parsed with the cyclic collector paused, and the
    collector runs again once the request is over; a small one is left alone."""
    import gc

    import httpx

    from app.middleware import PAUSE_COLLECTOR_FROM_BYTES, BodySizeLimit

    seen = []

    async def app(scope, receive, send):
        await receive()
        seen.append(gc.isenabled())
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    assert (size >= PAUSE_COLLECTOR_FROM_BYTES) == paused
    wrapped = BodySizeLimit(
        app,
        max_bytes=2_000_000,
        max_graph_bytes=2_000_000,
        max_discard_bytes=2_000_000,
        linger_seconds=1.0,
        max_linger_bytes=2_000_000,
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=wrapped), base_url="http://t") as client:
        assert gc.isenabled()
        response = await client.post("/backward", content=b" " * size)
    assert response.status_code == 200
    assert seen == [not paused]
    assert gc.isenabled()


def test_names_of_unlabelled_nodes_used_twice_stay_short():
    """x = x*w + x, unlabelled: written whole, each name holds the one before twice, so 200 nodes
    would spell 2**100 characters. Run with 1 GB of address space: the kept names are cut, and a
    name's start (all the page shows) is still right."""
    import subprocess
    import sys

    program = (
        "import resource, json\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from engine import Limits, Value, trace\n"
        "from engine.program import ProgramRun\n"
        "x = Value(1.0, label='x')\n"
        "for k in range(100):\n"
        "    x = x * Value(0.5, label=f'w{k}') + x\n"
        "steps = trace(x, Limits())\n"
        "labels, made = ProgramRun(None).origin_parts(steps.nodes)\n"
        "print(json.dumps([expr for _, expr, _ in made if expr]))\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    names = json.loads(done.stdout)
    assert names[:4] == ["x*w0", "x*w0+x", "(x*w0+x)*w1", "(x*w0+x)*w1+x*w0+x"]
    assert len(names) == 200 and names[-1] == "(((((((((((((((((((((((((((((((((((((((…"


# The body limit of a graph posted whole (VALUEGRAPH_MAX_GRAPH_BODY_BYTES), both sides of it

JSON = {"content-type": "application/json"}
GENERAL_413 = (
    "the request body is larger than the limit of 1,000 bytes (VALUEGRAPH_MAX_BODY_BYTES); a body with a `graph` "
    "may have up to {graph:,} (VALUEGRAPH_MAX_GRAPH_BODY_BYTES)"
)
GRAPH_413 = (
    "the request body is larger than the limit of {graph:,} bytes for a body with a `graph` "
    "(VALUEGRAPH_MAX_GRAPH_BODY_BYTES)"
)


def padded_chapter_2(size: int) -> bytes:
    """Chapter 2's graph as a body of exactly `size` bytes (its labels' spaces are padding)."""
    body = json.dumps({"graph": chapter_2()}).encode()
    return body[:-1] + b" " * (size - len(body)) + b"}"


async def test_a_graph_body_past_the_general_limit_is_served_up_to_its_own(make_client):
    client = make_client(max_body_bytes=1_000, max_graph_body_bytes=5_000)
    for size in (1_001, 5_000):
        response = await client.post("/backward", content=padded_chapter_2(size), headers=JSON)
        assert response.status_code == 200, response.text
        assert response.json()["gradient_check"]["status"] == "ok"
    # Declared past the graph limit: refused unread (what it carries is not known), naming both limits.
    response = await client.post("/backward", content=padded_chapter_2(5_001), headers=JSON)
    assert response.status_code == 413
    assert response.json() == {"detail": {"message": GENERAL_413.format(graph=5_000)}}


async def test_a_chunked_graph_body_is_counted_against_the_graph_limit(make_client):
    client = make_client(max_body_bytes=1_000, max_graph_body_bytes=5_000)

    def chunks(body):
        async def sent():
            for start in range(0, len(body), 700):
                yield body[start : start + 700]

        return sent()

    response = await client.post("/backward", content=chunks(padded_chapter_2(4_000)), headers=JSON)
    assert "content-length" not in response.request.headers
    assert response.status_code == 200
    # Sent without a length, it is read until it passes the limit: known to be a graph by then.
    response = await client.post("/backward", content=chunks(padded_chapter_2(6_000)), headers=JSON)
    assert response.status_code == 413
    assert response.json() == {"detail": {"message": GRAPH_413.format(graph=5_000)}}


async def test_a_body_without_a_graph_keeps_the_general_limit(make_client):
    client = make_client(max_body_bytes=1_000, max_graph_body_bytes=5_000)
    general = {"detail": {"message": GENERAL_413.format(graph=5_000)}}
    program = json.dumps({"expression": "a = 2; L = a * a" + " " * 2_000}).encode()
    response = await client.post("/backward", content=program, headers=JSON)
    assert response.status_code == 413 and response.json() == general
    # A body that names a graph where it has none (here in its program) is read, then refused by the route.
    program = json.dumps({"expression": "graph = 2; L = graph * graph" + " " * 2_000}).encode()
    response = await client.post("/backward", content=program, headers=JSON)
    assert response.status_code == 413 and response.json() == general
    # Other routes have only the general limit.
    response = await client.post("/export/html", content=padded_chapter_2(1_001), headers=JSON)
    assert response.status_code == 413
    assert response.json() == {
        "detail": {"message": "the request body is larger than the limit of 1,000 bytes (VALUEGRAPH_MAX_BODY_BYTES)"}
    }


async def test_a_100000_node_graph_is_answered_and_checked(make_client):
    """x = x*w + x with w = 0, 49,999 times: every x is used twice, every grad is 1 but w's, which
    is the number of products. Posted at the default limits (its body, ~13 MB, is past the general
    body limit); the time budget is raised so that a loaded machine times nothing here."""
    client = make_client(time_budget=600.0)
    nodes = [
        {"id": 0, "label": "w", "data": 0.0, "grad": 49_999.0, "children": [], "local_grads": []},
        {"id": 1, "label": "x", "data": 1.0, "grad": 1.0, "children": [], "local_grads": []},
    ]
    x = 1
    while len(nodes) < 100_000:
        product, total = len(nodes), len(nodes) + 1
        nodes.append(
            {"id": product, "op": "*", "data": 0.0, "grad": 1.0, "children": [x, 0], "local_grads": [0.0, 1.0]}
        )
        nodes.append(
            {"id": total, "op": "+", "data": 1.0, "grad": 1.0, "children": [product, x], "local_grads": [1.0, 1.0]}
        )
        x = total
    body = json.dumps({"graph": {"nodes": nodes, "output": x}, "trace": False}).encode()
    assert Settings().max_body_bytes < len(body) <= Settings().max_graph_body_bytes
    response = await client.post("/backward", content=body, headers=JSON)
    assert response.status_code == 200, response.text[:500]
    answer = response.json()
    assert answer["gradient_check"]["status"] == "ok"
    assert len(answer["nodes"]) == 100_000
    assert [node["expected_grad"] for node in answer["nodes"]] == [49_999.0] + [1.0] * 99_999
    # One grad wrong (the learner's = for += on x's last use): named as the first wrong node.
    nodes[-3]["grad"] = 0.0
    body = json.dumps({"graph": {"nodes": nodes, "output": x}, "trace": False}).encode()
    check = (await client.post("/backward", content=body, headers=JSON)).json()["gradient_check"]
    assert check["status"] == "wrong" and 99_997 in check["wrong"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"expression": "a = 1", "graph": chapter_2()},
            "give either `expression` (a program) or `graph` (a graph), not both",
        ),
        ({"expression": None}, "give `expression` (a program) or `graph` (a graph): neither was given a value"),
        (
            {"expression": None, "graph": None},
            "give `expression` (a program) or `graph` (a graph): neither was given a value",
        ),
    ],
)
async def test_a_body_with_both_or_neither_of_expression_and_graph_says_which(client, body, message):
    response = await client.post("/backward", json=body)
    assert response.status_code == 422
    (problem,) = response.json()["detail"]
    assert problem["msg"] == message and problem["loc"] == ["body"]
