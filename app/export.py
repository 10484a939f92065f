"""The embed's options, and the self-contained HTML file: the embed page with its scripts, styles
and one backward response inlined, so it replays the walk from a file:// URL with no server.

The page's ES modules are joined into one classic script: each module becomes a function scope
that returns its exports, its imports become reads from the modules already run, in dependency
order. A classic script runs under file:// where module imports of other files would not.
"""

import json
import re
import sys
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Mapping

from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup

from engine import Limits

from . import schemas, serialize
from .assets import STATIC_DIR, TEMPLATES_DIR, add_template_globals
from .schemas import DEFAULT_SPEED, PLAYER_SPEEDS
from .service import exported, exported_graph

ENTRY_MODULE = "embed.js"
D3_SCRIPT = "vendor/d3.v7.9.2.min.js"
STYLESHEETS = ("css/valuegraph.css", "css/embed.css", "css/picture.css")

STAGES = ("both", "sort", "propagate")
CONTROLS = ("full", "minimal", "none")
EDITORS = ("shown", "read-only", "hidden")
THEMES = ("auto", "light", "dark")
TABLES = ("hidden", "shown")


@dataclass(frozen=True)
class EmbedOptions:
    """What the embed shows; defaults first in each tuple above. Unknown values take the default."""

    stage: str = "both"
    step: int | None = None
    autoplay: bool = False
    speed: str = f"{DEFAULT_SPEED:g}"
    controls: str = "full"
    editor: str = "shown"
    theme: str = "auto"
    table: str = "hidden"
    variables: str = ""

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> "EmbedOptions":
        def choice(name, allowed):
            value = query.get(name, "")
            return value if value in allowed else allowed[0]

        step = query.get("step", "")
        try:
            speed = float(query.get("speed", DEFAULT_SPEED))
        except ValueError:
            speed = DEFAULT_SPEED
        return cls(
            stage=choice("stage", STAGES),
            step=int(step) if step.isascii() and step.isdigit() and len(step) < 10 else None,
            autoplay=query.get("autoplay", "").lower() in ("1", "true", "yes", "on"),
            speed=f"{speed:g}" if speed in PLAYER_SPEEDS else f"{DEFAULT_SPEED:g}",
            controls=choice("controls", CONTROLS),
            editor=choice("editor", EDITORS),
            theme=choice("theme", THEMES),
            table=choice("table", TABLES),
            variables=query.get("variables", "")[:10_000],
        )


@cache
def template_environment() -> Environment:
    environment = Environment(loader=FileSystemLoader(TEMPLATES_DIR), autoescape=True)
    add_template_globals(environment)
    return environment


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


def script_bundle(entry: str = ENTRY_MODULE, js_dir: Path = STATIC_DIR / "js") -> str:
    """The entry module and everything it imports as one classic script."""
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


