"""The self-contained HTML file: the embed page with its scripts, styles and one backward response
inlined, so it replays the walk from a file:// URL with no server. The SCORM lesson and the
notebook's output are this file too.

The page's ES modules are joined into one classic script: each module becomes a function scope
that returns its exports, its imports become reads from the modules already run, in dependency
order. A classic script runs under file:// where module imports of other files would not.
"""

import base64
import hashlib
import json
import re
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Mapping

from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup
from starlette.exceptions import HTTPException

from engine import Limits, ProgramError
from engine.syntax import WHOLE_PROGRAM

from .. import schemas, serialize
from ..assets import STATIC_DIR, TEMPLATES_DIR, add_template_globals
from ..layout import layout_graph
from ..service import EXPORTED, answer, answer_json
from .options import EmbedOptions

SHOWN_CODE = ("typescript", "javascript")  # languages whose code a file shows beside the graph it made


@cache
def template_environment() -> Environment:
    environment = Environment(loader=FileSystemLoader(TEMPLATES_DIR), autoescape=True)
    add_template_globals(environment)
    return environment


@cache
def embed_files() -> tuple[tuple[str, ...], str, str]:
    """What the file inlines, read from the one list the live embed links (templates/macros.html):
    its stylesheets, D3, and the entry module (with everything it imports)."""
    listed = template_environment().get_template("macros.html").module
    return tuple(listed.embed_stylesheets), listed.d3_script, listed.embed_entry


_IMPORT = re.compile(
    r'^import\s+(?:(?P<default>\w+)|\{(?P<names>[^}]*)\})\s+from\s+"\./(?P<module>[\w-]+\.js)";[ \t]*$', re.M
)
_EXPORT_DECLARATION = re.compile(r"^export\s+((?:async\s+)?(?:function\*?|class|const|let)\s+(\w+))", re.M)
_EXPORT_DEFAULT = re.compile(r"^export\s+default\s+(\w+);[ \t]*$", re.M)
_LEFTOVER = re.compile(r"^\s*(?:import|export)\b[^(.]", re.M)


def _module_function(name: str, source: str) -> tuple[str, list[str]]:
    """One module as `function () {...; return {exports}}`, and the modules it imports."""
    imports = []

    def bind(match: re.Match) -> str:
        imports.append(match["module"])
        source_of = f'modules["{match["module"]}"]'
        if match["default"]:
            return f"const {match['default']} = {source_of}.default;"
        names = [part.strip() for part in match["names"].split(",") if part.strip()]
        renamed = [part.replace(" as ", ": ") for part in names]
        return f"const {{ {', '.join(renamed)} }} = {source_of};"

    exported = []

    def declare(match: re.Match) -> str:
        exported.append(match[2])
        return match[1]

    def default(match: re.Match) -> str:
        exported.append(f"default: {match[1]}")
        return ""

    body = _IMPORT.sub(bind, source)
    body = _EXPORT_DECLARATION.sub(declare, body)
    body = _EXPORT_DEFAULT.sub(default, body)
    leftover = _LEFTOVER.search(body)
    if leftover:
        raise ValueError(f"{name}: cannot bundle the statement at {leftover.group(0)!r}")
    return f"function () {{\n{body}\nreturn {{ {', '.join(exported)} }};\n}}", imports


def script_bundle(entry: str | None = None, js_dir: Path = STATIC_DIR / "js") -> str:
    """The entry module (the embed's, unless named) and everything it imports as one classic script."""
    entry = entry or Path(embed_files()[2]).name
    functions, order, visiting = {}, [], set()

    def visit(name: str):
        if name in functions:
            return
        if name in visiting:
            raise ValueError(f"import cycle through {name}")
        visiting.add(name)
        function, imports = _module_function(name, (js_dir / name).read_text(encoding="utf-8"))
        for imported in imports:
            visit(imported)
        functions[name] = function
        order.append(name)

    visit(entry)
    parts = [f'modules["{name}"] = ({functions[name]})();' for name in order]
    return '(function () {\n"use strict";\nconst modules = {};\n' + "\n".join(parts) + "\n})();\n"


