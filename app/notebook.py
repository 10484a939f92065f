"""valuegraph in Jupyter, for a graph built in Python:

    from engine import Value
    from app.notebook import show, export

    a = Value(2.0, label="a"); b = Value(3.0, label="b")
    L = a * b + a; L.label = "L"
    show(L)                      # the interactive walk, inline, no server
    export(L, "lesson.html")     # the same as one self-contained file

    show('''x = Value(2.0)           # or a program's text (the shorthand or Python for micrograd),
    y = (x * 3).tanh()           # shown beside its graph; seed= and run= as in the API
    y.backward()''', run=0)

show() and export() also take a graph of PyPI micrograd's Values or of the course's (see
app.interop: local gradients derived where the object does not store them).

The output is the self-contained file (app.export.standalone) inside an iframe's srcdoc, so
its script runs in a document of its own, apart from the notebook's page and its other outputs.
"""

import hashlib
import html
import json
import sys
import uuid
from functools import cache
from pathlib import Path

from engine import Limits

from . import schemas
from .export.options import EmbedOptions
from .export.standalone import page_assets, standalone_html
from .interop import MICROGRAD_ORDER_NOTE, as_engine_value, held_names, kind_of
from .service import exported, exported_graph
from .still import graph_svg

DEFAULT_HEIGHT = 720

# The page's code (styles, D3, the bundled script: ~570 KB) is the same in every output. The first
# output a kernel shows carries it once, as JSON under the id PAGE_KEY in the notebook's document;
# every output carries only its own document with the code cut out at these markers, and a small
# loader that puts the code back and opens the walk in a sandboxed iframe. Where scripts do not run
# or the code is not found, the output's still picture stays.
PAGE_PARTS = ("css", "d3", "bundle")
MARKER = "\ue000valuegraph-{}\ue000"  # private-use characters: in no asset, no program, no JSON we write
LOADER = """(function () {
  var out = document.getElementById(%(out)s), key = %(key)s, height = %(height)d;
  var waiting = (window[key + "-waiting"] = window[key + "-waiting"] || []);
  function open() {
    var page = document.getElementById(key);
    if (!page || !out.isConnected) return !out.isConnected;
    var parts = JSON.parse(page.textContent);
    var html = JSON.parse(out.querySelector("script[data-vg-document]").textContent);
    for (var name in parts) html = html.split(%(marker_start)s + name + %(marker_end)s).join(parts[name]);
    var frame = document.createElement("iframe");
    frame.title = "valuegraph";
    frame.setAttribute("sandbox", "allow-scripts allow-downloads");
    frame.style.cssText = "width: 100%%; height: " + height + "px; border: 0";
    frame.srcdoc = html;
    out.querySelector("[data-vg-still]").replaceWith(frame);
    return true;
  }
  if (!open()) waiting.push(open);
  if (document.getElementById(key)) waiting.splice(0).forEach(function (later) { if (!later()) waiting.push(later); });
})();"""

_carried = set()  # the PAGE_KEYs this kernel's outputs have carried


@cache
def page_key() -> str:
    """Names this version of the page's code, so that outputs of two versions do not mix."""
    digest = hashlib.sha256("".join(page_assets()[part] for part in PAGE_PARTS).encode()).hexdigest()
    return f"valuegraph-page-{digest[:16]}"


def _json_in_script(value) -> str:
    # Inside <script type="application/json">, no "<" at all: nothing can end the element early.
    return json.dumps(value, ensure_ascii=False).replace("<", "\\u003c")


