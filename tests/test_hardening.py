"""Hostile input, resource limits and security headers, through the real ASGI app (and, for the
event loop, a real uvicorn server on 127.0.0.1).

Every hostile request must get a 4xx with a message that says what is wrong (and where, for
program errors), or a 200 when it is in fact a valid program; it must be answered within the
time budget; and the server must keep serving afterwards.
"""

import hashlib
import json
import random
import re
import time
from pathlib import Path

import anyio
import httpx
import pytest
from fastapi import Request
from fastapi.responses import HTMLResponse
from realservers import app_server

from app.config import Settings
from app.main import STATIC_DIR, create_app
from app.security import CACHE_FOREVER, REVALIDATE, StaticVersions

pytestmark = pytest.mark.anyio

BUDGET = Settings().time_budget
JSON = {"content-type": "application/json"}
# What must never reach a client: Python's own words about its internals.
INTERNALS = re.compile(r"Traceback|File \"|Error\(|<module>|object at 0x")


@pytest.fixture
async def client(make_client):
    """The app with default settings; after each test it must still answer /healthz."""
    client = make_client()
    yield client
    health = await client.get("/healthz")
    assert health.status_code == 200 and health.json() == {"status": "ok"}


async def timed(request):
    started = time.perf_counter()
    response = await request
    elapsed = time.perf_counter() - started
    assert elapsed < BUDGET + 1, f"answered in {elapsed:.2f} s, past the {BUDGET} s budget"
    assert not INTERNALS.search(response.text[:10_000]), response.text[:500]
    return response


def place(source, offset):
    """(line, column) of a 0-based offset, both 1-based, counting '\\n' only (so CRLF works)."""
    return source.count("\n", 0, offset) + 1, offset - (source.rfind("\n", 0, offset) + 1) + 1


# Programs that are not programs: 400 with the message and the place of the culprit


def culprit(source, text):
    return source.index(text)


HOSTILE_PROGRAMS = [
    # (id, program, offset of the culprit, words the message must contain)
    ("100,000 open parentheses", "(" * 100_000, 200, "nests deeper than 200 levels"),
    ("nesting longer than the source limit", "(" * 100_000 + "1" + ")" * 100_000, 100_000, "the limit is 100,000"),
    ("a+a+... 100,000 times", "a = 1\n" + "+".join(["a"] * 100_000), 100_000, "characters long; the limit is 100,000"),
    ("Cyrillic a", "а = 1", 0, "U+0430 CYRILLIC SMALL LETTER A"),
    ("Greek omicron on line 2", "a = 1\nο = 2", 6, "U+03BF GREEK SMALL LETTER OMICRON"),
    ("fullwidth plus", "a = 1; b = a ＋ 1", 13, "U+FF0B FULLWIDTH PLUS SIGN"),
    ("fullwidth log", "ｌｏｇ(2)", 0, "names use only the ASCII letters"),
    ("right-to-left mark", "a = 1\u200f + 2", 5, "U+200F RIGHT-TO-LEFT MARK"),
    ("right-to-left override", "a = 1 \u202e+ 2", 6, "U+202E RIGHT-TO-LEFT OVERRIDE"),
    ("zero-width space in a name", "ab\u200bc = 1", 2, "U+200B ZERO WIDTH SPACE"),
    ("NUL byte", "a = 1\x00", 5, "U+0000"),
    ("lone surrogate", "a = 1 + \ud800", 8, "U+D800"),
    ("CRLF, error on line 3", "a = 2\r\nb = 3\r\nc = a $ b", 20, "'$'"),
    ("very long unknown name", "q" * 99_000, 0, "unknown name 'qqq"),
    # Python, which is never run: each fails on the first thing that is not the language
    ("__import__", "__import__('os')", 11, "U+0027 APOSTROPHE"),
    ("class walk", "().__class__.__bases__[0].__subclasses__()", 22, "'['"),
    ("empty tuple", "x = ()", 5, "expected a number, a name or '('"),
    ("f-string", "f'{1}'", 1, "U+0027 APOSTROPHE"),
    ("lambda", "lambda: 1", 6, "':'"),
    ("exec", 'exec("import os")', 5, "U+0022 QUOTATION MARK"),
    ("eval called as a function", "eval(1)", 0, "unknown function 'eval'"),
    ("globals", "globals()", 0, "unknown function 'globals'"),
    (
        "import statement",
        "import sys",
        0,
        "`import sys` is not available: valuegraph offers math, random and os.path.exists",
    ),
    ("dunder method", "x = 1; x.__class__()", 9, "unknown function '__class__'"),
    ("builtins", "__builtins__", 0, "unknown name '__builtins__'"),
    ("open a file", "open('/tmp/valuegraph-was-here', 'w')", 5, "U+0027 APOSTROPHE"),
    ("attribute chain", "a = 1; a.b.c", 9, "a method takes no arguments"),
    ("subscript", "a = 1; a[0]", 8, "'['"),
    ("comment hiding markup, then an error", "# <script>alert(1)</script>\nb = <img src=x>", 32, "'<'"),
]


