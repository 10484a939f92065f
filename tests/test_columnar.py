"""The columnar encoding of /backward (docs/api.md): asked for with Accept, read back by
tests/columnar.py into exactly the JSON answer, for every corpus program and page example; the
JSON answer itself unchanged. static/js/columns.js is held to the same in tests/browser/test_columns.py."""

import gzip
import json
from pathlib import Path

import pytest

from app import schemas
from app.serialize import COLUMNS_MEDIA_TYPE, NODE_COLUMNS
from engine import VARIANTS
from tests.columnar import decoded
from tests.test_corpus import page_python_examples

pytestmark = pytest.mark.anyio

CORPUS = {
    path.name: path.read_text(encoding="utf-8") for path in sorted((Path(__file__).parent / "corpus").glob("*.py"))
}
PROGRAMS = {**CORPUS, **page_python_examples(), "chapter 2": schemas.CHAPTER_2_PROGRAM}
COLUMNS = {"Accept": COLUMNS_MEDIA_TYPE}


async def both(client, body):
    """The JSON answer and the columnar one, for one body."""
    plain = await client.post("/backward", json=body)
    columns = await client.post("/backward", json=body, headers=COLUMNS)
    assert plain.status_code == columns.status_code == 200, (plain.text[:300], columns.text[:300])
    assert plain.headers["content-type"] == "application/json"
    assert columns.headers["content-type"] == COLUMNS_MEDIA_TYPE
    return plain, columns


@pytest.mark.parametrize("name", sorted(PROGRAMS))
async def test_columns_decode_to_the_json_answer(make_client, name):
    client = make_client(time_budget=120.0)  # the machine running the tests may be loaded
    plain, columns = await both(client, {"expression": PROGRAMS[name], "layout": True})
    answer = columns.json()
    assert isinstance(answer["nodes"], dict) and set(answer["nodes"]) == {"count", "columns"}
    assert decoded(answer) == plain.json()


@pytest.mark.parametrize("variant", VARIANTS)
async def test_the_trace_replayed_is_the_json_answers_in_every_walk(make_client, variant):
    """The sort and propagate steps the columns leave out, replayed (tests/columnar.py as docs/api.md says), are
    the JSON answer's, bit for bit: in each walk (accumulating or assigning, in order or recursive, a node walked
    twice), with a node reached twice, a dead branch (grad 0) and non-finite numbers."""
    program = "a = 3\nb = -2\nc = a * b + a\nd = c * c\ne = d * 0 + log(0 * a) * b\nL = e + tanh(c) * 1e308 * 10"
    plain, columns = await both(make_client(), {"expression": program, "variant": variant})
    answer = columns.json()
    propagate = answer["trace"]["propagate"]
    assert list(propagate) == ["count", "seed", "accumulates", "recursive", "columns"]
    assert (propagate["seed"], propagate["accumulates"]) == (answer["output"], variant != "assign")
    assert (propagate["recursive"], propagate["columns"]) == (variant == "no-topological-order", {})
    sort = answer["trace"]["sort"]
    assert (sort["root"], sort["checks_visited"]) == (answer["output"], variant != "no-visited-check")
    assert sort["columns"] == {}
    assert (sort["count"] == 0) == (variant == "no-topological-order")
    expected = plain.json()
    assert any(
        u["grad"] in ("NaN", "Infinity", "-Infinity") for s in expected["trace"]["propagate"] for u in s["updates"]
    )
    assert decoded(answer) == expected


async def test_check_without_trace_and_non_finite_numbers(make_client):
    """numeric_grad and exponent (SPARSE columns), no trace section, and NaN/Infinity as strings."""
    client = make_client()
    body = {"expression": "a = 0\nb = log(a)\nc = b ** 2\nd = c * 0 + a", "check": True, "trace": False}
    plain, columns = await both(client, body)
    answer = columns.json()
    assert "trace" not in answer
    node_columns = answer["nodes"]["columns"]
    assert node_columns["data"]["values"][1] == "-Infinity"
    assert "Infinity" in node_columns["grad"]["values"] and "-Infinity" in node_columns["local_grads"]["values"]
    assert node_columns["exponent"]["at"] == [2]
    assert node_columns["numeric_grad"]["at"] == [0, 3]  # the leaves: a and the constant 0
    assert decoded(answer) == plain.json()


async def test_a_posted_graph_with_its_check(make_client):
    """expected_grad on every node and gradient_check, from a graph posted whole (not cached)."""
    graph = json.loads(json.dumps(schemas.CHAPTER_2_GRAPH))
    graph["nodes"][0]["grad"] = 3.0  # a wrong gradient: the check says so in both encodings
    plain, columns = await both(make_client(), {"graph": graph})
    answer = columns.json()
    assert answer["gradient_check"]["status"] == "wrong"
    # written only where it is not the node's grad (the learner's): every other node's is its grad
    assert answer["nodes"]["columns"]["expected_grad"] == {"at": [0], "values": [4.0], "else": "grad"}
    assert decoded(answer) == plain.json()


