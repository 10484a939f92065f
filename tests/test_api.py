"""The JSON API through the real ASGI app: wire format, errors, limits, headers, time budget."""

import json
import math
import time
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from pydantic import TypeAdapter

from app import schemas
from app.budget import TimeBudgetExceeded, run_within_budget
from app.config import Settings
from app.main import create_app
from app.serialize import to_json
from engine import VARIANTS, Limits

# Serializer warnings (a record that does not match the schema) fail the test.
pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("error:Pydantic serializer warnings:UserWarning")]

CHAPTER_2 = schemas.CHAPTER_2_PROGRAM

# Chapter 2's graph and both of its step tables, written out from the chapter.
CHAPTER_2_RESPONSE = {
    "output": 3,
    "nodes": [
        {
            "id": 0,
            "label": "a",
            "op": None,
            "data": 2.0,
            "grad": 4.0,
            "children": [],
            "local_grads": [],
            "span": {"line": 1, "column": 1, "end_line": 1, "end_column": 6},
            "expr": "a = 2",
            "scope": [],
        },
        {
            "id": 1,
            "label": "b",
            "op": None,
            "data": 3.0,
            "grad": 2.0,
            "children": [],
            "local_grads": [],
            "span": {"line": 1, "column": 8, "end_line": 1, "end_column": 13},
            "expr": "b = 3",
            "scope": [],
        },
        {
            "id": 2,
            "label": "c",
            "op": "*",
            "data": 6.0,
            "grad": 1.0,
            "children": [0, 1],
            "local_grads": [3.0, 2.0],
            "span": {"line": 1, "column": 19, "end_line": 1, "end_column": 24},
            "expr": "a * b",
            "scope": [],
        },
        {
            "id": 3,
            "label": "L",
            "op": "+",
            "data": 8.0,
            "grad": 1.0,
            "children": [2, 0],
            "local_grads": [1.0, 1.0],
            "span": {"line": 1, "column": 30, "end_line": 1, "end_column": 35},
            "expr": "c + a",
            "scope": [],
        },
    ],
    "order": [0, 1, 2, 3],
    "trace": {
        "sort": [
            {"node": 3, "index": 0, "action": "descend", "child": 2},
            {"node": 2, "index": 0, "action": "descend", "child": 0},
            {"node": 0, "index": 0, "action": "emit", "child": None},
            {"node": 2, "index": 1, "action": "descend", "child": 1},
            {"node": 1, "index": 0, "action": "emit", "child": None},
            {"node": 2, "index": 2, "action": "emit", "child": None},
            {"node": 3, "index": 1, "action": "skip", "child": 0},
            {"node": 3, "index": 2, "action": "emit", "child": None},
        ],
        "propagate": [
            {
                "node": 3,
                "grad": 1.0,
                "updates": [
                    {"child": 2, "local_grad": 1.0, "delta": 1.0, "grad": 1.0},
                    {"child": 0, "local_grad": 1.0, "delta": 1.0, "grad": 1.0},
                ],
            },
            {
                "node": 2,
                "grad": 1.0,
                "updates": [
                    {"child": 0, "local_grad": 3.0, "delta": 3.0, "grad": 4.0},
                    {"child": 1, "local_grad": 2.0, "delta": 2.0, "grad": 2.0},
                ],
            },
            {"node": 1, "grad": 2.0, "updates": []},
            {"node": 0, "grad": 4.0, "updates": []},
        ],
    },
    "warnings": [],
    "variant": "correct",
    "runs": [],
    "run": None,
    "printed": [],
}


def strict_json(response: httpx.Response):
    """The body as JSON, failing on the non-standard NaN/Infinity literals."""

    def reject(literal):
        raise AssertionError(f"bare {literal} in the response")

    return json.loads(response.content, parse_constant=reject)


def assert_matches_schema(body):
    """Every record has exactly the schema's keys (optional ones only where allowed) and valid values."""
    TypeAdapter(schemas.BackwardResponse).validate_python(body)
    shapes = [
        (schemas.BackwardResponse, [body]),
        (schemas.Node, body["nodes"]),
        (schemas.NonFiniteWarning, body["warnings"]),
    ]
    if "trace" in body:
        propagate = body["trace"]["propagate"]
        shapes += [(schemas.SortStep, body["trace"]["sort"]), (schemas.PropagateStep, propagate)]
        shapes += [(schemas.Update, [u for step in propagate for u in step["updates"]])]
    for shape, records in shapes:
        for record in records:
            assert shape.__required_keys__ <= record.keys() <= shape.__required_keys__ | shape.__optional_keys__


def node(body, label):
    (found,) = [n for n in body["nodes"] if n["label"] == label]
    return found


def many_terms(count):
    """About 3 * count nodes and count + 1 leaves."""
    return "a = 2\n" + " + ".join(["a * 1.5"] * count)


# The happy path


async def test_chapter_2_matches_the_chapters_tables(client):
    response = await client.post("/backward", json={"expression": CHAPTER_2})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert strict_json(response) == CHAPTER_2_RESPONSE


async def test_get_form_gives_the_same_response(client):
    posted = await client.post("/backward", json={"expression": CHAPTER_2})
    got = await client.get("/backward", params={"expression": CHAPTER_2})
    assert got.status_code == 200
    assert got.json() == posted.json() == CHAPTER_2_RESPONSE