@pytest.mark.parametrize(
    "program, offset, words", [case[1:] for case in HOSTILE_PROGRAMS], ids=[case[0] for case in HOSTILE_PROGRAMS]
)
async def test_hostile_programs_are_400_with_the_place(client, program, offset, words):
    requests = [client.post("/backward", content=json.dumps({"expression": program}), headers=JSON)]
    # The GET form too, for what a link can carry: UTF-8 (no lone surrogates), a few KB at most.
    if len(program) < 2_000 and not any("\ud800" <= ch <= "\udfff" for ch in program):
        requests.append(client.get("/backward", params={"expression": program}))
    for request in requests:
        response = await timed(request)
        assert response.status_code == 400
        detail = response.json()["detail"]
        assert words in detail["message"]
        assert detail["offset"] == offset
        assert (detail["line"], detail["column"]) == place(program, offset)
    assert not Path("/tmp/valuegraph-was-here").exists()


def test_the_culprits_are_where_the_table_says():
    """The table's offsets are the characters the messages name (a check on the table itself)."""
    by_id = {case[0]: case for case in HOSTILE_PROGRAMS}
    assert by_id["CRLF, error on line 3"][2] == culprit(by_id["CRLF, error on line 3"][1], "$")
    assert by_id["lone surrogate"][2] == culprit(by_id["lone surrogate"][1], "\ud800")
    assert by_id["right-to-left override"][2] == culprit(by_id["right-to-left override"][1], "\u202e")
    assert by_id["__import__"][2] == culprit(by_id["__import__"][1], "'")


async def test_error_bodies_echoing_a_lone_surrogate_are_valid_json(client):
    response = await timed(client.post("/backward", content=b'{"expression": "a = \\udfff"}', headers=JSON))
    assert response.status_code == 400
    assert json.loads(response.content)["detail"]["message"].startswith("unexpected character (U+DFFF")


@pytest.mark.parametrize(
    "query, offset, words",
    [
        (b"expression=a%3D1%00", 3, "U+0000"),  # a=1 then NUL
        (b"expression=%FF%FE", 0, "U+FFFD REPLACEMENT CHARACTER"),  # not UTF-8: decoded with replacement
        (b"expression=%ED%A0%80", 0, "U+FFFD"),  # a UTF-8-encoded surrogate
        (b"expression=a%0D%0Ab%0D%0A%24", 6, "'$'"),  # CRLF in a link
    ],
)
async def test_hostile_query_strings_are_400(client, query, offset, words):
    response = await timed(client.get("/backward?" + query.decode()))
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert words in detail["message"] and detail["offset"] == offset


# Valid programs, however odd: 200


def by_label(body, label):
    (node,) = [n for n in body["nodes"] if n["label"] == label]
    return node


async def test_crlf_program_is_chapter_2(client):
    crlf = (
        await timed(client.post("/backward", json={"expression": "a = 2\r\nb = 3\r\nc = a * b\r\nL = c + a\r\n"}))
    ).json()
    plain = (await client.post("/backward", json={"expression": "a = 2\nb = 3\nc = a * b\nL = c + a\n"})).json()
    assert crlf == plain
    assert by_label(crlf, "a")["grad"] == 4.0


@pytest.mark.parametrize(
    "program, data, warning",
    [
        ("1e308*10", "Infinity", "Infinity"),
        ("x = 1e308; y = x * 10", "Infinity", "1e+308 * 10 is Infinity"),
        ("1e-400", 0.0, None),
        ("10**10**10", "Infinity", "Infinity"),
        ("x = 10; y = x ** 10 ** 10", "Infinity", "Infinity"),
        ("x = 1e-320; y = x / 1e300", 0.0, None),
    ],
)
async def test_huge_and_tiny_numbers_are_200(client, program, data, warning):
    response = await timed(client.post("/backward", json={"expression": program, "check": True}))
    assert response.status_code == 200
    body = json.loads(response.content, parse_constant=lambda literal: pytest.fail(f"bare {literal}"))
    assert body["nodes"][body["output"]]["data"] == data
    messages = [w["message"] for w in body["warnings"]]
    assert any(warning in m for m in messages) if warning else messages == []


