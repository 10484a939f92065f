"""static/js/columns.js in Chromium: for every example of the page's menu, the columnar answer the
server sends (Accept: application/vnd.valuegraph.columns+json) decodes to exactly the JSON answer
of the same request (tests/test_columnar.py holds the server's encoding to the same)."""

from pagehelpers import wait_for_graph

ROUND_TRIP = """async (bodies) => {
    const { EXAMPLES } = await import('/static/js/examples.js');
    const { decodeColumns, COLUMNS_MEDIA_TYPE } = await import('/static/js/columns.js');
    // Deep equality with the keys' order ignored, as JSON objects have no order.
    const same = (a, b) => {
        if (a === b) return true;
        if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
        if (Array.isArray(a) !== Array.isArray(b)) return false;
        const keys = Object.keys(a);
        if (keys.length !== Object.keys(b).length) return false;
        return keys.every((key) => key in b && same(a[key], b[key]));
    };
    const ask = async (body, accept) => {
        const response = await fetch('/backward', {
            method: 'POST', headers: { 'Content-Type': 'application/json', Accept: accept },
            body: JSON.stringify(body) });
        return [response.status, response.headers.get('content-type'), await response.json()];
    };
    const results = [];
    const all = [...EXAMPLES.map((e) => [e.id, { expression: e.program, trace: true, layout: true }]), ...bodies];
    for (const [name, body] of all) {
        const [status, type, json] = await ask(body, 'application/json');
        const [columnsStatus, columnsType, columns] = await ask(body, COLUMNS_MEDIA_TYPE);
        const columnsAreColumns = !Array.isArray(columns.nodes);
        const decoded = decodeColumns(columns);
        results.push({
            name, status, columnsStatus, type, columnsType,
            nodes: json.nodes?.length, columnsAreColumns,
            same: same(decoded, json),
            // and written out again, the same text: the JSON record's field order too (the page's API JSON export)
            sameText: JSON.stringify(decoded) === JSON.stringify(json),
            // the comparison itself tells a changed number, a missing key and a reordered list apart
            sameTells: !same({ a: [1, 2] }, { a: [1, 3] }) && !same({ a: 1 }, { a: 1, b: 2 }) && !same([1, 2], [2, 1]),
            untouched: !Array.isArray(columns.nodes),  // decodeColumns leaves its argument as it was
        });
    }
    return results;
}"""

EXTRA = [
    ["check, no trace", {"expression": "a = 0\nb = log(a)\nc = b ** 2\nd = c * 0 + a", "check": True, "trace": False}],
    [
        "a posted graph",
        {
            "graph": {
                "nodes": [
                    {"id": 0, "label": "a", "data": 2.0, "grad": 3.0, "children": [], "local_grads": []},
                    {"id": 1, "label": "b", "data": 3.0, "grad": 2.0, "children": [], "local_grads": []},
                    {"id": 2, "op": "*", "data": 6.0, "grad": 1.0, "children": [0, 1], "local_grads": [3.0, 2.0]},
                ],
                "output": 2,
            }
        },
    ],
]


def test_every_example_decodes_to_its_json_answer(page):
    page.goto("/?expression=a%3D1")
    wait_for_graph(page)
    results = page.evaluate(ROUND_TRIP, EXTRA)
    assert len(results) >= 10
    for result in results:
        assert (result["status"], result["columnsStatus"]) == (200, 200), result
        assert result["type"] == "application/json", result
        assert result["columnsType"] == "application/vnd.valuegraph.columns+json", result
        assert result["columnsAreColumns"] and result["untouched"], result
        assert result["nodes"] >= 1, result
        assert result["same"] and result["sameTells"] and result["sameText"], result
