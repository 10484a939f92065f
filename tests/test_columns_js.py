"""static/js/columns.js and api.js's graphOf, run by node on real answers of the app (in-process): the
columnar answer decodes to the JSON answer's object exactly (every field, in the JSON record's order,
every value), for every shape a column takes; graphOf reads either encoding by its Content-Type into
the same object with its numbers revived, and traceColumns reads the same trace columns (what the
timeline reads) from either, before and after the columnar answer's steps are first read; an answer
whose fields the page does not know is refused."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from app import schemas
from app.serialize import COLUMNS_MEDIA_TYPE

pytestmark = pytest.mark.anyio

JS = Path(__file__).resolve().parent.parent / "static" / "js"
PYTHON_SCOPES = """def square(x):
    return x * x

def layer(xs):
    return sum(square(x) for x in xs)

a = Value(2.0)
b = Value(-3.0)
L = layer([a, b, a * b]) + (a ** 3).relu()
L.backward()
"""
OWN_CLASS = (Path(__file__).parent / "own_classes" / "course_value.py").read_text(encoding="utf-8").split(
    "\na = Value(2.0)"
)[0] + "\na = Value(1e200)\nb = a * a\nc = b * b\nc.backward()\n"
WRONG_GRAPH = {
    **schemas.CHAPTER_2_GRAPH,
    "nodes": [
        {**node, "grad": -0.0 if node["id"] == 1 else node["grad"] + (node["id"] == 0)}
        for node in schemas.CHAPTER_2_GRAPH["nodes"]
    ],
}
# The course's class, its backward() called twice without zeroing the grads: the second walk (the one
# shown) adds to the first one's grads, so the first write to each node is not what replaying gives,
# and is written; the rest are replayed.
TWICE = OWN_CLASS.split("\na = Value(1e200)")[0] + (
    "\na = Value(2.0)\nb = Value(-0.0)\nc = a * b + a\nd = c * c\nd.backward()\nd.backward()\n"
)
# Each answer, and the column shapes it holds (docs/api.md, "The columnar encoding"):
CASES = {
    # VALUES, TABLE, LISTS, propagate steps without updates (the leaves), the layout section
    "chapter 2": {"expression": schemas.CHAPTER_2_PROGRAM, "layout": True},
    # SPARSE exponent and numeric_grad, "-Infinity"/"Infinity"/"NaN" in VALUES, LISTS, SPARSE; no trace
    "check, no trace": {"expression": "a = 0\nb = log(a)\nc = b ** 2\nd = c * 0 + a", "check": True, "trace": False},
    # the same with its trace: non-finite numbers in the propagate steps and their updates
    "non-finite walk": {"expression": "a = 2\nb = 3\nc = a * b\nL = c ** 2 + log(0 * a)", "check": True},
    # expected_grad on every record (SPARSE with `else`: the node's grad where not written), gradient_check
    "a posted graph": {"graph": schemas.CHAPTER_2_GRAPH},
    # the same with wrong grads: only the nodes whose expected_grad is not their grad are written
    "a posted graph, wrong": {"graph": WRONG_GRAPH},
    # scopes (a TABLE of lists), labels null and named, several ops, runs and printed
    "python with scopes": {"expression": PYTHON_SCOPES},
    "one node": {"expression": "a = 1"},
    # the learner's own walk (LEARNER_COLUMNS), with grads past the largest float: replayed, not written
    "own class": {"expression": OWN_CLASS},
    # and one whose grads are not all what replaying it gives
    "own class, twice": {"expression": TWICE},
    # a dead branch: a node whose grad is 0 passes nothing on
    "dead branch": {"expression": "a = 2\nb = a * 3\nc = b * 0\nL = c + a"},
    # the propagate steps' grads replayed in each walk: assigning, without a sort, without a visited set
    **{
        f"variant {variant}": {"expression": "a = 3\nb = a * a + 2\nc = b * a\nL = c * c", "variant": variant}
        for variant in ("assign", "no-topological-order", "no-visited-check")
    },
}

CHECK = """
import { decodeColumns, traceColumns } from %(columns)s;
import { graphOf } from %(api)s;
import { deepStrictEqual } from "node:assert";
import { readFileSync } from "node:fs";
const answers = JSON.parse(readFileSync(%(answers)s, "utf8"));
const results = {};
for (const [name, { json, columns }] of Object.entries(answers)) {
  const columnar = JSON.parse(columns);
  const before = JSON.stringify(columnar);
  const decoded = decodeColumns(columnar);
  const read = graphOf(JSON.parse(columns), "Application/VND.valuegraph.columns+json; charset=utf-8");
  const readJson = graphOf(JSON.parse(json), "application/json");
  // the trace as columns (the timeline reads it so) is the same from either encoding, taken before
  // the columnar answer's steps are first read, and after
  const columnsFirst = traceColumns(read);
  let same = true;
  try { deepStrictEqual(read, readJson); } catch { same = false; }  // NaN equals NaN here (Object.is)
  let sameColumns = true;
  // as plain arrays: a NaN's bits (which arithmetic and Number("NaN") make differently) are no number's value
  const typed = (key, value) => (ArrayBuffer.isView(value) ? Array.from(value, String) : value);
  const plain = (columns) => columns && JSON.parse(JSON.stringify(columns, typed));
  try {
    deepStrictEqual(plain(columnsFirst), plain(traceColumns(readJson)));
    deepStrictEqual(plain(traceColumns(read)), plain(traceColumns(readJson)));
  } catch { sameColumns = false; }
  const nodes = columnar.nodes.columns;
  results[name] = {
    // the same text as the JSON answer parsed and written again: fields, their order and values
    exact: JSON.stringify(decoded) === JSON.stringify(JSON.parse(json)),
    untouched: JSON.stringify(columnar) === before,
    same,
    sameColumns,
    shapes: {
      exponent: nodes.exponent.at.length, numeric_grad: nodes.numeric_grad.at.length,
      expected_grad: nodes.expected_grad.at.length, expectedElse: nodes.expected_grad.else ?? null,
      scopes: nodes.scope.table.length,
      learnerGradsWritten: columnar.learner_walk?.columns.updates.columns.grad.at ?? null,
      emptyUpdates: columnar.trace ? decoded.trace.propagate.some((step) => step.updates.length === 0) : null,
    },
    // numbers revived where the page reads them, as numbers (not the wire's strings)
    nonFinite: read.nodes.flatMap((n) => [n.data, n.grad, ...n.local_grads, n.numeric_grad ?? 0, n.exponent ?? 0])
      .concat((read.trace?.propagate ?? []).flatMap((s) => [s.grad, ...s.updates.map((u) => u.delta)]))
      .filter((x) => typeof x !== "number" || !Number.isFinite(x)).map(String).sort(),
    trace: "trace" in read,
    learnerWalk: read.learner_walk?.map((s) => [s.node, s.updates.map((u) => [u.child, String(u.grad)])]) ?? null,
  };
}
// An answer with a field this page does not read is refused, naming the fields, not half read.
const renamed = JSON.parse(answers["chapter 2"].columns);
renamed.trace.propagate.columns = { node: { values: [3, 2, 1, 0] } };  // an older page's answer
try { decodeColumns(renamed); results.refused = null; } catch (error) { results.refused = error.message; }
console.log(JSON.stringify(results));
"""


async def test_columns_decode_exactly_and_graph_of_reads_both(make_client, tmp_path):
    node = shutil.which("node")
    assert node, "node is not installed"
    client = make_client()
    answers = {}
    for name, body in CASES.items():
        plain = await client.post("/backward", json=body)
        columns = await client.post("/backward", json=body, headers={"accept": COLUMNS_MEDIA_TYPE})
        assert plain.status_code == columns.status_code == 200, (name, plain.text[:300])
        assert columns.headers["content-type"] == COLUMNS_MEDIA_TYPE
        answers[name] = {"json": plain.text, "columns": columns.text}
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers), encoding="utf-8")
    script = CHECK % {
        "columns": json.dumps((JS / "columns.js").as_uri()),
        "api": json.dumps((JS / "api.js").as_uri()),
        "answers": json.dumps(str(path)),
    }
    done = subprocess.run([node, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)

    for name in CASES:
        result = results[name]
        assert result["exact"] and result["untouched"] and result["same"] and result["sameColumns"], (name, result)
    shapes = {name: results[name]["shapes"] for name in CASES}
    assert shapes["check, no trace"]["exponent"] == 1 and shapes["check, no trace"]["numeric_grad"] >= 1
    assert (shapes["a posted graph"]["expected_grad"], shapes["a posted graph"]["expectedElse"]) == (0, "grad")
    assert (shapes["a posted graph, wrong"]["expected_grad"], shapes["a posted graph, wrong"]["expectedElse"]) == (
        2,  # node 0's grad 5 where 4 is right, and b's -0.0 where 2.0 is
        "grad",
    )
    assert shapes["chapter 2"]["expectedElse"] is None  # no check: no expected_grad
    assert shapes["own class"]["learnerGradsWritten"] == [0]  # the seed: every other write is replayed
    written, writes = shapes["own class, twice"]["learnerGradsWritten"], results["own class, twice"]["learnerWalk"]
    assert written[0] == 0 and 1 < len(written) < sum(len(updates) for _, updates in writes), (written, writes)
    assert shapes["python with scopes"]["scopes"] > 1
    assert shapes["chapter 2"]["emptyUpdates"] is True and shapes["check, no trace"]["emptyUpdates"] is None
    assert results["check, no trace"]["trace"] is False and results["chapter 2"]["trace"] is True
    assert results["chapter 2"]["nonFinite"] == []
    assert set(results["check, no trace"]["nonFinite"]) == {"-Infinity", "Infinity", "NaN"}
    assert {"-Infinity", "NaN"} <= set(results["non-finite walk"]["nonFinite"])
    assert results["own class"]["learnerWalk"] == [
        [None, [[2, "1"]]],  # the seed, then c = b * b and b = a * a pass theirs on
        [2, [[1, "Infinity"], [1, "Infinity"]]],
        [1, [[0, "Infinity"], [0, "Infinity"]]],
    ]
    assert results["chapter 2"]["learnerWalk"] is None
    assert results["refused"] == (
        "The columnar answer's propagate steps have the fields node; this page reads none. Reload the page."
    )
