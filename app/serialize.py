"""Engine results to the wire: plain records shaped by app.schemas, dumped to JSON in one call.

The records are built with dict displays (the cheapest way to make a dict in Python) straight
from the Values and the steps as the trace recorded them, then pydantic-core writes them in one call.
Where app.schemas declares a list, a record may hold a tuple (a node's scope and local_grads, as the
engine keeps them): pydantic-core writes a tuple as the same JSON array, so the bytes are the same
and no list is copied per node.
"""

from itertools import count

import pydantic_core

from engine import ProgramRun

from . import schemas

def backward_response(steps, measured=None, layout=None, include_trace=True, program=None) -> schemas.BackwardResponse:
    """steps: the engine's Trace; measured: {leaf Value: numeric gradient} from the nudge
    test, or None; layout: the layout record, or None; program: the engine's ProgramRun (where
    each node came from, the runs, what was printed), or None for a graph built in Python."""
    nodes, ids = steps.nodes, steps.ids
    records = []
    id_of = ids.__getitem__
    labels, made = (program or ProgramRun(None)).origin_parts(nodes)
    span, span_record = None, None  # the nodes a mark made share its span tuple, and so one span record
    for i, node, label, (made_span, expr, scope) in zip(count(), nodes, labels, made):
        if made_span is not span:
            span = made_span
            span_record = None if span is None else {"line": span[0], "column": span[1], "end_line": span[2], "end_column": span[3]}
        record = {
            "id": i,
            "label": label,
            "span": span_record,
            "expr": expr,
            "scope": scope,  # a tuple: written as an array
            "op": node.op,
            "data": node.data,
            "grad": node.grad,
            "children": list(map(id_of, node._children)),  # not a comprehension: that is a function call per node
            "local_grads": node._local_grads,  # a tuple: written as an array
        }
        if node.op == "**":
            record["exponent"] = node.exponent
        records.append(record)
    if measured is not None:
        for leaf, gradient in measured.items():
            records[ids[leaf]]["numeric_grad"] = gradient

    response = {"output": steps.output, "nodes": records, "order": steps.order}
    if include_trace:
        response["trace"] = {
            "sort": [
                {"node": ids[node], "index": index, "action": action, "child": None if child is None else ids[child]}
                for node, index, action, child in steps.sort_steps
            ],
            "propagate": propagate_records(steps.propagate_steps, ids),
        }
    response["warnings"] = [{"node": node, "message": message} for node, message in steps.warnings]
    response["variant"] = steps.variant
    if layout is not None:
        response["layout"] = layout
    response["runs"] = [{"line": line, "data": data} for line, data in program.runs] if program else []
    response["run"] = program.run if program else None
    response["printed"] = program.printed if program else []
    return response


def propagate_records(propagate_steps, ids) -> list:
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


def to_json(response: schemas.BackwardResponse) -> bytes:
    """The records are already shaped by the schema, so pydantic-core writes them as they are:
    the same bytes as through the schema's serializer, in half its time (README "Speed" compares orjson)."""
    return pydantic_core.to_json(response, inf_nan_mode="strings")
