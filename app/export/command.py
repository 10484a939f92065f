"""`valuegraph export`: a program's walk (or a graph built in Python) to a self-contained .html,
the API's .json, or an .svg or .png of the graph."""

import importlib
import os
import sys
from pathlib import Path

from engine import VARIANTS, Limits, ProgramError

from .. import schemas
from ..interop import MICROGRAD_ORDER_NOTE, GraphMismatch, as_engine_value, held_names, kind_of
from ..service import exported, exported_graph
from .images import IMAGE_KINDS, ExportError, render_image
from .options import CONTROLS, STAGES, TABLES, THEMES, EmbedOptions
from .standalone import response_json, standalone_html


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
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise SystemExit(f"valuegraph export: --graph takes MODULE:NAME, such as mymodel:loss, not {reference!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found = module = importlib.import_module(module_name)
    except ImportError as error:
        raise SystemExit(f"valuegraph export: cannot import {module_name!r}: {error}") from None
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise SystemExit(f"valuegraph export: {module_name} has no {attribute!r}")
        found = getattr(found, part)
    try:
        note = MICROGRAD_ORDER_NOTE if kind_of(found) == "micrograd" else None
        names = held_names(vars(module))  # a value without a label goes by the module's variable that holds it
        return exported_graph(as_engine_value(found, names), Limits(), variant), note
    except (TypeError, GraphMismatch) as error:
        raise SystemExit(f"valuegraph export: {reference}: {error}") from None