async def test_very_long_name_is_kept_whole(client):
    name = "n" * 49_000
    response = await timed(client.post("/backward", json={"expression": f"{name} = 2; {name} * 3"}))
    assert response.status_code == 200
    assert response.json()["nodes"][0]["label"] == name


async def test_markup_in_a_comment_is_ignored_and_never_echoed(client):
    response = await timed(
        client.post("/backward", json={"expression": "a = 1 # <img src=x onerror=alert(1)>\nb = a * 2"})
    )
    assert response.status_code == 200
    assert "<img" not in response.text and by_label(response.json(), "a")["grad"] == 2.0


# Bodies that are not requests: 413 and 422, with a message that says why


def nested(depth, opening=b"[", closing=b"]"):
    return opening * depth + closing * depth


@pytest.mark.parametrize(
    "content",
    [
        nested(10_000),
        b'{"a":' * 10_000 + b"1" + b"}" * 10_000,
        b'{"expression": "a", "variables": ' + nested(10_000, b'{"x":', b"}") + b"}",
    ],
    ids=["arrays", "objects", "inside variables"],
)
async def test_json_nested_10000_deep_is_422(client, content):
    response = await timed(client.post("/backward", content=content, headers=JSON))
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["type"] == "json_invalid" and error["loc"] == ["body"]
    assert error["msg"] == "JSON decode error: the body nests arrays or objects too deeply"


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400", "-1e999"])
async def test_non_finite_variables_are_422_saying_finite(client, literal):
    content = '{"expression": "x * 2", "variables": {"x": %s}}' % literal
    response = await timed(client.post("/backward", content=content, headers=JSON))
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "variables", "x"] and error["msg"] == "Input should be a finite number"


@pytest.mark.parametrize("seed", range(8))
async def test_random_bytes_are_422(client, seed):
    noise = random.Random(seed).randbytes(2_000)
    response = await timed(client.post("/backward", content=noise, headers=JSON))
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["type"] == "json_invalid" and error["msg"].startswith("JSON decode error")


@pytest.mark.parametrize(
    "content, message",
    [
        (
            b'{"expression": "a", "variables": {"a": ' + b"9" * 5_000 + b"}}",
            "JSON decode error: a number in the body has too many digits",
        ),
        (b'{"expression": "\xff"}', "JSON decode error: the body is not UTF-8 text"),
        (b'{"expression": "a = 1"', "JSON decode error"),
        (b"", "Field required"),
    ],
    ids=["5000-digit number", "not UTF-8", "cut short", "empty"],
)
async def test_unreadable_bodies_are_422_saying_why(client, content, message):
    response = await timed(client.post("/backward", content=content, headers=JSON))
    assert response.status_code == 422
    assert response.json()["detail"][0]["msg"] == message


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
async def test_a_body_that_is_not_json_nor_utf8_is_422(client, content_type):
    """FastAPI echoes such a body in the 422 as bytes; not UTF-8, that was a 500."""
    headers = {"content-type": content_type} if content_type else {}
    response = await timed(client.post("/backward", content=b"\x80\xff{", headers=headers))
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["msg"] == "Input should be a valid dictionary or object to extract fields from"
    assert error["input"] == "\ufffd\ufffd{"


LIMIT_MESSAGE = (
    "the request body is larger than the limit of 1,000,000 bytes (VALUEGRAPH_MAX_BODY_BYTES); a body with a "
    "`graph` may have up to 20,000,000 (VALUEGRAPH_MAX_GRAPH_BODY_BYTES)"
)


async def test_ten_megabyte_body_is_413(client):
    response = await timed(client.post("/backward", content=b"(" * 10_000_000, headers=JSON))
    assert response.status_code == 413
    assert response.json() == {"detail": {"message": LIMIT_MESSAGE}}
    assert response.headers["x-content-type-options"] == "nosniff"


