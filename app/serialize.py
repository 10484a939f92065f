"""Engine results to the wire: plain records shaped by app.schemas, written by pydantic-core.

The records are built with dict displays (the cheapest way to make a dict in Python) straight
from the Values and the steps as the trace recorded them. Where app.schemas declares a list, a
record may hold a tuple (a node's scope and local_grads, as the engine keeps them): pydantic-core
writes a tuple as the same JSON array, so the bytes are the same and no list is copied per node.

The long lists (nodes, sort steps, propagate steps, the learner's walk) are `Records`: a count, a function
that builds the records of any slice, and one that gives every record's fields as lists.
backward_response() builds the records whole, for the callers that keep the answer as data;
backward_json() builds and writes them CHUNK at a time, so a 50,000-node answer never holds its
~80 MB of records at once, only their JSON. backward_columns() is the second writer of the same
records: it takes the nodes' and the learner's walk's fields straight from the engine, with no record
per node or step, into columns, and writes for the trace's steps only how to replay them (the page
replays the course's two walks; docs/api.md, "The columnar encoding"); tests/columnar.py and
static/js/columns.js read them back into the JSON answer's records, and the tests hold both writers to
the same answer.
"""

import io
import json
import re
from itertools import accumulate, chain
from math import copysign, nan
from operator import attrgetter, itemgetter
from typing import Callable, NamedTuple

import pydantic_core

from engine import ProgramRun

from . import schemas

CHUNK = 512  # records built, written and dropped at a time by backward_json: small enough to stay in the
# CPU cache while written (12,000 nodes: 512 took 57 ms, 4,096 66, all at once 77, in one process)


COLUMNS_MEDIA_TYPE = "application/vnd.valuegraph.columns+json"  # the Accept value that asks for the columns


def wants_columns(accept: str | None) -> bool:
    """The columnar encoding is sent only to a client that names its media type in Accept (the page) with a
    quality above 0 and not below JSON's (`application/json`, else `application/*`, else `*/*`, as RFC 9110's
    most specific range); any other Accept, or none, gets today's JSON."""
    if accept is None:
        return False
    quality = {}  # media range -> its q, the highest where one is listed twice
    for part in accept.split(","):
        media, *parameters = part.split(";")
        q = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0  # a q that is no number: the range is not asked for
        media = media.strip().lower()
        quality[media] = max(q, quality.get(media, q))
    columns = quality.get(COLUMNS_MEDIA_TYPE, 0.0)
    json = next((quality[media] for media in ("application/json", "application/*", "*/*") if media in quality), 0.0)
    return columns > 0 and columns >= json


# How the columnar encoding writes each field of a section's records: VALUES, one value per record;
# TABLE, each distinct value once in "table" and per record its position in it; LISTS, a list per
# record as offsets into one flat array (CSR); SPARSE, a field only some records have (NotRequired),
# as the positions that have it and their values, or, where the column names an `else`, a field every
# record has, written only where it is not what `else` gives (see _unlike and _unreplayed); a dict, a
# list of records per record: offsets into
# the columns of those records. static/js/columns.js names the same fields in the same order (it makes
# each record with one object literal): a field added here is added there.
VALUES, TABLE, LISTS, SPARSE = "values", "table", "lists", "sparse"
NODE_COLUMNS = {
    "id": VALUES,
    "label": VALUES,
    "span": TABLE,  # the nodes one line of code made share a span, an expr and a scope
    "expr": TABLE,
    "scope": TABLE,
    "op": TABLE,
    "data": VALUES,
    "grad": VALUES,
    "children": LISTS,
    "local_grads": LISTS,
    "exponent": SPARSE,  # the SPARSE fields last, where the JSON record has them
    "numeric_grad": SPARSE,
    "expected_grad": SPARSE,
}
# The trace is not written as columns: its steps are the course's walks, which the page replays on the nodes'
# children and local gradients, bit for bit (docs/api.md; engine.autograd): the sort from the root, and the
# propagate walk from the seed, over the answer's order reversed (or recursively, for that variant), each
# update's delta local_grad * grad and the child's grad after it + delta (or delta, when the walk assigns).
# Its records' fields are the JSON answer's; the columnar answer says only how to replay them.
SORT_COLUMNS = {}
PROPAGATE_COLUMNS = {}
# The learner's walk's grads are written only where replaying the walk does not give them (_unreplayed).
LEARNER_COLUMNS = {"node": VALUES, "updates": {"child": VALUES, "grad": SPARSE}}