async def test_the_columns_of_chapter_2(make_client):
    """The shapes docs/api.md describes, on the course's first graph."""
    client = make_client()
    answer = (await client.get("/backward", params={"expression": schemas.CHAPTER_2_PROGRAM}, headers=COLUMNS)).json()
    nodes = answer["nodes"]
    assert nodes["count"] == 4 and list(nodes["columns"]) == list(NODE_COLUMNS)
    columns = nodes["columns"]
    assert columns["id"] == {"values": [0, 1, 2, 3]}
    assert columns["children"] == {"offsets": [0, 0, 0, 2, 4], "values": [0, 1, 2, 0]}
    assert columns["local_grads"] == {"offsets": [0, 0, 0, 2, 4], "values": [3.0, 2.0, 1.0, 1.0]}
    assert columns["op"] == {"table": [None, "*", "+"], "index": [0, 0, 1, 2]}
    assert columns["scope"] == {"table": [[]], "index": [0, 0, 0, 0]}
    assert columns["span"]["table"][2] == {"line": 1, "column": 19, "end_line": 1, "end_column": 24}
    # the trace is replayed from the nodes: its sections say only how
    assert answer["trace"]["sort"] == {"count": 8, "root": 3, "checks_visited": True, "columns": {}}
    assert answer["trace"]["propagate"] == {
        "count": 4,
        "seed": 3,
        "accumulates": True,
        "recursive": False,
        "columns": {},
    }
    assert (answer["output"], answer["order"], answer["variant"]) == (3, [0, 1, 2, 3], "correct")


async def test_the_columns_are_ascii_whatever_the_program_writes(make_client):
    """Every character past ASCII (names, code, printed text, one beyond the 16-bit range) is written as its
    \\u escape in the columns, which read back into the JSON answer with the characters themselves."""
    program = 'α = Value(2.0)\nβ = α * 3  # → β\nprint("naïve 😀 …")\nL = β + α\nL.backward()'
    plain, columns = await both(make_client(), {"expression": program})
    assert columns.content.isascii() and b"\\ud83d\\ude00" in columns.content and b"\\u2026" in columns.content
    assert "α" in plain.text and "😀" in plain.text  # the JSON answer keeps them as they are
    answer = columns.json()
    assert decoded(answer) == plain.json()


async def test_the_json_answer_is_unchanged_and_cached_apart(make_client):
    """Without the media type in Accept, the JSON answer's bytes are those of no Accept at all; the
    response cache keeps the two encodings apart, in either order."""
    client = make_client()
    body = {"expression": schemas.CHAPTER_2_PROGRAM}
    none = await client.post("/backward", json=body)
    for accept in ("application/json", "*/*", "text/html, application/json;q=0.9"):
        again = await client.post("/backward", json=body, headers={"Accept": accept})
        assert again.content == none.content and again.headers["content-type"] == "application/json"
    # JSON where the client prefers it or refuses the columns (q=0), as RFC 9110's qualities say
    for accept in (
        f"{COLUMNS_MEDIA_TYPE};q=0",
        f"{COLUMNS_MEDIA_TYPE};q=0.5, application/json;q=0.9",
        f"{COLUMNS_MEDIA_TYPE};q=0.5, */*",
        f"{COLUMNS_MEDIA_TYPE};q=0.5, application/*;q=0.8, */*;q=0.1",
        f"{COLUMNS_MEDIA_TYPE};q=high",
    ):
        again = await client.post("/backward", json=body, headers={"Accept": accept})
        assert again.content == none.content and again.headers["content-type"] == "application/json", accept
    for accept in (f"{COLUMNS_MEDIA_TYPE}, application/json;q=0.9", f"*/*;q=0.1, {COLUMNS_MEDIA_TYPE};q=0.2"):
        again = await client.post("/backward", json=body, headers={"Accept": accept})
        assert again.headers["content-type"] == COLUMNS_MEDIA_TYPE, accept
    columns = await client.post(
        "/backward", json=body, headers={"Accept": f"application/json;q=0.5, {COLUMNS_MEDIA_TYPE}"}
    )
    assert columns.headers["content-type"] == COLUMNS_MEDIA_TYPE
    assert columns.headers["vary"].lower().startswith("accept") and none.headers["vary"].lower().startswith("accept")
    assert decoded(columns.json()) == none.json()
    fresh = make_client()
    first = await fresh.post("/backward", json=body, headers=COLUMNS)
    assert (await fresh.post("/backward", json=body)).content == none.content
    assert (await fresh.post("/backward", json=body, headers=COLUMNS)).content == first.content == columns.content


async def test_errors_are_the_same_json_errors(make_client):
    """A program error is the JSON error whatever the Accept: the columns are only for answers."""
    client = make_client()
    plain = await client.post("/backward", json={"expression": "a = (1"})
    columns = await client.post("/backward", json={"expression": "a = (1"}, headers=COLUMNS)
    assert plain.status_code == columns.status_code == 400
    assert plain.json() == columns.json()