async def test_a_graph_body_past_what_the_time_budget_can_answer_is_413_unparsed(client):
    """The framework parses a body on the event loop: a graph past the default limit (some 125,000 nodes) could not
    be answered within the 2 s budget and would hold every other request while it was parsed."""
    body = b'{"graph": {"nodes": [' + b" " * 21_000_000 + b"]}}"
    response = await timed(client.post("/backward", content=body, headers=JSON))
    assert response.status_code == 413
    assert response.json() == {"detail": {"message": LIMIT_MESSAGE}}  # refused unread: the length names both limits


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS"])
async def test_other_methods_are_405_naming_the_allowed_ones(client, method):
    response = await timed(client.request(method, "/backward"))
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, POST"


# The biggest request the limits allow: answered within the budget, the server still serving


async def test_the_biggest_allowed_program_is_answered_within_the_budget(client):
    program = "a = 1\n" + "+".join(["a"] * 49_995)  # 99,995 characters, 49,996 nodes
    response = await timed(client.post("/backward", json={"expression": program, "check": True, "layout": True}))
    assert response.status_code in (200, 503)
    if response.status_code == 200:
        assert by_label(response.json(), "a")["grad"] == 49_995.0
    else:
        assert "time budget" in response.json()["detail"]["message"]


async def test_a_line_of_thousands_of_parenthesised_terms_is_answered(make_client):
    """Each partial sum of a long line is a node whose code spans the line so far: widening every such
    span over its parentheses by walking its characters took 7 s for 4,000 terms (past the budget at
    6,000), where the graph itself takes a tenth of a second."""
    client = make_client(time_budget=10)
    program = "x = 0.5\nL = " + "+".join(f"tanh(x*{i % 10})" for i in range(8_000))  # 87,000 characters
    response = await client.post("/backward", json={"expression": program, "trace": False})
    assert response.status_code == 200, response.text[:300]
    last = response.json()["nodes"][-1]
    assert last["span"] == {"line": 2, "column": 5, "end_line": 2, "end_column": len(program) - 8 + 1}
    assert last["expr"] == "tanh(x*0)+tanh(x*1)+tanh(x*2)+tanh(x*3)…"


# Response size: bounded by the limits


def max_response_bytes(settings: Settings, max_bends: int = 250_000) -> int:
    """An upper bound on the bytes of a 200 response (every option on), from the limits alone.

    Each record is written at its widest: ids of max_nodes - 1, floats of 24 characters (the
    longest repr, as -1.2345678901234567e-308), every optional key present. A node has at most
    2 children; labels are names written in the program, so all labels together (and their
    echoes in warnings) are at most max_source_length characters each. The correct walk pops
    each node once per child plus once (3 N); the broken walks are cut off at max_variant_steps.
    A warning's text is at most 200 characters besides a label. The layout keeps at most
    max_bends bends (app/layout.py)."""
    n, steps = settings.max_nodes, settings.max_variant_steps
    i, f = n - 1, -1.2345678901234567e-308

    def size(record):
        return len(json.dumps(record, separators=(",", ":"))) + 1  # + the comma between records

    node = {
        "id": i,
        "label": None,
        "op": "tanh",
        "data": f,
        "grad": f,
        "children": [i, i],
        "local_grads": [f, f],
        "exponent": f,
        "numeric_grad": f,
    }
    sort_step = {"node": i, "index": 2, "action": "descend", "child": i}
    update = {"child": i, "local_grad": f, "delta": f, "grad": f}
    propagate_step = {"node": i, "grad": f, "updates": []}
    warning = {"node": i, "message": "m" * 200}
    pops = max(3 * n, steps)
    layout = (
        n * size({"id": i, "rank": i, "row": f})
        + 2 * n * size({"parent": i, "slot": 1, "child": i, "bends": []})
        + max_bends * size([i, f])
    )
    return (
        n * size(node)
        + settings.max_source_length  # labels
        + max(n, steps) * len(f"{i},")  # order
        + pops * size(sort_step)
        + max(n, steps) * size(propagate_step)
        + pops * size(update)
        + (n + pops) * size(warning)
        + settings.max_source_length  # labels echoed in warnings
        + layout
        + 1_000  # keys and brackets of the top level
    )


def test_response_bound_at_the_default_limits():
    """The figure in docs/operating.md: about 500 MB uncompressed at the defaults (gzip makes it 5-20 times smaller)."""
    assert 400_000_000 < max_response_bytes(Settings()) < 550_000_000


WIDE_FLOATS = "x = 0.12345678901234567; y = -1.2345678901234567e-300\n"