class Records(NamedTuple):
    count: int
    make: Callable[[int, int], list]  # (start, stop) -> the wire records of that slice
    columns: dict  # how backward_columns writes each field (NODE_COLUMNS, ...)
    fields: Callable[[], dict]  # every record's fields at once, as _Columns.add takes them
    about: dict | None = None  # what the columnar section says beside its count: how to replay what it leaves out


class Sections(dict):
    """A JSON object of the answer whose values may be Records (the answer itself, and its trace)."""


def backward_response(
    steps, measured=None, layout=None, include_trace=True, program=None, checked=None, learner_walk=None
) -> schemas.BackwardResponse:
    """steps: the engine's Trace; measured: {leaf Value: numeric gradient} from the nudge
    test, or None; layout: the layout record, or None; program: the engine's ProgramRun (where
    each node came from, the runs, what was printed), or None for a graph built in Python;
    checked: the gradient check (engine.check.Check, ids as steps gives them), or None where it
    does not apply (then no expected_grad and no gradient_check: the bytes of before)."""
    return _built(_sections(steps, measured, layout, include_trace, program, checked, learner_walk))


def backward_json(
    steps, measured=None, layout=None, include_trace=True, program=None, checked=None, learner_walk=None
) -> bytes:
    """The bytes of to_json(backward_response(...)), written a chunk of records at a time."""
    out = io.BytesIO()  # getvalue() hands over its buffer: the answer is not copied at the end
    _write(_sections(steps, measured, layout, include_trace, program, checked, learner_walk), out)
    return out.getvalue()


def backward_columns(
    steps, measured=None, layout=None, include_trace=True, program=None, checked=None, learner_walk=None, out=None
) -> bytes:
    """The same answer in the columnar encoding: every Records section as {"count", "columns"}, the rest as in JSON,
    written a section at a time into `out` (a BytesIO unless given: app.compression.GzipWriter compresses each
    section while the next is made), whose getvalue() it returns."""
    out = io.BytesIO() if out is None else out
    _write(_sections(steps, measured, layout, include_trace, program, checked, learner_walk), out, columns=True)
    return out.getvalue()


def to_json(response: schemas.BackwardResponse) -> bytes:
    """The records are already shaped by the schema, so pydantic-core writes them as they are:
    the same bytes as through the schema's serializer, in half its time (docs/performance.md compares orjson).
    A lone surrogate, which a program's string escape makes (`label='\\ud800'`) and UTF-8 cannot carry, is
    written as U+FFFD; a pair of them as the character they make."""
    try:
        return pydantic_core.to_json(response, inf_nan_mode="strings")
    except pydantic_core.PydanticSerializationError as error:
        if "surrogates not allowed" not in str(error):
            raise
        return pydantic_core.to_json(_without_surrogates(response), inf_nan_mode="strings")


def _without_surrogates(value):
    if type(value) is str:
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if type(value) is dict:
        return {key: _without_surrogates(item) for key, item in value.items()}
    if type(value) in (list, tuple):
        return list(map(_without_surrogates, value))
    return value