async def test_get_form_takes_every_option(client):
    response = await client.get(
        "/backward",
        params={
            "expression": "a = 3; b = a ** 2",
            "trace": "false",
            "check": "true",
            "nudge": "0.001",
            "variant": "assign",
            "layout": "true",
        },
    )
    body = response.json()
    assert response.status_code == 200
    assert "trace" not in body and "layout" in body and body["variant"] == "assign"
    assert node(body, "a")["numeric_grad"] == pytest.approx(6.001)


async def test_trace_false_leaves_the_trace_out(client):
    body = (await client.post("/backward", json={"expression": CHAPTER_2, "trace": False})).json()
    expected = {key: value for key, value in CHAPTER_2_RESPONSE.items() if key != "trace"}
    assert body == expected


async def test_variables_become_labelled_leaves(client):
    response = await client.post(
        "/backward", json={"expression": "c = a * b\nL = c + a", "variables": {"a": 2, "b": 3.0, "unused": 7}}
    )
    body = response.json()
    assert response.status_code == 200
    assert [(n["label"], n["data"], n["grad"]) for n in body["nodes"]] == [
        ("a", 2, 4),
        ("b", 3, 2),
        ("c", 6, 1),
        ("L", 8, 1),
    ]


async def test_exponent_only_on_powers_and_numeric_grad_only_on_leaves_when_checked(client):
    body = (await client.post("/backward", json={"expression": "a = 3; b = a ** 2", "check": True})).json()
    assert_matches_schema(body)
    a, b = node(body, "a"), node(body, "b")
    assert a["numeric_grad"] == pytest.approx(6.0001, abs=1e-9)
    assert a["grad"] == 6.0
    assert "numeric_grad" not in b and "exponent" not in a
    assert b["exponent"] == 2.0 and b["op"] == "**"
    unchecked = (await client.post("/backward", json={"expression": "a = 3; b = a ** 2"})).json()
    assert all("numeric_grad" not in n for n in unchecked["nodes"])


async def test_unlabelled_nodes_and_leaves_keep_null_label_and_op(client):
    body = (await client.post("/backward", json={"expression": "x = 2; x * 3"})).json()
    constant, product = body["nodes"][1], body["nodes"][2]
    assert {key: constant[key] for key in ("id", "label", "op", "data", "grad", "children", "local_grads")} == {
        "id": 1,
        "label": None,
        "op": None,
        "data": 3.0,
        "grad": 2.0,
        "children": [],
        "local_grads": [],
    }
    assert product["label"] is None and product["op"] == "*"


async def test_nudge_sets_the_step_of_the_check(client):
    body = (
        await client.post("/backward", json={"expression": "a = 3; b = a ** 2", "check": True, "nudge": 0.5})
    ).json()
    assert node(body, "a")["numeric_grad"] == pytest.approx(6.5)


async def test_larger_program_matches_the_schema_and_the_engine(client):
    program = "w = 0.5; x = -1.5; b = 0.1\nn = tanh(w * x + b)\nL = relu(n) + exp(n) * log(w) - n / 2 + n ** 3"
    response = await client.post("/backward", json={"expression": program, "check": True, "layout": True})
    body = strict_json(response)
    assert_matches_schema(body)
    assert body["output"] == len(body["nodes"]) - 1
    assert sorted(body["order"]) == list(range(len(body["nodes"])))
    for record in body["nodes"]:
        assert len(record["children"]) == len(record["local_grads"])
        if "numeric_grad" in record:
            assert record["numeric_grad"] == pytest.approx(record["grad"], rel=1e-2, abs=1e-3)


# Variants


@pytest.mark.parametrize(
    "variant, a_grad",
    [("correct", 4.0), ("no-visited-check", 8.0), ("assign", 1.0), ("no-topological-order", 6.0)],
)
async def test_variants_walk_the_course_counter_example(client, variant, a_grad):
    body = (
        await client.post("/backward", json={"expression": "a = 1; b = a + a; c = b + b", "variant": variant})
    ).json()
    assert body["variant"] == variant
    assert node(body, "a")["grad"] == a_grad


async def test_broken_walks_show_their_order(client):
    unvisited = (
        await client.post(
            "/backward", json={"expression": "a = 1; b = a + a; c = b + b", "variant": "no-visited-check"}
        )
    ).json()
    assert unvisited["order"] == [0, 0, 1, 0, 0, 1, 2]
    unsorted = (
        await client.post(
            "/backward", json={"expression": "a = 1; b = a + a; c = b + b", "variant": "no-topological-order"}
        )
    ).json()
    assert unsorted["order"] == [] and unsorted["trace"]["sort"] == []


def test_the_variant_type_lists_the_engines_variants():
    assert set(schemas.Variant.__args__) == set(VARIANTS)


