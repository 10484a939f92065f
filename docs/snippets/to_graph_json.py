def to_graph_json(self, names=None):
    """valuegraph: the graph this Value was made from, as the JSON that POST /backward takes
    as {"graph": ...}. names: {value: label} for the values you want to see by name (the rest
    get numbers). Add it inside your Value class; it reads data, grad, _children, _local_grads."""
    import json
    import math

    def number(x):  # JSON has no NaN or Infinity: valuegraph reads them as these strings
        return x if math.isfinite(x) else {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}[repr(x)]

    names = names or {}
    ids, nodes = {}, []
    visited, stack = {self}, [(self, 0)]
    while stack:
        node, next_input = stack.pop()
        if next_input < len(node._children):
            stack.append((node, next_input + 1))
            child = node._children[next_input]
            if child not in visited:
                visited.add(child)
                stack.append((child, 0))
            continue
        ids[node] = len(ids)  # every input already has its id: children come before parents
        nodes.append(
            {
                "id": ids[node],
                "label": names.get(node),
                "data": number(node.data),
                "grad": number(node.grad),
                "children": [ids[child] for child in node._children],
                "local_grads": [number(g) for g in node._local_grads],
            }
        )
    return json.dumps({"nodes": nodes, "output": ids[self], "language": "python"})