@pytest.mark.parametrize(
    "program, options",
    [
        (WIDE_FLOATS + " + ".join(["tanh(x * y) * x"] * 80), {"check": True, "layout": True}),
        (
            WIDE_FLOATS
            + "".join(f"{'v' * 30}{i} = log(x * {i}) ** 3\n" for i in range(50))
            + " + ".join(f"{'v' * 30}{i}" for i in range(50)),
            {"check": True, "layout": True},
        ),
        (
            "a = 1\n" + "\n".join(f"b{i + 1} = b{i} * b{i}" if i else "b1 = a + a" for i in range(9)),
            {"variant": "no-visited-check"},
        ),
        (
            "a = 1\n" + "\n".join(f"b{i + 1} = b{i} * b{i}" if i else "b1 = a + a" for i in range(9)),
            {"variant": "no-topological-order"},
        ),
        ("x = 0\n" + " + ".join(["log(x) * exp(1000 * x + 800)"] * 70), {"check": True}),
    ],
    ids=["wide floats", "long labels", "no-visited-check", "no-topological-order", "non-finite everywhere"],
)
async def test_responses_stay_within_the_bound(make_client, program, options):
    limits = {"max_nodes": 600, "max_source_length": 5_000, "max_variant_steps": 3_000, "max_check_evaluations": 10**7}
    client = make_client(**limits)
    response = await client.post(
        "/backward", json={"expression": program, **options}, headers={"accept-encoding": "identity"}
    )
    assert response.status_code == 200, response.text[:300]
    assert len(response.content) <= max_response_bytes(Settings(**limits))
    assert len(response.content) > 50_000, len(response.content)  # big enough to say something about the bound


# The event loop is never blocked: a real server, a heavy request, and small ones beside it


def heavy_program(terms):
    return "a = 2\n" + " + ".join(["a * 1.5"] * terms)


@pytest.fixture(scope="module")
def server_url():
    with app_server(time_budget=60, max_check_evaluations=10**8, worker_threads=2) as server:
        yield server.url


async def latency(client, method, path, **kwargs):
    started = time.perf_counter()
    response = await client.request(method, path, **kwargs)
    return response, time.perf_counter() - started


async def test_health_and_small_requests_answer_while_a_heavy_one_runs(server_url):
    heavy = {"expression": heavy_program(600), "check": True}  # 601 leaves x 1,800 nodes replayed: a second or more
    small = {"expression": "a = 2; b = 3; c = a * b; L = c + a"}
    heavy_status = []
    async with httpx.AsyncClient(base_url=server_url, timeout=120) as client:

        async def send_heavy():
            heavy_status.append((await client.post("/backward", json=heavy)).status_code)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(send_heavy)
            await anyio.sleep(0.3)
            timings = []
            for _ in range(5):
                health, health_time = await latency(client, "GET", "/healthz")
                answer, answer_time = await latency(client, "POST", "/backward", json=small)
                assert health.status_code == 200 and answer.status_code == 200
                assert by_label(answer.json(), "a")["grad"] == 4.0
                timings.append((health_time, answer_time))
            assert heavy_status == [], "the heavy request finished before the small ones: it proves nothing"
    assert heavy_status == [200]
    assert max(h for h, _ in timings) < 0.5, timings
    assert max(a for _, a in timings) < 1.0, timings


async def test_health_answers_while_every_worker_thread_is_busy(server_url):
    heavy = {"expression": heavy_program(450), "check": True}
    statuses = []
    async with httpx.AsyncClient(base_url=server_url, timeout=120) as client:

        async def send_heavy():
            statuses.append((await client.post("/backward", json=heavy)).status_code)

        async with anyio.create_task_group() as tasks:
            for _ in range(2):  # worker_threads=2: both busy
                tasks.start_soon(send_heavy)
            await anyio.sleep(0.3)
            times = [(await latency(client, "GET", "/healthz"))[1] for _ in range(5)]
            assert statuses == []
    assert statuses == [200, 200]
    assert max(times) < 0.5, times


# Headers: CSP, framing, nosniff, referrer policy


def directives(policy):
    return {part.split()[0]: part.split()[1:] for part in policy.split(";") if part.strip()}


