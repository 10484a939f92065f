"""Python programs through the API: POST and GET take the same programs, seed and run are request
fields with their bounds, and the response carries span, expr, scope, runs, run and printed."""

import pytest

pytestmark = pytest.mark.anyio

TRAINING = """import random
w = Value(random.uniform(-1, 1), label='w')
for k in range(3):
    loss = (w * 2 - 1) ** 2
    w.grad = 0
    loss.backward()
    w.data -= 0.1 * w.grad
    print(f'{k}: {loss.data:.4f}')
"""


async def test_post_and_get_answer_the_same(client):
    for fields in ({}, {"seed": 3}, {"run": 1}, {"seed": 4, "run": 0, "layout": True}):
        posted = await client.post("/backward", json={"expression": TRAINING, **fields})
        got = await client.get(
            "/backward", params={"expression": TRAINING, **{k: str(v).lower() for k, v in fields.items()}}
        )
        assert posted.status_code == got.status_code == 200
        assert posted.json() == got.json()


async def test_runs_run_and_printed(client):
    body = (await client.post("/backward", json={"expression": TRAINING})).json()
    assert [run["line"] for run in body["runs"]] == [6, 6, 6] and body["run"] == 2
    assert len(body["printed"]) == 3 and body["printed"][0].startswith("0: ")
    assert body["nodes"][body["output"]]["data"] == body["runs"][2]["data"]
    first = (await client.post("/backward", json={"expression": TRAINING, "run": 0})).json()
    assert first["run"] == 0 and first["nodes"][first["output"]]["data"] == body["runs"][0]["data"]
    assert first["runs"] == body["runs"]  # the program ran to its end either way
    w = first["nodes"][0]
    assert w["label"] == "w" and w["span"] == {"line": 2, "column": 5, "end_line": 2, "end_column": 44}
    assert w["expr"] == "Value(random.uniform(-1, 1), label='w')" and w["scope"] == []
    assert (
        first["nodes"][first["output"]]["scope"] == ["for k = 0"] and first["nodes"][first["output"]]["label"] == "loss"
    )


async def test_grads_carried_counts_the_grads_earlier_backward_calls_left_in_the_graph_shown(client):
    """micrograd's grads add up over backward() calls until the program zeroes them; the graph shown is the
    chosen call's walk from 0, so the answer says how many of its nodes held a grad when that call began."""
    again = "a = Value(2.0)\nb = Value(3.0)\nL = a * b + a\nL.backward()\nL.backward()\nprint(a.grad)\n"
    last, first = [(await client.post("/backward", json={"expression": again, "run": run})).json() for run in (1, 0)]
    assert last["printed"] == ["11.0"] and {n["label"]: n["grad"] for n in last["nodes"]}["a"] == 4.0
    assert last["grads_carried"] == 3 and first["grads_carried"] == 0  # a, b and a * b; L's is seeded
    zeroed = (await client.post("/backward", json={"expression": TRAINING})).json()  # w.grad = 0 before each
    assert zeroed["grads_carried"] == 0
    no_call = (await client.post("/backward", json={"expression": "a = Value(2.0)\nL = a * a\n"})).json()
    assert "grads_carried" not in no_call


async def test_the_seed_changes_the_draws_and_only_the_seed(client):
    a = (await client.post("/backward", json={"expression": TRAINING, "seed": 1})).json()
    b = (await client.post("/backward", json={"expression": TRAINING, "seed": 1})).json()
    c = (await client.post("/backward", json={"expression": TRAINING, "seed": 2})).json()
    assert a == b and a["nodes"][0]["data"] != c["nodes"][0]["data"]


@pytest.mark.parametrize("fields", [{"seed": -1}, {"seed": 2**32}, {"seed": 1.5}, {"run": -1}, {"run": "last"}])
async def test_seed_and_run_are_validated(client, fields):
    response = await client.post("/backward", json={"expression": TRAINING, **fields})
    assert response.status_code == 422


async def test_a_run_out_of_range_is_400_with_the_usual_shape(client):
    response = await client.post("/backward", json={"expression": TRAINING, "run": 3})
    assert response.status_code == 400
    assert response.json()["detail"] == {
        "message": "run 3 does not exist: the program calls backward() 3 times (runs are numbered from 0)",
        "line": 1,
        "column": 1,
        "offset": 0,
    }


async def test_variables_are_for_the_shorthand(client):
    response = await client.post("/backward", json={"expression": "y = Value(2.0) * x", "variables": {"x": 1.0}})
    assert (
        response.status_code == 400 and "variables are for the course shorthand" in response.json()["detail"]["message"]
    )


async def test_the_openapi_schema_carries_the_new_fields(client):
    spec = (await client.get("/openapi.json")).json()
    schemas = spec["components"]["schemas"]
    request = schemas["BackwardRequest"]["properties"]
    assert request["seed"]["default"] == 0 and request["seed"]["maximum"] == 2**32 - 1
    assert request["run"]["anyOf"][0]["minimum"] == 0
    get_parameters = {p["name"] for p in spec["paths"]["/backward"]["get"]["parameters"]}
    assert {"seed", "run"} <= get_parameters
    assert set(schemas["SourceSpan"]["required"]) == {"line", "column", "end_line", "end_column"}
    assert {"span", "expr", "scope"} <= set(schemas["Node"]["required"])
    assert {"runs", "run", "printed"} <= set(schemas["BackwardResponse"]["required"])
    assert set(schemas["Run"]["required"]) == {"line", "data"}


async def test_every_example_of_the_issue_answers(client):
    for program in (
        "x1 = Value(2.0, label='x1')\nc = x1 * 2\nc += 1\nc.backward()",
        "xs = [1, 2, 3]\nw = Value(0.5)\nfor i in range(3):\n    w = w * xs[i]\nw.backward()",
        "a = Value(1.0)\nb = Value(2.0)\nc = a + b\nd = a * b\ne = c + d\nf = c * d\ny = e + f\ny.backward()",
    ):
        response = await client.post("/backward", json={"expression": program, "layout": True})
        assert response.status_code == 200, response.text
