"""The columnar encoding read back into the JSON answer's records, for tests only (the page reads
it with static/js/columns.js): what both decoders must agree with is the JSON answer."""

import math

RECORD_SECTIONS = (("nodes",), ("trace", "sort"), ("trace", "propagate"), ("learner_walk",))


def decoded(answer: dict) -> dict:
    """The parsed columnar answer -> the parsed JSON answer."""
    answer = dict(answer)
    for path in RECORD_SECTIONS:
        holder = answer
        for key in path[:-1]:
            if key not in holder:
                break
            holder[key] = holder = dict(holder[key])
        else:
            if path[-1] in holder:
                section = holder[path[-1]]
                rows = records(section["count"], section["columns"])
                if path[-1] == "learner_walk":
                    learner_grads_again(rows, answer["nodes"])
                if path[-1] == "sort":
                    rows = sorted_again(section, [node["children"] for node in answer["nodes"]])
                elif path[-1] == "propagate":
                    rows = walked_again(section, answer["nodes"], answer["order"])
                holder[path[-1]] = rows
    return answer


def learner_grads_again(steps: list[dict], nodes: list[dict]) -> None:
    """The learner's walk's grads its columns leave out (`else: "replay"`), replayed as docs/api.md says: every
    grad starts at 0, each write leaves its child holding its grad, and a write left out, in a step of a node
    that writes to exactly its inputs in their order, is the child's grad + the node's local gradient for that
    input times the node's grad."""
    grads = [0.0] * len(nodes)
    for step in steps:
        node, updates = step["node"], step["updates"]
        node_grad = None if node is None else grads[node]
        whole = node is not None and [update["child"] for update in updates] == nodes[node]["children"]
        for slot, update in enumerate(updates):
            if "grad" not in update:
                assert whole, step
                replayed = grads[update["child"]] + float(nodes[node]["local_grads"][slot]) * node_grad
                update["grad"] = _wire(replayed)
            grad = update["grad"]
            grads[update["child"]] = math.nan if grad is None else float(grad)  # float(): "NaN", "Infinity"...


def sorted_again(section: dict, children: list[list[int]]) -> list[dict]:
    """The sort steps, as docs/api.md says to replay them: the course's sort from the root with a stack of
    (node, next input) where a leaf is emitted where it is found, an input already reached skipped (when
    the walk checks), each look at an input and each emit a step."""
    if section["count"] == 0:
        return []
    steps, visited, ancestors = [], set(), []
    node, index = section["root"], 0
    while True:
        while index < len(children[node]):
            child = children[node][index]
            if section["checks_visited"] and child in visited:
                steps.append({"node": node, "index": index, "action": "skip", "child": child})
                index += 1
                continue
            visited.add(child)
            steps.append({"node": node, "index": index, "action": "descend", "child": child})
            index += 1
            if children[child]:
                ancestors.append((node, index))
                node, index = child, 0
                break
            steps.append({"node": child, "index": 0, "action": "emit", "child": None})
        else:
            steps.append({"node": node, "index": len(children[node]), "action": "emit", "child": None})
            if not ancestors:
                assert len(steps) == section["count"], (len(steps), section["count"])
                return steps
            node, index = ancestors.pop()


def walked_again(section: dict, nodes: list[dict], order: list[int]) -> list[dict]:
    """The propagate steps, as docs/api.md says to replay them: every grad starts at 0 and the seed's at 1; the
    nodes are walked in the answer's order reversed, each passing nothing on when its grad is 0 or it has no
    inputs, else local_grad * its grad to each input in turn (delta), the input's grad becoming its grad + delta
    (or delta, when the walk does not accumulate); or, recursively, each update followed at once by the input's
    own walk, a leaf's visit a step without updates."""
    grads = {section["seed"]: 1.0}

    def passed(node: int, slot: int, grad: float) -> dict:
        child, local_grad = nodes[node]["children"][slot], nodes[node]["local_grads"][slot]
        delta = float(local_grad) * grad  # float(): "NaN", "Infinity" and "-Infinity" too
        grads[child] = grads.get(child, 0.0) + delta if section["accumulates"] else delta
        return {"child": child, "local_grad": local_grad, "delta": _wire(delta), "grad": _wire(grads[child])}

    steps = []
    if not section["recursive"]:
        for node in reversed(order):
            grad, inputs = grads.get(node, 0.0), len(nodes[node]["children"])
            updates = [passed(node, slot, grad) for slot in range(inputs)] if grad != 0 and inputs else []
            steps.append({"node": node, "grad": _wire(grad), "updates": updates})
    else:
        stack = [(section["seed"], 0)]
        while stack:
            node, slot = stack.pop()
            grad = grads.get(node, 0.0)
            if slot < len(nodes[node]["children"]):
                steps.append({"node": node, "grad": _wire(grad), "updates": [passed(node, slot, grad)]})
                stack += [(node, slot + 1), (nodes[node]["children"][slot], 0)]
            elif slot == 0:
                steps.append({"node": node, "grad": _wire(grad), "updates": []})
    assert len(steps) == section["count"], (len(steps), section["count"])
    return steps


def _wire(value: float):
    """A number as the parsed JSON answer holds it: a non-finite one as its string."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"


def records(count: int, columns: dict) -> list[dict]:
    rows = [{} for _ in range(count)]
    for name, column in columns.items():
        if "table" in column:
            table = column["table"]
            for row, position in zip(rows, column["index"], strict=True):
                row[name] = table[position]
        elif "at" in column:
            for position, value in zip(column["at"], column["values"], strict=True):
                rows[position][name] = value
            if column.get("else") not in (None, "replay"):  # "replay": learner_grads_again fills them
                for row in rows:
                    if name not in row:
                        row[name] = row[column["else"]]
        elif "columns" in column:
            offsets = column["offsets"]
            inner = records(offsets[-1], column["columns"])
            for i, row in enumerate(rows):
                row[name] = inner[offsets[i] : offsets[i + 1]]
        elif "offsets" in column:
            offsets, values = column["offsets"], column["values"]
            for i, row in enumerate(rows):
                row[name] = values[offsets[i] : offsets[i + 1]]
        else:
            for row, value in zip(rows, column["values"], strict=True):
                row[name] = value
    return rows