@pytest.fixture
async def app_with_embed(make_client):
    """The app plus stand-in /embed routes (the real one comes with the embed feature)."""
    client = make_client()
    app = client._transport.app

    @app.get("/embed", response_class=HTMLResponse)
    @app.get("/embed/{rest:path}", response_class=HTMLResponse)
    def embed(rest: str = ""):
        return "<!doctype html><title>embed</title>"

    @app.get("/embedded", response_class=HTMLResponse)
    def not_an_embed():
        return "<!doctype html><title>not an embed</title>"

    return client


@pytest.mark.parametrize(
    "path", ["/", "/backward?expression=1", "/healthz", "/static/js/main.js", "/nowhere", "/embedded", "/openapi.json"]
)
async def test_every_answer_has_the_strict_policy_and_no_framing_by_others(app_with_embed, path):
    response = await app_with_embed.get(path)
    policy = directives(response.headers["content-security-policy"])
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    assert (
        policy["default-src"] == ["'self'"] and policy["object-src"] == ["'none'"] and policy["base-uri"] == ["'none'"]
    )
    assert policy["frame-ancestors"] == ["'self'"]
    assert response.headers["x-frame-options"] == "SAMEORIGIN"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "strict-origin-when-cross-origin"


@pytest.mark.parametrize("path", ["/embed", "/embed?expression=a%3D1", "/embed/lesson/2"])
async def test_embed_may_be_framed_by_any_site(app_with_embed, path):
    response = await app_with_embed.get(path)
    assert response.status_code == 200
    policy = directives(response.headers["content-security-policy"])
    assert policy["frame-ancestors"] == ["*"]
    assert policy["script-src"] == ["'self'"]
    assert "x-frame-options" not in response.headers
    assert response.headers["x-content-type-options"] == "nosniff"


async def test_docs_come_from_static_vendor_under_the_page_policy(client):
    """No CDN (a classroom without internet still gets its docs) and no inline script."""
    response = await client.get("/docs")
    assert response.status_code == 200
    policy = directives(response.headers["content-security-policy"])
    assert policy["script-src"] == ["'self'"] and policy["style-src"] == ["'self'"]
    assert not any("unsafe" in source for sources in policy.values() for source in sources)
    assert "http://" not in response.text and "https://" not in response.text
    sources = re.findall(r'(?:src|href)="([^"]+)"', response.text)
    for name in ("swagger-ui.v5.35.0.bundle.js", "swagger-ui.v5.35.0.css", "js/docs.js"):
        (url,) = [source for source in sources if name in source]
        assert (await client.get(url)).status_code == 200, url
    assert (STATIC_DIR / "vendor" / "swagger-ui.v5.35.0.LICENSE.txt").read_text().lstrip().startswith("Apache License")
    assert 'data-openapi-url="/openapi.json"' in response.text
    assert (await client.get("/redoc")).status_code == 404  # not vendored: no page that stays blank offline


async def test_head_of_the_page_answers_200(client):
    response = await client.head("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8443", "127.0.0.1:8000"])
async def test_redirects_never_name_the_requests_host(client, host):
    response = await client.get("/docs/", headers={"host": host})
    assert response.status_code in (301, 302, 307, 308)
    assert response.headers["location"] == "/docs"
    response = await client.get("/backward/?expression=a%3D1", headers={"host": host})
    assert response.headers["location"] == "/backward?expression=a%3D1"


# Pages the app may serve; those that answer are checked (the embed comes with its feature).
PAGES = [
    "/",
    "/docs",
    "/?expression=a%3D2%3B%20b%3Da*a",
    "/embed",
    "/embed?expression=a%3D2%3B%20b%3Da*a&controls=none",
]


async def test_served_pages_have_nothing_the_policy_would_block(client):
    """The policy would stop these anyway, breaking the page: none may be there. (Data blocks,
    <script type="application/json">, are not run, so the policy lets them be.)"""
    served = []
    for path in PAGES:
        response = await client.get(path)
        if response.status_code != 200 or not response.headers["content-type"].startswith("text/html"):
            continue
        served.append(path)
        html = response.text
        assert not re.search(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", html), (
            f"an inline script in {path}"
        )
        assert not re.search(r"\son[a-z]+\s*=", html), f"an inline event handler in {path}"
        assert not re.search(r"\sstyle\s*=", html) and "<style" not in html, f"inline style in {path}"
        assert "javascript:" not in html, path
    assert "/" in served and "/docs" in served


# Static files: versioned URLs cached for a year, the rest revalidated


