"""The graph after its backward pass as one still SVG picture, written without a browser: what a
notebook output carries beside its interactive walk (image/svg+xml), for the places that run no
script, GitHub's and VS Code's previews, nbviewer, nbconvert to PDF.

The positions are the page's: the server's layout (rank, row) mapped to pixels with the sizes of
static/js/layout.js's full records (left to right), one micrograd record per node (name | data |
grad), its operation in a circle before it, each edge from a child's record to its parent's circle
through the layout's bends. The names are the page's too (format.js's nodeName): the label, else
the code that made the node, else #id. A gradient check (a learner's own class) shows as the page
shows it: its message above the graph, and under each node it finds wrong a ✗ and "yours: 3,
expected: 4" (format.js's checkNote).
"""

import math
from html import escape

RECORD_WIDTH, RECORD_HEIGHT = 200, 48
CELLS = (56, 72, 72)  # name | data | grad
OP_RADIUS, OP_GAP = 16, 14
EDGE_ROOM, ACROSS = 100, 30  # free space along the flow, and between neighbours in a column
MARGIN = 12
NAME_CHARS = 7  # a longer name is cut with "…" (the interactive page shows it whole)

RANK_PITCH = 2 * OP_RADIUS + OP_GAP + RECORD_WIDTH + EDGE_ROOM
ROW_PITCH = RECORD_HEIGHT + ACROSS

STYLE = (
    "text{font:12px system-ui,sans-serif;fill:#1f2328}"
    ".n rect{fill:#fff;stroke:#57606a;stroke-width:1.2}.c rect{stroke-dasharray:4 3}"
    ".o rect{stroke:#1f2328;stroke-width:2.2}line{stroke:#8c959f}"
    "circle{fill:#f6f8fa;stroke:#57606a}path{fill:none;stroke:#8c959f;stroke-width:1.4}"
    ".g{fill:#0969da}.l{font-weight:600}"
    ".w rect{stroke:#b3261e;stroke-width:2.4;stroke-dasharray:9 3}.x{fill:#b3261e;font-weight:600}"
)
MESSAGE_ROOM = 24  # above the graph, for the gradient check's message


def shown_number(x: float) -> str:
    """As the page writes it (format.js's formatNumber): 2 not 2.0, five significant digits, ∞."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x == int(x) and abs(x) < 1e6:
        return str(int(x))
    if 1e-4 <= abs(x) < 1e6:
        return f"{float(f'{x:.5g}'):g}"
    mantissa, exponent = f"{x:.4e}".split("e")
    return f"{float(mantissa):g}e{int(exponent)}"


def node_name(node: dict) -> str:
    return node["label"] or node["expr"] or f"#{node['id']}"


def check_notes(response: dict) -> dict:
    """{id: what the gradient check says is wrong there}, as format.js's checkNote words it."""
    check = response.get("gradient_check")
    if not check:
        return {}
    nodes, wrong = response["nodes"], set(check["wrong"])
    problems = {}
    for problem in check["local"]:
        problems.setdefault(problem["node"], problem)
    notes = {}
    for node_id in sorted(wrong | set(problems)):
        said = []
        if node_id in wrong:
            node = nodes[node_id]
            said.append(f"yours: {shown_number(node['grad'])}, expected: {shown_number(node['expected_grad'])}")
        if node_id in problems:
            problem = problems[node_id]
            said.append(
                f"local gradient: yours: {shown_number(problem['stored'])}, "
                f"expected: {shown_number(problem['expected'])}"
            )
        notes[node_id] = "; ".join(said)
    return notes