def _sections(steps, measured, layout, include_trace, program, checked=None, learner_walk=None) -> Sections:
    ids = steps.ids
    expected = None if checked is None else checked.expected_grad
    response = Sections(output=steps.output, nodes=_node_records(steps, measured, program, expected), order=steps.order)
    if include_trace:
        response["trace"] = Sections(
            sort=Records(
                steps.sort_count,
                lambda start, stop: _sort_records(steps.sort_steps[start:stop], ids),
                SORT_COLUMNS,
                dict,  # no fields: every step is replayed
                {"root": steps.output, "checks_visited": steps.checks_visited},
            ),
            propagate=Records(
                steps.propagate_count,
                lambda start, stop: _propagate_records(steps.propagate_steps[start:stop], ids),
                PROPAGATE_COLUMNS,
                dict,  # no fields: every step is replayed
                {"seed": steps.output, "accumulates": steps.accumulates, "recursive": steps.recursive},
            ),
        )
    response["warnings"] = [{"node": node, "message": message} for node, message in steps.warnings]
    response["variant"] = steps.variant
    if layout is not None:
        response["layout"] = layout
    response["runs"] = [{"line": line, "data": data} for line, data in program.runs] if program else []
    response["run"] = program.run if program else None
    response["printed"] = program.printed if program else []
    carried = program.python.grads_carried if program is not None and program.python is not None else None
    if carried is not None:
        response["grads_carried"] = carried
    if checked is not None:
        response["gradient_check"] = checked.gradient_check
    if learner_walk is not None:
        response["learner_walk"] = Records(
            len(learner_walk.node),
            learner_walk.steps,
            LEARNER_COLUMNS,
            lambda: {
                "node": learner_walk.node,
                "updates": (
                    learner_walk.count,
                    {"child": learner_walk.child, "grad": _unreplayed(learner_walk, steps.children, steps.local_grads)},
                ),
            },
        )
    own = program.python.graph if program is not None and program.python is not None else None
    if own is not None:
        response["inputs_in_sets"] = own["inputs_are_sets"]
    return response


def _node_records(steps, measured, program, expected=None) -> Records:
    nodes, children, local_grads = steps.nodes, steps.children, steps.local_grads
    labels, made = (program or ProgramRun(None)).origin_parts(nodes)

    def make(start, stop):
        records = []
        span, span_record = None, None  # the nodes a mark made share its span tuple, and so one span record
        for i, node, label, (made_span, expr, scope) in zip(
            range(start, stop), nodes[start:stop], labels[start:stop], made[start:stop]
        ):
            if made_span is not span:
                span = made_span
                span_record = (
                    None
                    if span is None
                    else {"line": span[0], "column": span[1], "end_line": span[2], "end_column": span[3]}
                )
            record = {
                "id": i,
                "label": label,
                "span": span_record,
                "expr": expr,
                "scope": scope,  # a tuple: written as an array
                "op": node.op,
                "data": node.data,
                "grad": node.grad,
                "children": children[i],
                "local_grads": local_grads[i],  # a tuple: written as an array
            }
            if node.op == "**":
                record["exponent"] = node.exponent
            if measured is not None and node in measured:
                record["numeric_grad"] = measured[node]
            if expected is not None:
                record["expected_grad"] = expected[i]  # keyed by the answer's ids
            records.append(record)
        return records

    def fields():
        """make(0, len(nodes))'s fields, without a record per node."""
        count, ops = len(nodes), list(map(attrgetter("op"), nodes))
        span_records = {None: None}  # a mark's span -> its one span record
        for span in dict.fromkeys(map(itemgetter(0), made)):
            if span not in span_records:
                span_records[span] = {"line": span[0], "column": span[1], "end_line": span[2], "end_column": span[3]}
        powers = [i for i, op in enumerate(ops) if op == "**"]
        measured_at = [] if measured is None else [i for i, node in enumerate(nodes) if node in measured]
        grads = list(map(attrgetter("grad"), nodes))
        return {
            "id": range(count),
            "label": labels,
            "span": list(map(span_records.__getitem__, map(itemgetter(0), made))),
            "expr": list(map(itemgetter(1), made)),
            "scope": list(map(itemgetter(2), made)),
            "op": ops,
            "data": list(map(attrgetter("data"), nodes)),
            "grad": grads,
            "children": children,
            "local_grads": local_grads,
            "exponent": (powers, [nodes[i].exponent for i in powers]),
            "numeric_grad": (measured_at, [measured[nodes[i]] for i in measured_at]),
            "expected_grad": ([], [])
            if expected is None
            else _unlike(list(map(expected.__getitem__, range(count))), grads, "grad"),
        }

    return Records(len(nodes), make, NODE_COLUMNS, fields)