def _json_text(value) -> Markup:
    # JSON inside <script type="application/json">: no "<" at all, so no tag can end it.
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, allow_nan=False)
    return Markup(text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _response_text(response) -> str:
    if isinstance(response, bytes):
        return response.decode("utf-8")
    if isinstance(response, str):
        return response
    return serialize.to_json(response).decode("utf-8")


@cache
def page_assets() -> dict[str, Markup]:
    """The styles, D3 and the bundled page script, inlined in every exported file: built once per
    process (bundling the modules cost ~50 ms of CPU per /export/html request)."""
    return {
        "css": Markup(
            "\n".join((STATIC_DIR / path).read_text(encoding="utf-8") for path in STYLESHEETS).replace(
                "</style", "<\\/style"
            )
        ),
        "d3": _script_text((STATIC_DIR / D3_SCRIPT).read_text(encoding="utf-8")),
        "bundle": _script_text(script_bundle()),
    }


def standalone_html(
    response,
    *,
    expression: str = "",
    variables: str = "",
    options: EmbedOptions | None = None,
    title: str = "valuegraph",
    scorm: bool = False,
    note: str | None = None,
) -> str:
    """A complete HTML document replaying `response` (a POST /backward answer with its trace and
    layout: a record, or its JSON) with the page's controls, needing no server and no network.
    `expression` and `variables` are shown in the editor, which is read-only (nothing can rerun).
    With `scorm` it reports to a SCORM 1.2 platform (static/js/scorm.js; app/scorm.py packages it).
    `note`, if any, is shown above the graph (as text)."""
    options = options or EmbedOptions()
    if options.editor == "shown":
        options = replace(options, editor="read-only")
    data = (
        '{"expression": '
        + json.dumps(expression)
        + ', "variables": '
        + json.dumps(variables)
        + ', "response": '
        + _response_text(response)
        + "}"
    )
    inline = {**page_assets(), "data": _json_text(data)}
    template = template_environment().get_template("embed.html")
    return template.render(options=options, inline=inline, title=title, scorm=scorm, note=note)


def variables_text(variables: Mapping[str, float]) -> str:
    """Variables as a person writes them, for the file's editor: 3, not 3.0 (repr keeps every digit of the rest)."""
    return ", ".join(
        f"{name} = {int(value) if float(value).is_integer() else value!r}" for name, value in variables.items()
    )


def request_html(
    request: schemas.BackwardRequest, limits: Limits, options: EmbedOptions, title: str = "valuegraph", scorm=False
) -> str:
    """The self-contained file replaying a request's program (its seed, run and variables included)."""
    return standalone_html(
        exported(request, limits),
        expression=request.expression or "",  # a posted graph has no program to show
        variables=variables_text(request.variables),
        options=options,
        title=title,
        scorm=scorm,
    )


def response_json(response: dict) -> str:
    """The wire format's JSON text (non-finite numbers as strings)."""
    return serialize.to_json(response).decode("utf-8")


# ---- images through a headless browser, and the `valuegraph export` command ----

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
IMAGE_KINDS = ("svg", "png")


class ExportError(Exception):
    """An export that cannot be made here (no browser), with the reason to show."""


def render_image(html: str, kind: str, step: int | None = None) -> bytes:
    """The graph of a standalone file as SVG or PNG, at `step` (default: the end of the walk),
    drawn by headless Chromium through Playwright."""
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError as error:
        raise ExportError(
            "SVG and PNG export need Playwright: pip install playwright (and Chromium at /usr/bin/chromium)"
        ) from error
    if not Path(CHROMIUM).exists():
        raise ExportError(f"SVG and PNG export need Chromium at {CHROMIUM} (Debian: apt-get install chromium)")
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.route("**/*", lambda route: route.abort())  # the file needs nothing from outside
                page.set_content(html)
                page.wait_for_function(
                    "() => document.querySelectorAll('[data-node-id]').length > 0 && window.valuegraphExport"
                )
                target = "document.querySelector('[data-vg=\"scrubber\"]').max" if step is None else str(int(step))
                page.evaluate(
                    f"() => {{ const s = document.querySelector('[data-vg=\"scrubber\"]'); s.value = {target}; "
                    "s.dispatchEvent(new Event('input')); }"
                )
                page.wait_for_timeout(50)
                if kind == "svg":
                    return page.evaluate("() => window.valuegraphExport.svg()").encode("utf-8")
                import base64

                return base64.b64decode(page.evaluate("() => window.valuegraphExport.png()"))
            finally:
                browser.close()
    except PlaywrightError as error:
        raise ExportError(f"the browser could not draw the graph: {error.message.splitlines()[0]}") from error


def read_program(source: str, stdin=None) -> str:
    """The program: `-` reads stdin, an existing file's path reads the file, anything else is the text."""
    if source == "-":
        return (stdin or sys.stdin).read()
    path = Path(source)
    try:
        if len(source) < 4096 and "\n" not in source and path.is_file():
            return path.read_text(encoding="utf-8")
    except OSError:
        pass
    return source


def add_export_arguments(parser) -> None:
    parser.add_argument("program", nargs="?", help="the program's text, a file holding it, or - for stdin")
    parser.add_argument(
        "--graph",
        metavar="MODULE:NAME",
        help="instead of a program, a Value built in Python: NAME in the module MODULE, imported from the current "
        "directory (it runs, as `python -c 'import MODULE'` would); valuegraph's, PyPI micrograd's or the course's "
        "Value",
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        help="the file to write: .html (self-contained), .json (the API's answer), .svg or .png (the graph)",
    )
    parser.add_argument(
        "--variant",
        default="correct",
        help="the backward walk: correct (default), no-visited-check, assign, no-topological-order",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="Python programs: the seed of their random module (default: %(default)s)"
    )
    parser.add_argument(
        "--run",
        dest="backward_run",
        type=int,
        default=None,
        help="Python programs: which backward() call to show, from 0 (default: the last)",
    )
    parser.add_argument(
        "--step",
        type=int,
        default=None,
        help="the step the file opens at, or the image shows (default: the start; images: the end)",
    )
    for name, allowed in (("stage", STAGES), ("controls", CONTROLS), ("theme", THEMES), ("table", TABLES)):
        parser.add_argument(
            f"--{name}", choices=allowed, default=allowed[0], help=f"the file's {name} option (default: %(default)s)"
        )


def export_command(args) -> int:
    from engine import VARIANTS, ProgramError

    output = Path(args.output)
    kind = output.suffix.lower().lstrip(".")
    if kind not in ("html", "htm", "json", *IMAGE_KINDS):
        raise SystemExit(f"valuegraph export: cannot write {output.name!r}: use .html, .json, .svg or .png")
    if args.variant not in VARIANTS:
        raise SystemExit(f"valuegraph export: unknown variant {args.variant!r} (one of {', '.join(VARIANTS)})")
    if (args.program is None) == (args.graph is None):
        raise SystemExit("valuegraph export: give a program or --graph MODULE:NAME (one of the two)")
    note = None
    if args.graph:
        program = ""
        response, note = _response_for_graph(args.graph, args.variant)
        if note:
            print(f"valuegraph export: {note}", file=sys.stderr)
    else:
        program = read_program(args.program)
        try:
            request = schemas.BackwardRequest.model_construct(
                expression=program, variables={}, variant=args.variant, seed=args.seed, run=args.backward_run
            )  # args.run is the subcommand
            response = exported(request, Limits())
        except ProgramError as error:
            raise SystemExit(f"valuegraph export: line {error.line}, column {error.column}: {error.message}")
    if kind == "json":
        output.write_text(response_json(response), encoding="utf-8")
        return 0
    editor = "hidden" if args.graph else "read-only"  # a Python graph has no program text
    options = EmbedOptions(
        stage=args.stage,
        controls=args.controls,
        theme=args.theme,
        table=args.table,
        step=args.step if kind in ("html", "htm") else None,
        editor=editor,
    )
    html = standalone_html(response, expression=program, options=options, note=note)
    if kind in IMAGE_KINDS:
        try:
            output.write_bytes(render_image(html, kind, args.step))
        except ExportError as error:
            raise SystemExit(f"valuegraph export: {error}")
        return 0
    output.write_text(html, encoding="utf-8")
    return 0


def _response_for_graph(reference: str, variant: str) -> tuple[dict, str | None]:
    """The answer for the Value at MODULE:NAME (see --graph), and the note its kind carries."""
    import importlib
    import os

    from .interop import MICROGRAD_ORDER_NOTE, GraphMismatch, as_engine_value, kind_of

    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise SystemExit(f"valuegraph export: --graph takes MODULE:NAME, such as mymodel:loss, not {reference!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found = importlib.import_module(module_name)
    except ImportError as error:
        raise SystemExit(f"valuegraph export: cannot import {module_name!r}: {error}") from None
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise SystemExit(f"valuegraph export: {module_name} has no {attribute!r}")
        found = getattr(found, part)
    try:
        note = MICROGRAD_ORDER_NOTE if kind_of(found) == "micrograd" else None
        return exported_graph(as_engine_value(found), Limits(), variant), note
    except (TypeError, GraphMismatch) as error:
        raise SystemExit(f"valuegraph export: {reference}: {error}") from None