def _script_text(text: str) -> Markup:
    # Inside <script>, only "</script" (any case) ends the element early; "<\/" means the same in JS.
    return Markup(re.sub(r"</(script)", r"<\\/\1", text, flags=re.I))


# Where the data goes in the rendered page: it holds "<", which no escaped text has, and NUL, which no asset has.
DATA_MARK = "<\0valuegraph data\0>"
JSON_WINDOW = 1 << 20  # bytes of the data escaped at a time


def _escaped_json(data: bytes):
    """JSON inside <script type="application/json">: no "<" at all, so no tag can end it, and
    U+2028/U+2029 escaped as well. A window at a time: each step short, never one pass over a
    large answer (a stopped request ends at the next; see app.budget)."""
    start = 0
    while start < len(data):
        end = min(start + JSON_WINDOW, len(data))
        while end < len(data) and data[end] >= 0x80:  # not inside a character's UTF-8 bytes
            end += 1
        yield (
            data[start:end]
            .replace(b"<", b"\\u003c")
            .replace("\u2028".encode(), b"\\u2028")
            .replace("\u2029".encode(), b"\\u2029")
        )
        start = end


def _response_bytes(response) -> bytes:
    if isinstance(response, bytes):
        return response
    if isinstance(response, str):
        return response.encode("utf-8")
    return serialize.to_json(response)


@cache
def page_assets() -> dict[str, Markup]:
    """The styles, D3 and the bundled page script, inlined in every exported file: built once per
    process (bundling the modules cost ~50 ms of CPU per /export/html request)."""
    stylesheets, d3_script, _ = embed_files()
    d3, bundle = _script_text((STATIC_DIR / d3_script).read_text(encoding="utf-8")), _script_text(script_bundle())
    return {
        "csp": content_security_policy([d3, bundle]),
        "css": Markup(
            "\n".join((STATIC_DIR / path).read_text(encoding="utf-8") for path in stylesheets).replace(
                "</style", "<\\/style"
            )
        ),
        "d3": d3,
        "bundle": bundle,
    }


def content_security_policy(scripts: list[str]) -> str:
    """The file's own CSP (a <meta>, as a file has no headers): only its two inline scripts run,
    named by their hashes, and nothing is fetched or sent. A second wall behind the escaping of
    everything the file shows: a script that got in anyway would not run."""
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(script.encode('utf-8')).digest()).decode()}'" for script in scripts
    )
    return (
        f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; img-src data: blob:; "
        "base-uri 'none'; form-action 'none'; object-src 'none'"
    )


def standalone_html(response, **details) -> str:
    """standalone_document(response, ...) as text."""
    return standalone_document(response, **details).decode("utf-8")


def standalone_document(
    response,
    *,
    expression: str = "",
    variables: str = "",
    options: EmbedOptions | None = None,
    title: str = "valuegraph",
    scorm: str = "",
    note: str | None = None,
    language: str | None = None,
    views: list | None = None,
) -> bytes:
    """A complete HTML document (UTF-8) replaying `response` (a POST /backward answer with its trace
    and layout: a record, or its JSON) with the page's controls, needing no server and no network.
    `expression` and `variables` are shown in the editor, which is read-only (nothing can rerun).
    With `scorm` ("1.2" or "2004") it reports to a platform of that SCORM edition (static/js/scorm.js;
    app/scorm.py packages it).
    `note`, if any, is shown above the graph (as text). `language` ("typescript" or "javascript"):
    `expression` is that code, which made the graph; it is shown and never run. `views`: collapsed
    views laid out ({children, layout} each: laid_out_views), which the file opens as the page does.
    The data is joined in as bytes, never decoded, copied through the template or escaped in one pass."""
    options = options or EmbedOptions()
    if options.editor == "shown":
        options = replace(options, editor="read-only")
    template = template_environment().get_template("embed.html")
    inline = {**page_assets(), "data": Markup(DATA_MARK)}
    page = template.render(options=options, inline=inline, title=title, scorm=scorm, note=note)
    head, _, tail = page.partition(DATA_MARK)
    shown_language = f', "language": {json.dumps(language)}' if language else ""
    shown_views = f', "views": {serialize.to_json(views).decode()}' if views else ""
    opening = (
        f'{{"expression": {json.dumps(expression)}, "variables": {json.dumps(variables)}{shown_language}'
        f'{shown_views}, "response": '
    )
    data = (opening.encode(), _response_bytes(response), b"}")
    return b"".join([head.encode("utf-8"), *(window for part in data for window in _escaped_json(part)), tail.encode()])


