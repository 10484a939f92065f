"""Property tests over the HTTP API: whatever a client sends, the answer is a 200 or one of the
documented client errors (400 program error, 413 too large, 422 bad request, 503 over budget),
always strict JSON in its documented shape, never a 5xx crash.

One app and one event loop (in a background thread) serve every example; the number of
examples is bounded so the file runs in seconds.
"""

import functools
import json
import urllib.parse

import anyio.from_thread
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from app import schemas
from app.config import Settings
from app.main import create_app
from engine import VARIANTS

DOCUMENTED = {200, 400, 413, 422, 503}
BOUNDED = settings(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
RESPONSE = TypeAdapter(schemas.BackwardResponse)
ERROR_PLACE = {"message", "line", "column", "offset"}


@pytest.fixture(scope="module")
def send():
    """send(method, url, **httpx options) -> httpx.Response, from a fresh app with small limits
    (so the examples stay fast) and a body limit small enough for examples to reach it."""
    app = create_app(
        Settings(max_body_bytes=20_000, max_nodes=2_000, max_check_evaluations=200_000, max_variant_steps=20_000)
    )
    with anyio.from_thread.start_blocking_portal() as portal:
        client = portal.call(
            functools.partial(httpx.AsyncClient, transport=httpx.ASGITransport(app=app), base_url="http://testserver")
        )

        def request(method, url, **options):
            return portal.call(functools.partial(client.request, method, url, **options))

        yield request
        portal.call(client.aclose)


def strict_json(response):
    def reject(literal):
        raise AssertionError(f"bare {literal} in the response")

    return json.loads(response.content, parse_constant=reject)


def check_answer(response, expression=None):
    """The properties every answer has; `expression` is the program sent, when it was a string."""
    assert response.status_code in DOCUMENTED, response.text[:500]
    assert response.headers["content-type"] == "application/json"
    body = strict_json(response)
    if response.status_code == 200:
        check_graph(body)
    elif response.status_code == 400:
        detail = body["detail"]
        assert set(detail) == ERROR_PLACE and detail["message"]
        if isinstance(expression, str):
            offset = detail["offset"]
            assert 0 <= offset <= len(expression)
            line = expression.count("\n", 0, offset) + 1
            column = offset - (expression.rfind("\n", 0, offset) + 1) + 1
            assert (detail["line"], detail["column"]) == (line, column)
    elif response.status_code == 422:
        errors = body["detail"]
        assert errors and all(error["msg"] and isinstance(error["loc"], list) for error in errors)
    else:  # 413, 503
        assert set(body["detail"]) == {"message"} and body["detail"]["message"]
    return body


def check_graph(body):
    RESPONSE.validate_python(body)
    nodes = body["nodes"]
    assert body["output"] == len(nodes) - 1
    assert [node["id"] for node in nodes] == list(range(len(nodes)))
    for node in nodes:
        assert len(node["children"]) == len(node["local_grads"]) <= 2
        assert all(child < node["id"] for child in node["children"])
    if body["variant"] == "correct":
        assert sorted(body["order"]) == list(range(len(nodes)))
        assert nodes[body["output"]]["grad"] == 1.0


# Strategies

JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
PIECES = [
    "a",
    "b",
    "x",
    "w",
    "1",
    "2.5",
    "1e308",
    "0",
    " ",
    "=",
    "+",
    "-",
    "*",
    "/",
    "**",
    "(",
    ")",
    ",",
    ";",
    "\n",
    "\r\n",
    "#",
    ".",
    "log",
    "exp",
    "tanh",
    "relu",
    ".log()",
    "é",
    "\u200f",
    "\x00",
    "'",
]
PROGRAMS = st.lists(st.sampled_from(PIECES), max_size=40).map("".join) | st.text(max_size=60)
NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,5}", fullmatch=True) | st.text(max_size=6)
REQUESTS = st.fixed_dictionaries(
    {},
    optional={
        "expression": PROGRAMS | JSON_VALUES,
        "variables": st.dictionaries(NAMES, st.floats() | st.integers() | JSON_VALUES, max_size=4) | JSON_VALUES,
        "trace": st.booleans() | JSON_VALUES,
        "check": st.booleans() | JSON_VALUES,
        "nudge": st.floats() | JSON_VALUES,
        "layout": st.booleans() | JSON_VALUES,
        "variant": st.sampled_from(VARIANTS) | st.text(max_size=10),
        "extra": JSON_VALUES,
    },
)


@settings(BOUNDED, max_examples=100)
@given(body=JSON_VALUES)
def test_any_json_body(send, body):
    # Python's json writes NaN and Infinity as bare literals, which the server's parser accepts.
    check_answer(send("POST", "/backward", content=json.dumps(body), headers={"content-type": "application/json"}))


@settings(BOUNDED, max_examples=250)
@given(body=REQUESTS)
def test_any_request_shaped_body(send, body):
    response = send("POST", "/backward", content=json.dumps(body), headers={"content-type": "application/json"})
    check_answer(response, body.get("expression"))


@settings(BOUNDED, max_examples=250)
@given(
    program=PROGRAMS,
    variables=st.dictionaries(st.sampled_from(["a", "b", "x", "w"]), st.floats(-1e6, 1e6), max_size=4),
    options=st.fixed_dictionaries(
        {"check": st.booleans(), "layout": st.booleans(), "variant": st.sampled_from(VARIANTS)}
    ),
)
def test_any_program_with_valid_options(send, program, variables, options):
    response = send("POST", "/backward", json={"expression": program, "variables": variables, **options})
    # "" is refused by the schema (minLength 1): 422, as the schema says; any other program 200 or 400
    assert response.status_code in ((422,) if program == "" else (200, 400)), response.text[:300]
    check_answer(response, program)


@settings(BOUNDED, max_examples=150)
@given(
    query=st.dictionaries(
        st.sampled_from(["expression", "trace", "check", "nudge", "layout", "variant", "variables"])
        | st.text(max_size=5),
        st.text(max_size=30) | PROGRAMS,
        max_size=5,
    )
)
def test_any_query_string(send, query):
    encodable = {key: value for key, value in query.items() if not any("\ud800" <= c <= "\udfff" for c in key + value)}
    response = send("GET", "/backward", params=encodable)
    check_answer(response, encodable.get("expression"))


@settings(BOUNDED, max_examples=100)
@given(raw=st.binary(max_size=200))
def test_any_bytes_as_the_query_string(send, raw):
    response = send("GET", "/backward?expression=" + urllib.parse.quote_from_bytes(raw))
    assert response.status_code in ((422,) if raw == b"" else (200, 400))
    check_answer(response)


@settings(BOUNDED, max_examples=100)
@given(
    raw=st.binary(max_size=300),
    content_type=st.sampled_from(["application/json", "text/plain", None, "application/x-www-form-urlencoded"]),
)
def test_any_bytes_as_the_body(send, raw, content_type):
    headers = {"content-type": content_type} if content_type else {}
    check_answer(send("POST", "/backward", content=raw, headers=headers))


@settings(BOUNDED, max_examples=10)
@given(size=st.integers(20_001, 60_000))
def test_any_body_over_the_limit_is_413(send, size):
    response = send("POST", "/backward", content=b" " * size, headers={"content-type": "application/json"})
    assert response.status_code == 413
    check_answer(response)