async def test_unknown_variant_is_422(client):
    response = await client.post("/backward", json={"expression": CHAPTER_2, "variant": "backwards"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "variant"]
    assert (await client.get("/backward", params={"expression": CHAPTER_2, "variant": "x"})).status_code == 422


# Layout


async def test_layout_only_when_asked(client):
    plain = (await client.post("/backward", json={"expression": CHAPTER_2})).json()
    assert "layout" not in plain
    body = (await client.post("/backward", json={"expression": CHAPTER_2, "layout": True})).json()
    layout = body["layout"]
    assert set(layout) == {"ranks", "rows", "nodes", "edges"}
    assert [n["id"] for n in layout["nodes"]] == [0, 1, 2, 3]
    assert sorted((e["parent"], e["slot"], e["child"]) for e in layout["edges"]) == [
        (2, 0, 0),
        (2, 1, 1),
        (3, 0, 2),
        (3, 1, 0),
    ]
    assert (
        max(n["rank"] for n in layout["nodes"])
        == layout["ranks"] - 1
        == next(n["rank"] for n in layout["nodes"] if n["id"] == 3)
    )
    assert_matches_schema(body)


# Non-finite numbers: 200 with the strings, never a 500


@pytest.mark.parametrize(
    "program, label, field, expected, message",
    [
        ("x = 0; y = log(x)", "y", "data", "-Infinity", "log(0) is -Infinity"),
        ("x = -1; y = log(x)", "y", "data", "NaN", "log(-1) is NaN: the logarithm of a negative number"),
        ("x = -8; y = x ** 0.5", "y", "data", "NaN", "(-8) ** 0.5 is NaN: a negative number to a fractional power"),
        ("x = 800; y = exp(x) * 0", "y", "data", "NaN", "Infinity * 0 is NaN"),
        ("x = 800; y = exp(x) * 0", "x", "grad", 0.0, "exp(800) is Infinity: too large for a float (overflow)"),
        ("x = 1; y = x + 1 / 0", "y", "data", "Infinity", "a constant is Infinity: arithmetic on plain numbers"),
        ("x = 0; y = log(x)", "x", "grad", "Infinity", "log(0) is -Infinity"),
    ],
)
async def test_non_finite_values_are_strings(client, program, label, field, expected, message):
    response = await client.post("/backward", json={"expression": program, "check": True})
    assert response.status_code == 200
    body = strict_json(response)
    assert node(body, label)[field] == expected
    assert any(w["message"].startswith(message) for w in body["warnings"])
    assert_matches_schema(body)


async def test_non_finite_values_in_the_trace_and_check_are_strings(client):
    body = strict_json(await client.get("/backward", params={"expression": "x = 0; y = log(x) * 2", "check": "true"}))
    updates = [u for step in body["trace"]["propagate"] for u in step["updates"]]
    assert {"child": 0, "local_grad": "Infinity", "delta": "Infinity", "grad": "Infinity"} in updates
    assert node(body, "x")["numeric_grad"] == "Infinity"  # (2 log(h) - -Infinity) / h


# Program errors: 400 with the place


@pytest.mark.parametrize(
    "program, line, column, offset, message",
    [
        ("a = 2\nb = a $ 3", 2, 7, 12, "unexpected character '$'"),
        ("a = 2\nb = a^2", 2, 6, 11, "unexpected character '^' (U+005E CIRCUMFLEX ACCENT): for powers write **"),
        ("x = 2a", 1, 5, 4, "'2a' is not a number"),
        ("a = 1\nb = c + a", 2, 5, 10, "unknown name 'c'"),
        ("a = 1\nfoo(a)", 2, 1, 6, "unknown function 'foo'"),
        ("log(1, 2)", 1, 1, 0, "log() takes exactly one argument, got 2"),
        ("a = (1 + 2", 1, 5, 4, "'(' opened at 1:5 is never closed"),
        ("1 + 2)", 1, 6, 5, "')' has no matching '('"),
        ("# nothing here\n", 1, 15, 14, "the program is empty"),
        ("a = b = 2", 1, 7, 6, "'=' can only follow a single name"),
        ("a = 2; b = 3; a ** b", 1, 17, 16, "the exponent must be a plain number"),
        ("1, 2", 1, 2, 1, "',' can only separate the arguments of a call"),
        ("a = 1; a.log(2)", 1, 10, 9, "a method takes no arguments"),
        ("a = 2 *\nb = 3", 1, 8, 7, "expected a number, a name or '(' after '*'"),
        ("a = 2 3", 1, 7, 6, "expected an operator or the end of the statement"),
        pytest.param(
            "(" * 201 + "1" + ")" * 201, 1, 201, 200, "the expression nests deeper than 200 levels", id="too-deep"
        ),
    ],
)
async def test_program_errors_are_400_with_line_and_column(client, program, line, column, offset, message):
    for response in (
        await client.post("/backward", json={"expression": program}),
        await client.get("/backward", params={"expression": program}),
    ):
        assert response.status_code == 400
        detail = response.json()["detail"]
        assert set(detail) == {"message", "line", "column", "offset"}
        assert (detail["line"], detail["column"], detail["offset"]) == (line, column, offset)
        assert detail["message"].startswith(message)


@pytest.mark.parametrize(
    "settings, request_body, message",
    [
        (
            {"max_source_length": 10},
            {"expression": "a = 1 + 2 + 3"},
            "the program is 13 characters long; the limit is 10",
        ),
        ({"max_depth": 2}, {"expression": "(((1)))"}, "the expression nests deeper than 2 levels"),
        ({"max_nodes": 3}, {"expression": CHAPTER_2}, "the graph has 4 nodes; the limit is 3"),
        (
            {"max_check_evaluations": 5},
            {"expression": CHAPTER_2, "check": True},
            "the nudge test would replay 4 nodes for each of 2 leaves",
        ),
        (
            {"max_variant_steps": 5},
            {"expression": CHAPTER_2, "variant": "no-visited-check"},
            "this broken walk would take more than 5 steps",
        ),
    ],
)
async def test_limits_come_from_the_settings(make_client, settings, request_body, message):
    limited = make_client(**settings)
    response = await limited.post("/backward", json=request_body)
    assert response.status_code == 400
    assert response.json()["detail"]["message"].startswith(message)
    unlimited = make_client()
    assert (await unlimited.post("/backward", json=request_body)).status_code == 200


# Bad requests: 422, never 500


@pytest.mark.parametrize(
    "content, location",
    [
        ('{"expression": "a = 1"', ["body", 22]),  # malformed JSON
        ('{"expression": 5}', ["body", "expression"]),
        ("{}", ["body", "expression"]),
        ('{"expression": "a", "trace": "maybe"}', ["body", "trace"]),
        ('{"expression": "a", "variables": {"a": "2"}}', ["body", "variables", "a"]),
        ('{"expression": "a", "variables": {"a": true}}', ["body", "variables", "a"]),
        ('{"expression": "a", "variables": {"a": NaN}}', ["body", "variables", "a"]),
        ('{"expression": "a", "variables": {"a": Infinity}}', ["body", "variables", "a"]),
        ('{"expression": "a", "variables": {"2x": 1}}', ["body", "variables", "2x", "[key]"]),
        ('{"expression": "a", "nudge": 0}', ["body", "nudge"]),
        ('{"expression": "a", "nudge": NaN}', ["body", "nudge"]),
        ('{"expression": "a", "varaibles": {}}', ["body", "varaibles"]),
        (
            '{"expression": "a", "variables": {"a": "\\ud800"}}',
            ["body", "variables", "a"],
        ),  # a lone surrogate echoed back
        ("[1, 2]", ["body"]),
    ],
)
async def test_bad_requests_are_422(client, content, location):
    response = await client.post("/backward", content=content, headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert strict_json(response)["detail"][0]["loc"] == location


async def test_422_echoing_nan_writes_it_as_a_string(client):
    response = await client.post(
        "/backward", content='{"expression": "a", "nudge": NaN}', headers={"content-type": "application/json"}
    )
    assert strict_json(response)["detail"][0]["input"] == "NaN"


async def test_json_nested_too_deep_is_a_client_error(client):
    response = await client.post(
        "/backward", content=b"[" * 10_000 + b"]" * 10_000, headers={"content-type": "application/json"}
    )
    assert response.status_code in (400, 422)
    assert response.json()["detail"]


async def test_get_without_expression_is_422(client):
    response = await client.get("/backward")
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "expression"]


async def test_get_refuses_a_parameter_it_does_not_read(client):
    # as POST refuses a field it does not know; variables are written in the program for GET
    response = await client.get("/backward", params={"expression": "y = x * x", "variables": "x=3", "trce": "false"})
    assert response.status_code == 422
    assert response.json()["detail"] == [
        {
            "type": "extra_forbidden",
            "loc": ["query", "variables"],
            "msg": "GET /backward takes no variables: write them in the program (x = 3), or POST them",
            "input": "x=3",
        },
        {
            "type": "extra_forbidden",
            "loc": ["query", "trce"],
            "msg": "Extra inputs are not permitted",
            "input": "false",
        },
    ]


# Body size: 413


async def test_body_over_the_limit_is_413(make_client):
    small = make_client(max_body_bytes=100)
    body = json.dumps({"expression": "a + " * 30 + "a"}).encode()
    assert len(body) > 100
    response = await small.post("/backward", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert response.json() == {
        "detail": {
            "message": "the request body is larger than the limit of 100 bytes (VALUEGRAPH_MAX_BODY_BYTES); a body "
            "with a `graph` may have up to 20,000,000 (VALUEGRAPH_MAX_GRAPH_BODY_BYTES)"
        }
    }


async def test_streamed_body_without_content_length_is_counted(make_client):
    small = make_client(max_body_bytes=100)

    async def chunks():
        yield b'{"expression": "'
        for _ in range(10):
            yield b"a + a + a + a + "
        yield b'a"}'

    response = await small.post("/backward", content=chunks(), headers={"content-type": "application/json"})
    assert "content-length" not in response.request.headers
    assert response.status_code == 413


async def test_body_at_the_limit_is_served(make_client):
    body = json.dumps({"expression": CHAPTER_2}).encode()
    exact = make_client(max_body_bytes=len(body))
    assert (
        await exact.post("/backward", content=body, headers={"content-type": "application/json"})
    ).status_code == 200


async def test_ten_megabyte_body_is_413_at_the_default_limit(client):
    response = await client.post("/backward", content=b"x" * 10_000_000, headers={"content-type": "application/json"})
    assert response.status_code == 413


# Time budget: 503, and the server keeps answering


async def test_request_over_the_time_budget_is_503(make_client):
    hurried = make_client(time_budget=0.001)
    response = await hurried.post("/backward", json={"expression": many_terms(3000)})
    assert response.status_code == 503
    assert response.json() == {
        "detail": {
            "message": "the request took longer than its time budget of 0.001 s and was stopped; try a smaller program"
        }
    }


async def test_stopped_requests_free_their_worker(make_client):
    hurried = make_client(time_budget=0.001, worker_threads=1)
    for _ in range(3):
        assert (await hurried.post("/backward", json={"expression": many_terms(3000)})).status_code == 503
    limiter = hurried._transport.app.state.work_limiter
    with anyio.fail_after(5):
        while limiter.borrowed_tokens:
            await anyio.sleep(0.01)


async def test_healthz_answers_while_a_slow_request_runs(make_client):
    patient = make_client(time_budget=60, max_check_evaluations=10_000_000)
    slow_request = {"expression": many_terms(500), "check": True}  # 501 leaves x 1,500 nodes replayed
    slow_status = []

    async def send_slow():
        slow_status.append((await patient.post("/backward", json=slow_request)).status_code)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(send_slow)
        await anyio.sleep(0.2)  # the slow request is computing in its worker thread
        started = time.perf_counter()
        health = await patient.get("/healthz")
        answered_in = time.perf_counter() - started
        assert slow_status == [], "the slow request finished too soon to show anything"
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    assert answered_in < 0.5
    assert slow_status == [200]


async def test_run_within_budget_stops_the_work():
    progress = []

    def spin():
        while True:
            progress.append(None)
            del progress[100:]

    with pytest.raises(TimeBudgetExceeded):
        await run_within_budget(spin, seconds=0.05, limiter=anyio.CapacityLimiter(1))
    await anyio.sleep(0.05)
    progress.clear()
    await anyio.sleep(0.1)
    assert progress == [], "the worker thread kept running after its budget"
    assert await run_within_budget(sum, [1, 2, 3], seconds=1, limiter=anyio.CapacityLimiter(1)) == 6


# Headers: CORS and gzip


async def test_cors_preflight_allows_any_origin_without_credentials(client):
    response = await client.options(
        "/backward",
        headers={
            "Origin": "https://course.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "*"
    assert "POST" in response.headers["access-control-allow-methods"]
    assert "content-type" in response.headers["access-control-allow-headers"].lower()
    assert "access-control-allow-credentials" not in response.headers


@pytest.mark.parametrize(
    "method, path, kwargs, status",
    [
        ("POST", "/backward", {"json": {"expression": CHAPTER_2}}, 200),
        ("GET", "/backward", {"params": {"expression": CHAPTER_2}}, 200),
        ("POST", "/backward", {"json": {"expression": "a +"}}, 400),
        ("POST", "/backward", {"json": {"expression": 1}}, 422),
        ("GET", "/healthz", {}, 200),
    ],
)
async def test_cors_headers_on_every_answer(client, method, path, kwargs, status):
    response = await client.request(method, path, headers={"Origin": "https://course.example"}, **kwargs)
    assert response.status_code == status
    assert response.headers["access-control-allow-origin"] == "*"
    assert "access-control-allow-credentials" not in response.headers


async def test_cors_header_on_413(make_client):
    small = make_client(max_body_bytes=10)
    response = await small.post(
        "/backward", json={"expression": CHAPTER_2}, headers={"Origin": "https://course.example"}
    )
    assert response.status_code == 413
    assert response.headers["access-control-allow-origin"] == "*"


async def test_large_responses_are_gzipped_when_accepted(client):
    request = {"expression": many_terms(200)}
    zipped = await client.post("/backward", json=request, headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["content-encoding"] == "gzip"
    assert int(zipped.headers["content-length"]) < len(zipped.content) / 5
    plain = await client.post("/backward", json=request, headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert zipped.json() == plain.json()


async def test_small_responses_are_not_gzipped(client):
    response = await client.get("/healthz", headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in response.headers


# OpenAPI and docs


async def test_openapi_documents_every_endpoint_with_chapter_2(client):
    spec = (await client.get("/openapi.json")).json()
    assert {"/backward", "/healthz"} <= set(spec["paths"])
    post, get = spec["paths"]["/backward"]["post"], spec["paths"]["/backward"]["get"]
    assert post["requestBody"]["content"]["application/json"]["examples"]["chapter 2"]["value"] == {
        "expression": CHAPTER_2
    }
    expression = next(p for p in get["parameters"] if p["name"] == "expression")
    assert expression["schema"]["examples"] == [CHAPTER_2]
    for operation in (post, get):
        assert operation["responses"]["200"]["content"]["application/json"]["example"] == CHAPTER_2_RESPONSE
        assert {"200", "400", "413", "422", "503"} <= set(operation["responses"])
    node_schema = spec["components"]["schemas"]["Node"]
    assert set(node_schema["required"]) == {
        "id",
        "label",
        "op",
        "data",
        "grad",
        "children",
        "local_grads",
        "span",
        "expr",
        "scope",
    }
    assert {"runs", "run", "printed"} <= set(spec["components"]["schemas"]["BackwardResponse"]["required"])
    assert {"seed", "run"} <= set(spec["components"]["schemas"]["BackwardRequest"]["properties"])
    assert {"exponent", "numeric_grad"} <= set(node_schema["properties"])
    assert {"type": "string", "enum": ["NaN", "Infinity", "-Infinity"]} in node_schema["properties"]["data"]["anyOf"]
    variant = spec["components"]["schemas"]["BackwardRequest"]["properties"]["variant"]
    assert set(variant["enum"]) == set(VARIANTS)


async def test_docs_page_is_served(client):
    response = await client.get("/docs")
    assert response.status_code == 200
    assert "swagger" in response.text.lower()


async def test_the_favicon_is_the_one_in_static(client):
    response = await client.get("/favicon.ico")  # asked by every browser at every page load: no 404 in the console
    assert response.status_code == 200 and response.headers["content-type"] == "image/x-icon"
    assert response.content == (Path(__file__).parent.parent / "static" / "favicon.ico").read_bytes()


# Settings


def test_settings_defaults_are_the_engines_limits():
    assert Settings().limits == Limits()
    assert Settings().time_budget == 2.0


def test_settings_read_the_environment():
    settings = Settings.from_environ(
        {
            "VALUEGRAPH_MAX_BODY_BYTES": "2048",
            "VALUEGRAPH_MAX_SOURCE_LENGTH": "500",
            "VALUEGRAPH_MAX_DEPTH": "20",
            "VALUEGRAPH_MAX_NODES": "1_000",
            "VALUEGRAPH_MAX_CHECK_EVALUATIONS": "99",
            "VALUEGRAPH_MAX_VARIANT_STEPS": "77",
            "VALUEGRAPH_TIME_BUDGET": "0.5",
            "VALUEGRAPH_WORKER_THREADS": "2",
            "UNRELATED": "x",
        }
    )
    assert settings == Settings(
        max_body_bytes=2048,
        max_source_length=500,
        max_depth=20,
        max_nodes=1000,
        max_check_evaluations=99,
        max_variant_steps=77,
        time_budget=0.5,
        worker_threads=2,
    )
    assert settings.limits == Limits(
        max_source_length=500, max_depth=20, max_nodes=1000, max_check_evaluations=99, max_variant_steps=77
    )


@pytest.mark.parametrize(
    "variable, value, message",
    [
        ("VALUEGRAPH_MAX_NODES", "many", "VALUEGRAPH_MAX_NODES must be a positive whole number, not 'many'"),
        ("VALUEGRAPH_MAX_NODES", "1.5", "VALUEGRAPH_MAX_NODES must be a positive whole number, not '1.5'"),
        ("VALUEGRAPH_TIME_BUDGET", "soon", "VALUEGRAPH_TIME_BUDGET must be a positive number of seconds, not 'soon'"),
        ("VALUEGRAPH_TIME_BUDGET", "0", "setting time_budget must be a positive number of seconds, not 0.0"),
        ("VALUEGRAPH_TIME_BUDGET", "inf", "setting time_budget must be a positive number of seconds, not inf"),
        ("VALUEGRAPH_MAX_DEPTH", "-3", "setting max_depth must be a positive whole number, not -3"),
    ],
)
def test_bad_settings_name_the_variable(variable, value, message):
    with pytest.raises(ValueError) as error:
        Settings.from_environ({variable: value})
    assert str(error.value) == message


async def test_create_app_reads_the_environment_by_default(monkeypatch):
    monkeypatch.setenv("VALUEGRAPH_MAX_NODES", "3")
    app = create_app()
    assert app.state.settings.max_nodes == 3
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as limited:
        response = await limited.post("/backward", json={"expression": CHAPTER_2})
    assert response.status_code == 400


def test_each_app_has_its_own_settings():
    first, second = create_app(Settings(max_nodes=5)), create_app(Settings(max_nodes=6))
    assert (first.state.settings.max_nodes, second.state.settings.max_nodes) == (5, 6)


# Health


async def test_healthz(client):
    response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_non_finite_strings_match_the_contract():
    assert schemas.NON_FINITE == ("NaN", "Infinity", "-Infinity")
    response = {
        "output": 0,
        "nodes": [
            {
                "id": 0,
                "label": None,
                "op": None,
                "data": math.nan,
                "grad": -math.inf,
                "children": [],
                "local_grads": [math.inf],
            }
        ],
        "order": [0],
        "warnings": [],
        "variant": "correct",
    }
    assert b'"data":"NaN","grad":"-Infinity","children":[],"local_grads":["Infinity"]' in to_json(response)


WRITTEN_IN_CHUNKS = {
    "chapter 2, with the nudge test": (CHAPTER_2, dict(check=True)),
    "non-finite values": ("a = 0; b = log(a); c = b * a; d = c ** 0.5", {}),
    "no trace, with layout": ("x = 2; y = x * x + x; z = y ** 2; L = z.tanh()", dict(trace=False, layout=True)),
    "Python with runs and printed lines": (
        "a = Value(2.0)\nfor k in range(3):\n    L = a * a + k\n    L.backward()\n    print(k, L.data)\n    a.data -= "
        "0.1 * a.grad",
        {},
    ),
}


@pytest.mark.parametrize("source, options", WRITTEN_IN_CHUNKS.values(), ids=WRITTEN_IN_CHUNKS)
def test_the_answer_written_a_chunk_at_a_time_is_the_built_answer_byte_for_byte(monkeypatch, source, options):
    """/backward writes its long lists a chunk of records at a time; rooms, embed and exports keep
    the built answer. Both must be the same JSON, including where a chunk ends inside a list."""
    from app import serialize
    from app.service import compute

    monkeypatch.setattr(serialize, "CHUNK", 2)
    made = compute(schemas.BackwardRequest(expression=source, **options), Limits())
    built = serialize.backward_response(*made)
    assert len(built["nodes"]) > 2 and ("trace" in built) == options.get("trace", True)
    assert serialize.backward_json(*made) == to_json(built)


def test_a_large_answer_never_holds_all_its_records_at_once():
    """A 12,000-node answer's records take several times its JSON; written a chunk at a time, the
    peak of Python's allocations while writing stays a fraction of building them all first."""
    import tracemalloc

    from app import serialize
    from app.service import compute

    made = compute(
        schemas.BackwardRequest(expression="x = 0.5\nL = " + " + ".join(f"x * {i % 9 + 1}" for i in range(4_000))),
        Limits(),
    )
    peaks = {}
    for name, write in (
        ("built", lambda: to_json(serialize.backward_response(*made))),
        ("chunks", lambda: serialize.backward_json(*made)),
    ):
        tracemalloc.start()
        answer = write()
        peaks[name] = tracemalloc.get_traced_memory()[1] - len(answer)
        tracemalloc.stop()
        del answer
    assert peaks["chunks"] < peaks["built"] / 4, peaks


def test_the_collector_still_runs_when_requests_keep_overlapping():
    """A request pauses the cyclic collector; if others overlap without a gap it would never run
    again, so every COLLECT_EVERY ended requests it collects anyway."""
    import gc

    from app import budget

    collections = []
    gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info["generation"]))
    try:
        with budget.collector_paused():  # a long request that keeps the collector paused
            for _ in range(budget.COLLECT_EVERY):
                with budget.collector_paused():
                    pass
            assert not gc.isenabled()
            assert 2 in collections
        assert gc.isenabled()
    finally:
        gc.callbacks.pop()


async def test_a_large_graph_is_freed_after_its_answer_is_sent_with_the_collector_paused_until_then(monkeypatch):
    """Freeing the graph and its trace is left until the answer's last byte is sent, and the
    collector stays paused until they are gone: a pass over them would cost more than freeing."""
    import gc

    from app import budget

    events = []
    free = budget.Leftovers.free

    def recording_free(self):
        if self._objects is not None:
            events.append(
                ("free", gc.isenabled(), {type(item).__name__ for item in self._objects} >= {"Trace", "ProgramRun"})
            )
        free(self)

    monkeypatch.setattr(budget.Leftovers, "free", recording_free)
    app = create_app(Settings(response_cache_bytes=0))

    async def watched(scope, receive, send):
        async def send_watched(message):
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                events.append(("last byte", gc.isenabled()))
            await send(message)

        await app(scope, receive, send_watched)

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=watched), base_url="http://test") as client:
        response = await client.post("/backward", json={"expression": CHAPTER_2})
    assert response.status_code == 200 and response.json()["nodes"][3]["grad"] == 1.0
    assert events == [("last byte", False), ("free", False, True)], (
        "sent first, then freed, the collector paused throughout"
    )
    assert gc.isenabled()


@contextmanager
def uvicorn_in_thread(app):
    """The app on a real uvicorn in this process (so a test can read its state), on a free port: the port."""
    import threading

    import uvicorn

    from tests.realservers import free_port

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)


def _post_request(body: bytes) -> bytes:
    return (
        b"POST /backward HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        % len(body)
        + body
    )


def test_clients_that_leave_before_their_answer_leave_the_collector_running():
    """Through a real uvicorn (in a thread, so the pause count can be read): a client that closes
    its connection right after its request, and one that closes after the first bytes of the answer,
    leave neither the collector paused nor their graphs alive (uvicorn still runs the background task)."""
    import gc
    import socket

    from app import budget

    # A long budget: the first client's work still runs when the second asks (uvicorn does not stop
    # it), and this machine may be slow; a 503 is not what is tested here.
    app = create_app(Settings(response_cache_bytes=0, time_budget=60))
    program = "x = 0.5\nL = " + " + ".join(f"tanh(x * {i})" for i in range(2_000))  # 6,000 nodes
    request = _post_request(json.dumps({"expression": program}).encode())
    with uvicorn_in_thread(app) as port:
        with socket.create_connection(("127.0.0.1", port)) as connection:
            connection.sendall(request)  # and leaves at once
        with socket.create_connection(("127.0.0.1", port)) as connection:
            connection.sendall(request)
            head = connection.recv(100)  # the answer has begun: both requests' graphs were built
            assert head.startswith(b"HTTP/1.1 200"), head
        deadline = time.monotonic() + 20
        while budget._paused_calls and time.monotonic() < deadline:
            time.sleep(0.05)
        assert budget._paused_calls == 0 and gc.isenabled(), "the collector stays paused after clients left"


def test_a_large_answer_is_sent_before_its_graph_is_freed(monkeypatch):
    """Freeing a large graph holds the interpreter lock, which the event loop needs to hand each piece of
    the answer to the socket: through a real uvicorn, a client that has read only the answer's start holds
    the graph alive; once it has read the whole answer, the graph is freed."""
    import socket

    from app import budget

    freed = []
    free = budget.Leftovers.free

    def recording_free(self):
        if self._objects is not None:
            freed.append(time.monotonic())
        free(self)

    monkeypatch.setattr(budget.Leftovers, "free", recording_free)
    app = create_app(Settings(response_cache_bytes=0, time_budget=60))
    program = "x = 0.5\nL = " + " + ".join(f"tanh(x * {i})" for i in range(4_000))  # 12,000 nodes, 6.6 MB of JSON
    request = _post_request(json.dumps({"expression": program}).encode())
    with uvicorn_in_thread(app) as port:
        with socket.socket() as connection:
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: a small window
            connection.connect(("127.0.0.1", port))
            connection.sendall(request)
            head = b""
            while b"\r\n\r\n" not in head:
                head += connection.recv(1024)
            assert head.startswith(b"HTTP/1.1 200"), head
            time.sleep(1.0)  # the server has written what the socket takes; megabytes wait in it
            assert freed == [], "the graph was freed while its answer still waited to be sent"
            headers, start = head.split(b"\r\n\r\n", 1)
            lines = headers.lower().split(b"\r\n")
            length = next(int(line[15:]) for line in lines if line.startswith(b"content-length:"))
            assert length > 5_000_000, length  # more than the sockets hold
            received = len(start)
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)  # read the rest at speed
            while received < length:
                received += len(connection.recv(1 << 20))
            deadline = time.monotonic() + 20
            while not freed and time.monotonic() < deadline:
                time.sleep(0.02)
            assert freed, "the graph was not freed once its answer was sent"


def test_leftovers_never_freed_by_a_task_resume_the_collector_when_dropped():
    import gc

    from app import budget

    leftovers = budget.Leftovers([object()])
    assert not gc.isenabled()
    del leftovers  # the client left before the answer was sent: no background task ran
    assert gc.isenabled()
    freed = budget.Leftovers([object()])
    freed.free()
    freed.free()  # once only: a second call (or the holder's end) does not resume twice
    del freed
    assert gc.isenabled() and budget._paused_calls == 0


def test_response_cache_is_an_lru_bounded_in_bytes_keys_included():
    from app.cache import ResponseCache

    cache = ResponseCache(max_bytes=800)
    for key in b"abcdefgh":
        cache.put(bytes([key]), b"x" * 99)
    assert len(cache) == 8 and cache.size == 800
    assert cache.get(b"a") == b"x" * 99  # now the most recent
    cache.put(b"i", b"y" * 99)
    assert cache.get(b"b") is None and cache.get(b"a") is not None, "the least recently used goes first"
    cache.put(b"huge", b"z" * 97)  # with its key, more than an eighth of the cache
    assert cache.get(b"huge") is None and cache.size <= 800


async def test_a_long_programs_cache_entry_costs_its_answer_not_its_program():
    """Each entry is keyed by the request's digest: 30 programs of 90,000 characters each keep 30 keys
    of 32 bytes (the requests themselves, 2.7 MB, were kept before and not counted)."""
    app = create_app(Settings(response_cache_bytes=1_000_000))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        for i in range(30):
            program = f"a = {i}\n# {'x' * 90_000}\nL = a * 2"
            assert (await client.post("/backward", json={"expression": program})).status_code == 200
    cache = app.state.response_cache
    assert len(cache) == 30 and all(len(key) == 32 for key in cache._entries)
    assert cache.size == sum(len(key) + len(body) for key, body in cache._entries.items()) < 200_000


async def test_repeated_requests_are_answered_from_the_cache():
    app = create_app(Settings(response_cache_bytes=1_000_000))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        body = {"expression": "a = 2; b = 3; c = a * b; L = c + a"}
        first = await client.post("/backward", json=body)
        second = await client.post("/backward", json=body)
        other = await client.post("/backward", json={**body, "variant": "assign"})
        by_get = await client.get("/backward", params={"expression": body["expression"]})
    assert first.content == second.content == by_get.content
    assert len(app.state.response_cache) == 2, "one entry per distinct request; GET and POST share it"
    assert other.json()["nodes"][0]["grad"] == 3.0


async def test_a_cache_of_zero_bytes_keeps_nothing():
    app = create_app(Settings.from_environ({"VALUEGRAPH_RESPONSE_CACHE_BYTES": "0"}))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        body = {"expression": "a = 2; b = 3; c = a * b; L = c + a"}
        first = await client.post("/backward", json=body)
        second = await client.post("/backward", json=body)
    assert first.status_code == second.status_code == 200 and first.content == second.content
    assert len(app.state.response_cache) == 0
    with pytest.raises(ValueError, match="setting response_cache_bytes must be a whole number, 0 or more, not -1"):
        Settings.from_environ({"VALUEGRAPH_RESPONSE_CACHE_BYTES": "-1"})


async def test_healthz_answers_head_for_uptime_checkers(client):
    response = await client.head("/healthz")
    assert response.status_code == 200 and response.content == b""