def graph_svg(response: dict, title: str = "valuegraph") -> str:
    """The SVG document for a POST /backward answer that has its layout."""
    nodes, layout = response["nodes"], response["layout"]
    place = {item["id"]: (item["rank"], item["row"]) for item in layout["nodes"]}
    check = response.get("gradient_check")
    notes = check_notes(response)
    top = MARGIN + (MESSAGE_ROOM if check else 0)
    width = max(1, layout["ranks"]) * RANK_PITCH - EDGE_ROOM + 2 * MARGIN
    height = max(0, layout["rows"] - 1) * ROW_PITCH + RECORD_HEIGHT + top + MARGIN + (ACROSS if notes else 0)

    def record_left(rank):
        return MARGIN + rank * RANK_PITCH + 2 * OP_RADIUS + OP_GAP

    def centre(row):
        return top + row * ROW_PITCH + RECORD_HEIGHT / 2

    parts = []
    if check:
        mark = {"ok": "✓ ", "wrong": "✗ ", "no_backward": "○ "}.get(check["status"], "")
        parts.append(f'<text class="x" x="{MARGIN}" y="{MARGIN + 12}">{escape(mark + check["message"])}</text>')
    for edge in layout["edges"]:
        child_rank, child_row = place[edge["child"]]
        parent_rank, parent_row = place[edge["parent"]]
        points = [(record_left(child_rank) + RECORD_WIDTH, centre(child_row))]
        points += [(record_left(rank) + RECORD_WIDTH / 2, centre(row)) for rank, row in edge["bends"]]
        points.append((record_left(parent_rank) - OP_GAP - 2 * OP_RADIUS, centre(parent_row)))
        parts.append(f'<path d="{_curve(points)}"/>')
    output = response["output"]
    for node in nodes:
        rank, row = place[node["id"]]
        x, y = record_left(rank), centre(row) - RECORD_HEIGHT / 2
        kind = "o" if node["id"] == output else "c" if node["op"] is None and node["label"] is None else "v"
        note = notes.get(node["id"])
        if note is not None:
            kind += " w"
            note = (
                f'<text class="x" x="{x + RECORD_WIDTH:g}" y="{y + RECORD_HEIGHT + 16:g}" text-anchor="end">'
                f"✗ {escape(note)}</text>"
            )
        name = node_name(node)
        shown = name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"
        cells = [
            f'<text class="l" x="{x + CELLS[0] / 2:g}" y="{y + 29:g}" text-anchor="middle">{escape(shown)}</text>',
            _cell(x + CELLS[0] + 6, y + 29, f"data {shown_number(node['data'])}", CELLS[1] - 10),
            _cell(
                x + CELLS[0] + CELLS[1] + 6, y + 29, f"grad {shown_number(node['grad'])}", CELLS[2] - 10, ' class="g"'
            ),
        ]
        dividers = "".join(
            f'<line x1="{x + at:g}" y1="{y:g}" x2="{x + at:g}" y2="{y + RECORD_HEIGHT:g}"/>'
            for at in (CELLS[0], CELLS[0] + CELLS[1])
        )
        op = ""
        if node["op"] is not None:
            cx = x - OP_GAP - OP_RADIUS
            symbol = f"**{shown_number(node['exponent'])}" if node["op"] == "**" else node["op"]
            middle = y + RECORD_HEIGHT / 2
            op = (
                f'<line x1="{cx + OP_RADIUS:g}" y1="{middle:g}" x2="{x:g}" y2="{middle:g}"/>'
                f'<circle cx="{cx:g}" cy="{middle:g}" r="{OP_RADIUS}"/>'
                f'<text x="{cx:g}" y="{middle + 4:g}" text-anchor="middle">{escape(symbol)}</text>'
            )
        parts.append(
            f'<g class="n {kind}"><title>{escape(name)}</title>'
            f'<rect x="{x:g}" y="{y:g}" width="{RECORD_WIDTH}" height="{RECORD_HEIGHT}" rx="4"/>'
            f"{dividers}{''.join(cells)}{op}{note or ''}</g>"
        )
    label = f"{title}: the graph of {node_name(nodes[output])} ({len(nodes)} nodes) after its backward pass"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:g} {height:g}" width="{width:g}" '
        f'height="{height:g}" role="img" aria-label="{escape(label)}"><title>{escape(label)}</title>'
        f'<style>{STYLE}</style><rect width="100%" height="100%" fill="#fff"/>{"".join(parts)}</svg>'
    )


def _cell(x, y, text, room, attributes="") -> str:
    """A cell's text, squeezed into its room where it is longer (about 6.5 px a character at 12 px)."""
    fit = f' textLength="{room}" lengthAdjust="spacingAndGlyphs"' if len(text) * 6.5 > room else ""
    return f'<text{attributes} x="{x:g}" y="{y:g}"{fit}>{escape(text)}</text>'


def _curve(points) -> str:
    """Through the points left to right, each stretch an S-curve that leaves and arrives level."""
    (x0, y0), *rest = points
    d = [f"M{x0:g},{y0:g}"]
    for x1, y1 in rest:
        middle = (x0 + x1) / 2
        d.append(f"C{middle:g},{y0:g} {middle:g},{y1:g} {x1:g},{y1:g}")
        x0, y0 = x1, y1
    return "".join(d)