class Visualiser:
    """What show() returns: Jupyter displays it through _repr_mimebundle_ (the interactive walk as
    text/html, the still picture as image/svg+xml, a line of text/plain); save() writes the file.
    With `carry_page` its HTML carries the page's code for the outputs after it (see PAGE_KEY)."""

    def __init__(
        self, document: str, height: int = DEFAULT_HEIGHT, note: str | None = None, still: str = "", carry_page=True
    ):
        self.document = document
        self.height = height
        self.note = note
        self.still = still
        self.carry_page = carry_page

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        bundle = {"text/html": self._repr_html_(), "text/plain": "valuegraph: " + (self.note or "the graph's walk")}
        if self.still:
            bundle["image/svg+xml"] = self.still
        return bundle

    def _repr_html_(self) -> str:
        assets, key = page_assets(), page_key()
        document = self.document
        for part in PAGE_PARTS:
            document = document.replace(assets[part], MARKER.format(part), 1)
        out = f"valuegraph-output-{uuid.uuid4().hex}"
        note = f"<p>{html.escape(self.note)}</p>" if self.note else ""
        page = ""
        if self.carry_page:
            parts = {part: str(assets[part]) for part in PAGE_PARTS}
            page = f'<script type="application/json" id="{key}">{_json_in_script(parts)}</script>'
        start, end = MARKER.split("{}")
        loader = LOADER % {
            "out": json.dumps(out),
            "key": json.dumps(key),
            "height": int(self.height),
            "marker_start": json.dumps(start),
            "marker_end": json.dumps(end),
        }
        return (
            f'<div class="valuegraph-output" id="{out}">{note}<div data-vg-still>{self.still}</div>{page}'
            f'<script type="application/json" data-vg-document>{_json_in_script(document)}</script>'
            f"<script>{loader}</script></div>"
        )

    def save(self, path) -> Path:
        path = Path(path)
        path.write_text(self.document, encoding="utf-8")
        return path


def _document(
    output, *, variant: str, title: str, names: dict, seed: int = 0, run: int | None = None, **options
) -> tuple[str, str | None, dict]:
    """The file for `output`'s graph (a program's text, or any Value app.interop reads), the note
    it carries and the answer it replays. `names`: {id(value): name} for the values no label names."""
    if isinstance(output, str):  # a program's text: raises engine.ProgramError as the API answers 400
        request = schemas.BackwardRequest.model_construct(expression=output, variant=variant, seed=seed, run=run)
        response = exported(request, Limits())
        options = EmbedOptions(editor="read-only", **options)
        return standalone_html(response, expression=output, options=options, title=title), None, response
    note = MICROGRAD_ORDER_NOTE if kind_of(output) == "micrograd" else None
    response = exported_graph(as_engine_value(output, names), Limits(), variant)
    options = EmbedOptions(editor="hidden", **options)
    return standalone_html(response, options=options, title=title, note=note), note, response


def show(
    output,
    *,
    variant: str = "correct",
    height: int = DEFAULT_HEIGHT,
    title: str = "valuegraph",
    names: dict | None = None,
    alone: bool = False,
    **options,
) -> Visualiser:
    """The walk for `output`'s graph (a Value, or a program's text), for a notebook cell. options:
    seed and run for a Python program's text, and the embed's (stage, step, autoplay, speed,
    controls, theme, table), e.g. show(L, table="shown", stage="propagate").

    A value without a label is called by the caller's variable that holds it (`w`, `xs[0]`,
    `model.layers[0].neurons[1].b`); `names` ({name: value or a container of values}, as torchviz
    takes a params dict) comes first. A value nobody holds is called by its operation on its
    inputs' names (`a*b`).

    The output carries the page's code only if it is the first of this kernel (or `alone`, or in
    Colab, whose outputs cannot see each other): the others take it from that one's, and stay at
    ~20 KB for a small graph instead of ~640 KB. Run a notebook top to bottom before sharing it, so
    that its first output carries the code; where no output does, the still picture shows."""
    document, note, response = _document(
        output, variant=variant, title=title, names=_names(names, sys._getframe(1)), **options
    )
    carry = alone or page_key() not in _carried or "google.colab" in sys.modules
    _carried.add(page_key())
    return Visualiser(document, height, note, graph_svg(response, title), carry)


def export(
    output, path, *, variant: str = "correct", title: str = "valuegraph", names: dict | None = None, **options
) -> Path:
    """Write the self-contained file for `output`'s graph to `path`; returns the path. Values are
    named as show() names them."""
    document, note, _ = _document(
        output, variant=variant, title=title, names=_names(names, sys._getframe(1)), **options
    )
    return Visualiser(document, note=note).save(path)


def _names(given: dict | None, caller) -> dict:
    """{id(value): name}: from `given`, then the caller's local and global variables."""
    namespaces = [caller.f_locals]
    if caller.f_globals is not caller.f_locals:
        namespaces.append(caller.f_globals)
    return {**held_names(*namespaces), **held_names(given or {})}