async def test_the_columns_are_compressed_as_they_are_written_for_a_client_that_takes_gzip(make_client):
    """With gzip in Accept-Encoding, the columnar answer comes compressed by app.compression (the same
    bytes once decompressed as without it), and the cache keeps the two apart; the JSON answer is still
    compressed by the middleware."""
    client = make_client()
    body = {"expression": PROGRAMS["chapter 2"] + "\nd = c * c + L"}
    identity = await client.post("/backward", json=body, headers={**COLUMNS, "Accept-Encoding": "identity"})
    zipped = await client.post("/backward", json=body, headers={**COLUMNS, "Accept-Encoding": "gzip, deflate"})
    assert "content-encoding" not in identity.headers
    assert zipped.headers["content-encoding"] == "gzip" and zipped.headers["vary"].startswith("Accept, Accept-Encoding")
    assert zipped.content == identity.content  # httpx decompresses it
    assert int(zipped.headers["content-length"]) < len(identity.content) / 2
    again = await client.post("/backward", json=body, headers={**COLUMNS, "Accept-Encoding": "identity"})
    assert again.content == identity.content and "content-encoding" not in again.headers  # cached apart
    plain = await client.post("/backward", json=body, headers={"Accept-Encoding": "gzip"})
    assert plain.headers["content-encoding"] == "gzip" and plain.headers["content-type"] == "application/json"


@pytest.mark.parametrize("block_bytes", [7, 1000, 1 << 20])
def test_the_gzip_writer_makes_one_gzip_member_of_every_piece_in_order(monkeypatch, block_bytes):
    """Blocks deflated apart, each with the window before it as its dictionary, joined into one stream: what
    any gzip reader reads back is exactly what was written, whatever the pieces' sizes against a block's."""
    import random
    import zlib

    from app import compression

    monkeypatch.setattr(compression, "BLOCK_BYTES", block_bytes)
    rng = random.Random(block_bytes)
    records = 2_000 if block_bytes < 1000 else 40_000  # 7-byte blocks: a block per 7 bytes, each a pool task
    text = b"".join(b'{"child":%d,"grad":%r},' % (rng.randrange(10**5), rng.random()) for _ in range(records))
    sizes = [0, 1, 6, 7, 8, 999, 1000, 1001, 2500, 70_000, 1 << 20, (1 << 20) + 3]
    pieces, at = [], 0
    while at < len(text):
        size = rng.choice(sizes)
        pieces.append(text[at : at + size])
        at += size
    pieces.append(memoryview(b"[1,2,3]")[1:-1])  # a view of part of a buffer
    with compression.GzipWriter() as out:
        for piece in pieces:
            out.write(piece)
        zipped = out.getvalue()
    written = text + b"1,2,3"
    assert gzip.decompress(zipped) == written
    assert zlib.decompress(zipped, 16 + zlib.MAX_WBITS) == written
    assert out.getvalue() is zipped  # the answer is finished once
    if block_bytes == 1 << 20:  # the blocks the server uses: joined, as small as one compressor's stream
        whole = zlib.compressobj(compression.LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        assert len(zipped) < 1.01 * len(whole.compress(written) + whole.flush())

    with compression.GzipWriter() as empty:
        assert gzip.decompress(empty.getvalue()) == b""


def test_the_gzip_writer_drops_its_blocks_when_writing_fails_and_keeps_its_threads_few():
    import threading

    from app import compression

    with pytest.raises(RuntimeError):
        with compression.GzipWriter() as failing:
            failing.write(b"half an answer" * 200_000)
            raise RuntimeError("the budget ran out")
    assert all(block.cancelled() or block.done() for block in failing._blocks)
    for _ in range(20):
        with compression.GzipWriter() as out:
            out.write(b"x" * 3_000_000)
            out.getvalue()
    threads = [thread for thread in threading.enumerate() if thread.name.startswith("valuegraph gzip")]
    assert 1 <= len(threads) <= compression.THREADS, "one pool of workers for every answer"


def _compress_in_a_forked_process(done):
    from app import compression

    with compression.GzipWriter() as out:
        out.write(b"an answer" * 300_000)
        done.put(len(gzip.decompress(out.getvalue())))


def test_the_gzip_writer_works_in_a_forked_process():
    """A job's process is forked, which keeps no thread but the forking one: its gzip workers start anew."""
    import multiprocessing

    import app.compression  # noqa: F401  (its workers started in this process, before the fork)

    fork = multiprocessing.get_context("fork")
    done = fork.Queue()
    child = fork.Process(target=_compress_in_a_forked_process, args=(done,))
    child.start()
    child.join(60)
    if child.is_alive():
        child.kill()
    assert child.exitcode == 0 and done.get(timeout=1) == 2_700_000