def variables_text(variables: Mapping[str, float]) -> str:
    """Variables as a person writes them, for the file's editor: 3, not 3.0 (repr keeps every digit of the rest)."""
    return ", ".join(
        f"{name} = {int(value) if float(value).is_integer() else value!r}" for name, value in variables.items()
    )


def request_document(
    request: schemas.BackwardRequest, limits: Limits, options: EmbedOptions, title: str = "valuegraph", scorm: str = ""
) -> bytes:
    """The self-contained file replaying a request's program (its seed, run and variables included),
    its answer written a chunk of records at a time; or a posted graph with the TypeScript/JavaScript
    `source` that made it (ExportRequest), shown beside it."""
    source = getattr(request, "source", None)
    if source is not None and len(source) > limits.max_source_length:
        raise ProgramError(
            f"source is {len(source):,} characters long; the limit is {limits.max_source_length:,}",
            WHOLE_PROGRAM,
        )
    language = request.graph.language if source is not None and request.graph.language in SHOWN_CODE else None
    views = laid_out_views(getattr(request, "views", []), limits)
    if source is not None:  # as records, to put the lines the page found on the nodes
        placed = answer(request.model_copy(update=EXPORTED), limits)
        _place_nodes(placed, request.graph)
        written, leftovers = placed, None
    else:
        written, leftovers = answer_json(request.model_copy(update=EXPORTED), limits)
    try:
        return standalone_document(
            written,
            expression=request.expression or source or "",  # a posted graph alone has no program to show
            variables=variables_text(request.variables),
            options=options,
            title=title,
            scorm=scorm,
            language=language,
            views=views,
        )
    finally:
        if leftovers is not None:
            leftovers.free()


def laid_out_views(views: list[schemas.LayoutRequest], limits: Limits) -> list[dict]:
    """Each collapsed view the file should open without a server, with the layout POST /layout gives
    it. Together they are held to the node limit, as one graph of POST /layout is (more: 400)."""
    nodes = sum(len(view.children) for view in views)
    if nodes > limits.max_nodes:
        limit = f"{limits.max_nodes:,} (VALUEGRAPH_MAX_NODES)"
        message = f"the views have {nodes:,} nodes together, more than the limit of {limit}"
        raise HTTPException(400, detail={"message": message})
    return [
        {"children": view.children, "layout": layout_graph(view.children, len(view.children) - 1)} for view in views
    ]


SPAN_FIELDS = ("line", "column", "end_line", "end_column")


def _place_nodes(response: dict, graph: schemas.Graph) -> None:
    """The lines the posted nodes were made on (`span`, found by the page from the browser's stacks),
    on the answer's nodes, so the file links each node to its code as the page does. The answer's
    nodes are the posted ones in the same order when every posted node reaches the output (as the
    page posts them); otherwise, and for a span that is not four whole numbers, none is placed."""
    posted = graph.nodes
    if len(posted) != len(response["nodes"]):
        return
    for node, given in zip(response["nodes"], posted):
        span = given.get("span")
        if isinstance(span, dict) and all(type(span.get(name)) is int and span[name] >= 1 for name in SPAN_FIELDS):
            node["span"] = {name: span[name] for name in SPAN_FIELDS}


def response_json(response: dict) -> str:
    """The wire format's JSON text (non-finite numbers as strings)."""
    return serialize.to_json(response).decode("utf-8")
