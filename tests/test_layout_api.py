"""POST /layout: the server's layered layout for a graph the page builds (its view with scopes
collapsed into boxes), checked against the layout /backward gives for the same graph."""

import json

import pytest

from app.layout import compute_layout
from engine import Limits, evaluate, parse, trace

pytestmark = pytest.mark.anyio


def children_of(program):
    steps = trace(evaluate(parse(program, Limits()), {}), Limits(), "correct")
    ids = {node: i for i, node in enumerate(steps.nodes)}
    return steps, [[ids[c] for c in node._children] for node in steps.nodes]


async def test_the_same_layout_as_backward_gives_for_the_same_graph(client):
    steps, children = children_of("a = 2; b = 3; c = a * b; d = c + a; e = log(d) * a")
    response = await client.post("/layout", json={"children": children})
    assert response.status_code == 200
    assert response.json() == compute_layout(steps)


async def test_a_collapsed_view_gets_ranks_rows_and_bends(client):
    # Three boxes in a row and an output that also uses the first box: the long edge bends.
    response = await client.post("/layout", json={"children": [[], [0, 0], [1], [2, 0]]})
    layout = response.json()
    assert response.status_code == 200
    assert layout["ranks"] == 4
    assert [node["rank"] for node in layout["nodes"]] == [0, 1, 2, 3]
    long_edge = next(e for e in layout["edges"] if e["parent"] == 3 and e["child"] == 0)
    assert [bend[0] for bend in long_edge["bends"]] == [1, 2]
    assert sum(1 for e in layout["edges"] if e["parent"] == 1) == 2  # duplicates kept, one per slot


@pytest.mark.parametrize(
    ("children", "says"),
    [
        ([[], [], [0, 3], [2, 0]], "node 2 has child 3"),  # an edge that does not go up
        ([[], [1]], "node 1 has child 1"),  # a loop
        ([[], [], [0], [2, 0]], "node 1 does not reach the output"),
        ([[-1]], "greater than or equal to 0"),
        ([], "at least 1 item"),
    ],
)
async def test_a_graph_that_is_not_one_is_refused_with_the_reason(client, children, says):
    response = await client.post("/layout", json={"children": children})
    assert response.status_code == 422
    assert says in str(response.json()["detail"])


async def test_the_node_limit_bounds_the_graph(make_client):
    client = make_client(max_nodes=3)
    assert (await client.post("/layout", json={"children": [[], [0], [1]]})).status_code == 200
    response = await client.post("/layout", json={"children": [[], [0], [1], [2]]})
    assert response.status_code == 400
    assert (
        response.json()["detail"]["message"] == "the graph has 4 nodes, more than the limit of 3 (VALUEGRAPH_MAX_NODES)"
    )


async def test_a_long_chain_is_laid_out_within_the_budget(client):
    children = [[]] + [[i] for i in range(20_000)]
    response = await client.post("/layout", json={"children": children})
    assert response.status_code == 200
    assert response.json()["ranks"] == 20_001


async def test_the_endpoint_is_in_the_openapi_schema(client):
    schema = (await client.get("/openapi.json")).json()
    assert "children" in schema["components"]["schemas"]["LayoutRequest"]["properties"]
    assert "/layout" in schema["paths"]


# layout_max_nodes: the page's first request for a big graph skips the layout of every node (it
# opens collapsed and asks POST /layout for the view it shows).
SIX_NODES = "a = 2; b = 3; c = a * b; d = c + a; e = log(d) * a"  # a, b, c, d, log(d), e


async def test_a_graph_within_layout_max_nodes_has_the_same_layout_as_without_it(client):
    plain = (await client.post("/backward", json={"expression": SIX_NODES, "layout": True})).json()
    bounded = await client.post("/backward", json={"expression": SIX_NODES, "layout": True, "layout_max_nodes": 6})
    assert bounded.status_code == 200
    assert len(plain["nodes"]) == 6
    assert bounded.json() == plain


async def test_a_graph_over_layout_max_nodes_has_no_layout_and_everything_else(client):
    plain = (await client.post("/backward", json={"expression": SIX_NODES, "layout": True})).json()
    bounded = await client.post("/backward", json={"expression": SIX_NODES, "layout": True, "layout_max_nodes": 5})
    assert bounded.status_code == 200
    answer = bounded.json()
    assert "layout" not in answer
    assert answer == {key: value for key, value in plain.items() if key != "layout"}
    got = await client.get("/backward", params={"expression": SIX_NODES, "layout": "true", "layout_max_nodes": "5"})
    assert got.status_code == 200
    assert "layout" not in got.json()
    assert "layout" in (await client.get("/backward", params={"expression": SIX_NODES, "layout": "true"})).json()


async def test_layout_max_nodes_without_layout_lays_out_nothing(client):
    response = await client.post("/backward", json={"expression": SIX_NODES, "layout_max_nodes": 100})
    assert response.status_code == 200
    assert "layout" not in response.json()


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (0, "greater than or equal to 1"),
        (-5, "greater than or equal to 1"),
        (2.5, "valid integer"),
        ("10", "valid integer"),
        (True, "valid integer"),
    ],
)
async def test_a_bad_layout_max_nodes_is_refused_where_it_is(client, value, says):
    response = await client.post("/backward", json={"expression": SIX_NODES, "layout": True, "layout_max_nodes": value})
    assert response.status_code == 422
    problems = [
        p for p in response.json()["detail"] if p["loc"][-1] == "layout_max_nodes" or "layout_max_nodes" in p["loc"]
    ]
    assert problems, response.json()
    assert any(says in p["msg"] for p in problems)


async def test_layout_max_nodes_is_in_the_openapi_schema(client):
    schema = (await client.get("/openapi.json")).json()
    request = schema["components"]["schemas"]["BackwardRequest"]["properties"]["layout_max_nodes"]
    assert {"type": "integer", "minimum": 1} in request["anyOf"]


# A big graph's whole layout is asked with all its children lists (1.4 MB at 100,000 nodes): POST
# /layout bodies have the graph body limit (VALUEGRAPH_MAX_GRAPH_BODY_BYTES), not the general one.
LAYOUT_413 = (
    "the request body is larger than the limit of 5,000 bytes for a graph to lay out (VALUEGRAPH_MAX_GRAPH_BODY_BYTES)"
)


def chain_body(nodes):
    return json.dumps({"children": [[]] + [[i] for i in range(nodes - 1)]}).encode()


async def test_a_layout_body_past_the_general_limit_is_laid_out_up_to_the_graph_limit(make_client):
    client = make_client(max_body_bytes=1_000, max_graph_body_bytes=5_000)
    body = chain_body(500)
    assert 1_000 < len(body) <= 5_000
    response = await client.post("/layout", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200
    assert response.json()["ranks"] == 500
    body = chain_body(800)
    assert len(body) > 5_000
    response = await client.post("/layout", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert response.json() == {"detail": {"message": LAYOUT_413}}
    # Other paths keep the general limit.
    program = json.dumps({"expression": "a = 2; L = a * a" + " " * 2_000}).encode()
    response = await client.post("/backward", content=program, headers={"content-type": "application/json"})
    assert response.status_code == 413