def _written_alike(a, b) -> bool:
    """Whether two numbers are written the same in JSON: NaN as NaN, -0.0 unlike 0.0, 1 unlike 1.0."""
    if a != a:
        return b != b
    return a == b and type(a) is type(b) and (a != 0 or copysign(1.0, a) == copysign(1.0, b))


def _unlike(values: list, others: list, other_field: str) -> tuple:
    """A SPARSE column's (positions, values, else) for a field every record has that is mostly another
    field's value (expected_grad, where the learner's grads are right: nearly always): the records
    where it is written unlike that field."""
    if values == others:  # C's comparison: only a zero's sign can still tell them apart (NaN is never ==)
        at = [i for i, value in enumerate(values) if value == 0 and not _written_alike(value, others[i])]
    else:
        at = [i for i, (value, other) in enumerate(zip(values, others)) if not _written_alike(value, other)]
    return at, list(map(values.__getitem__, at)), other_field


def _unreplayed(walk, children, local_grads) -> tuple:
    """The learner's walk's written grads as a SPARSE column that names `else: "replay"`: those that
    replaying the walk does not give (docs/api.md). Replayed, every grad starts at 0 and each write
    leaves its child holding the written grad; in a step of a node that writes to exactly its inputs, in
    their order, a write is the child's grad so far + the node's local gradient for that input times the
    node's grad so far: what a pass of `child.grad += local * v.grad` writes (most of a big walk), so only
    the seed, a write outside a node's step and a grad the program computed otherwise are written. The
    page replays it in the same IEEE arithmetic (static/js/columns.js)."""
    grads = [0.0] * len(children)  # as replayed: each node's grad so far
    at, written = [], []
    write = 0
    for node, count in zip(walk.node, walk.count):
        stop = write + count
        inputs = None if node is None else children[node]
        if inputs is not None and len(inputs) == count and inputs == walk.child[write:stop]:
            node_grad = grads[node]
            for child, local, grad in zip(inputs, local_grads[node], walk.grad[write:stop]):
                replayed = grads[child] + local * node_grad
                # _written_alike, inline: this runs once per write (188,571 in a microgpt step); None is unlike
                if replayed != grad or (replayed == 0 and copysign(1.0, replayed) != copysign(1.0, grad)):
                    if replayed == replayed or grad == grad:
                        at.append(write)
                        written.append(grad)
                grads[child] = nan if grad is None else grad
                write += 1
            continue
        for child, grad in zip(walk.child[write:stop], walk.grad[write:stop]):
            at.append(write)
            written.append(grad)
            grads[child] = nan if grad is None else grad
            write += 1
    return at, written, "replay"


def _sort_records(sort_steps, ids) -> list:
    return [
        {"node": ids[node], "index": index, "action": action, "child": None if child is None else ids[child]}
        for node, index, action, child in sort_steps
    ]


def _propagate_records(propagate_steps, ids) -> list:
    """Loops, not nested comprehensions: a comprehension is a function call in CPython 3.11, one per
    step even where there are no updates (the leaves, and every node with a zero gradient). Those
    steps' records hold the step's own empty updates (written as []) instead of a new list each."""
    records = []
    for node, grad, updates in propagate_steps:
        if updates:
            update_records = []
            for child, local_grad, delta, after in updates:
                update_records.append({"child": ids[child], "local_grad": local_grad, "delta": delta, "grad": after})
        else:
            update_records = updates
        records.append({"node": ids[node], "grad": grad, "updates": update_records})
    return records


def _built(value):
    """The answer as data: every Records built whole, every Sections a plain dict."""
    if isinstance(value, Records):
        return value.make(0, value.count)
    if isinstance(value, Sections):
        return {key: _built(item) for key, item in value.items()}
    return value