async def test_static_url_carries_the_content_hash(client):
    app = client._transport.app
    template = app.state.templates.env.from_string("{{ static_url('js/main.js') }} {{ static_url('missing.js') }}")

    @app.get("/static-url-probe", response_class=HTMLResponse)
    def probe(request: Request):
        return template.render(request=request)

    versioned, missing = (await client.get("/static-url-probe")).text.split()
    digest = hashlib.sha256((STATIC_DIR / "js" / "main.js").read_bytes()).hexdigest()[:12]
    assert versioned == f"/static/js/main.js?v={digest}"
    assert missing == "/static/missing.js"
    assert (await client.get(versioned)).headers["cache-control"] == CACHE_FOREVER


async def test_the_page_links_every_static_file_by_its_current_version(client):
    page = (await client.get("/")).text
    links = re.findall(r'(?:href|src)="(/static/[^"]+)"', page)
    assert len(links) >= 4  # icon, style sheet, D3, main.js
    for link in links:
        path, version = re.fullmatch(r"/static/([^?]+)\?v=([0-9a-f]{12})", link).groups()
        assert version == hashlib.sha256((STATIC_DIR / path).read_bytes()).hexdigest()[:12]
        assert (await client.get(link)).headers["cache-control"] == CACHE_FOREVER


async def test_current_versioned_url_is_cached_for_a_year(client):
    digest = hashlib.sha256((STATIC_DIR / "css" / "valuegraph.css").read_bytes()).hexdigest()[:12]
    response = await client.get(f"/static/css/valuegraph.css?v={digest}")
    assert response.status_code == 200
    assert response.headers["cache-control"] == CACHE_FOREVER == "public, max-age=31536000, immutable"


@pytest.mark.parametrize("query", ["", "?v=0123456789ab", "?v="])
async def test_other_static_urls_are_revalidated(client, query):
    response = await client.get(f"/static/css/valuegraph.css{query}")
    assert response.status_code == 200
    assert response.headers["cache-control"] == REVALIDATE == "no-cache"
    assert "etag" in response.headers
    again = await client.get(f"/static/css/valuegraph.css{query}", headers={"if-none-match": response.headers["etag"]})
    assert again.status_code == 304


async def test_missing_static_file_has_no_cache_header(client):
    response = await client.get("/static/nothing-here.js?v=abc")
    assert response.status_code == 404 and "cache-control" not in response.headers


def test_the_version_follows_the_content(tmp_path):
    versions = StaticVersions(tmp_path)
    asset = tmp_path / "app.js"
    asset.write_text("one")
    first = versions.version("app.js")
    asset.write_text("two, longer")
    second = versions.version("app.js")
    assert first != second == hashlib.sha256(b"two, longer").hexdigest()[:12]


@pytest.mark.parametrize("path", ["../secret.txt", "/etc/passwd", "sub/../../secret.txt", "missing.js", "."])
def test_versions_only_for_files_inside_the_directory(tmp_path, path):
    (tmp_path / "secret.txt").write_text("no")
    static = tmp_path / "static"
    static.mkdir()
    assert StaticVersions(static).version(path) is None


def test_create_app_registers_the_template_function():
    app = create_app(Settings())
    assert "static_url" in app.state.templates.env.globals


@pytest.mark.parametrize(
    "program, where",
    [
        ("a = Value(1.0, label='\\ud800')\nb = a * 2", lambda answer: answer["nodes"][0]["label"] == "\ufffd"),
        ("print('\\ud800 \\ud83d\\ude00')\na = Value(1.0)", lambda answer: answer["printed"] == ["\ufffd 😀"]),
        ("a = Value(1.0)\na.label = 'x\\ud800'\nb = a * 2", lambda answer: answer["nodes"][0]["label"] == "x\ufffd"),
    ],
)
async def test_a_lone_surrogate_a_program_makes_is_written_as_a_replacement_character(client, program, where):
    """UTF-8 cannot carry a lone surrogate, which a string escape makes: it is written as U+FFFD (a pair as
    the character it makes) in every answer, never a 500."""
    answer = await client.post("/backward", json={"expression": program})
    assert answer.status_code == 200 and where(answer.json())
    columns = await client.post(
        "/backward", json={"expression": program}, headers={"Accept": "application/vnd.valuegraph.columns+json"}
    )
    assert columns.status_code == 200 and "\ufffd" in str(columns.json())
    for path in ("/export/html", "/export/scorm"):
        assert (await client.post(path, json={"expression": program})).status_code == 200