def _write(value, out, columns=False) -> None:
    """JSON exactly as to_json writes the built answer (compact, keys in order), a section at a time;
    with columns, each Records section in its columns, from its fields, else a chunk of records at a time."""
    if isinstance(value, Records):
        if columns:
            written = _Columns(value.columns)
            written.add(value.fields(), value.count)
            # written a column at a time, so that each is checked for ASCII alone
            _write(Sections(count=value.count, **(value.about or {}), columns=Sections(written.written())), out, True)
            return
        out.write(b"[")
        for start in range(0, value.count, CHUNK):
            if start:
                out.write(b",")
            out.write(memoryview(to_json(value.make(start, min(start + CHUNK, value.count))))[1:-1])  # without its [ ]
        out.write(b"]")
    elif isinstance(value, Sections):
        out.write(b"{")
        for position, (key, item) in enumerate(value.items()):
            out.write(b'%s"%s":' % (b"," if position else b"", key.encode()))  # our own keys: plain ASCII names
            _write(item, out, columns)
        out.write(b"}")
    else:
        out.write(_ascii(to_json(value)) if columns else to_json(value))


_NON_ASCII = re.compile(rb"[\x80-\xff]+")  # to_json writes a character past ASCII only inside a string


def _ascii(encoded: bytes) -> bytes:
    """JSON with every character past ASCII written as its \\u escape: the columnar answer is all ASCII, which
    the page's browser reads into a string of one byte per character, twice as fast as one with a single
    "…" in 14 MB (docs/performance.md). The big numeric columns pass the first test at once."""
    if encoded.isascii():
        return encoded
    return _NON_ASCII.sub(lambda run: json.dumps(run.group().decode())[1:-1].encode(), encoded)


_UNSET = object()


class _Columns:
    """The columns of one section's records, filled from their fields."""

    def __init__(self, kinds: dict):
        self.kinds = kinds
        self.count = 0
        self.columns = {}
        self.positions = {}  # per TABLE field: {value (a span as its numbers): its position in the table}
        for name, kind in kinds.items():
            if kind == VALUES:
                self.columns[name] = {"values": []}
            elif kind == TABLE:
                self.columns[name] = {"table": [], "index": []}
                self.positions[name] = {}
            elif kind == LISTS:
                self.columns[name] = {"offsets": [0], "values": []}
            elif kind == SPARSE:
                self.columns[name] = {"at": [], "values": []}
            else:
                self.columns[name] = {"offsets": [0], "columns": _Columns(kind)}

    def add(self, fields: dict, count: int) -> None:
        """The next `count` records, as their fields: per field, a value per record; for a SPARSE
        field, (the positions among these records that have it, their values); for records within
        records (a dict kind), (how many each record holds, their fields)."""
        for name, kind in self.kinds.items():
            column, values = self.columns[name], fields[name]
            if kind == VALUES:
                column["values"].extend(values)
            elif kind == TABLE:
                table, index, positions = column["table"], column["index"], self.positions[name]
                last = position = _UNSET  # the nodes one mark made hold the same span, expr and scope objects
                for value in values:
                    if value is not last:
                        last = value
                        key = tuple(value.values()) if type(value) is dict else value  # a span: its numbers
                        position = positions.get(key)
                        if position is None:
                            position = positions[key] = len(table)
                            table.append(value)
                    index.append(position)
            elif kind == LISTS:
                column["values"].extend(chain.from_iterable(values))
                offsets = accumulate(map(len, values), initial=column["offsets"][-1])
                next(offsets)  # the first is already there
                column["offsets"].extend(offsets)
            elif kind == SPARSE:
                having, sparse, *otherwise = values  # otherwise: [the column's `else`], for a field every record has
                column["at"].extend(map(self.count.__add__, having))
                column["values"].extend(sparse)
                if otherwise:
                    column["else"] = otherwise[0]
            else:
                lengths, inner = values
                nested = column["columns"]
                offsets = accumulate(lengths, initial=nested.count)
                next(offsets)
                column["offsets"].extend(offsets)
                nested.add(inner, sum(lengths))
        self.count += count

    def written(self) -> dict:
        return {
            name: {"offsets": column["offsets"], "columns": column["columns"].written()}
            if isinstance(kind, dict)
            else column
            for (name, kind), column in zip(self.kinds.items(), self.columns.values())
        }
