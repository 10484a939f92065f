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

import html
import sys
from pathlib import Path

from engine import Limits

from . import schemas
from .export.options import EmbedOptions
from .export.standalone import request_html, standalone_html
from .interop import MICROGRAD_ORDER_NOTE, as_engine_value, held_names, kind_of
from .service import exported_graph

DEFAULT_HEIGHT = 720


class Visualiser:
    """What show() returns: Jupyter displays it through _repr_html_."""

    def __init__(self, document: str, height: int = DEFAULT_HEIGHT, note: str | None = None):
        self.document = document
        self.height = height
        self.note = note

    def _repr_html_(self) -> str:
        note = f"<p>{html.escape(self.note)}</p>" if self.note else ""
        return note + (
            f'<iframe srcdoc="{html.escape(self.document, quote=True)}" title="valuegraph" style="width: 100%; height: '
            f'{int(self.height)}px; border: 0" sandbox="allow-scripts allow-downloads"></iframe>'
        )

    def save(self, path) -> Path:
        path = Path(path)
        path.write_text(self.document, encoding="utf-8")
        return path


def _document(
    output, *, variant: str, title: str, names: dict, seed: int = 0, run: int | None = None, **options
) -> tuple[str, str | None]:
    """The file for `output`'s graph (a program's text, or any Value app.interop reads), and the
    note it carries. `names`: {id(value): name} for the values no label names."""
    if isinstance(output, str):  # a program's text: raises engine.ProgramError as the API answers 400
        request = schemas.BackwardRequest.model_construct(expression=output, variant=variant, seed=seed, run=run)
        return request_html(request, Limits(), EmbedOptions(editor="read-only", **options), title), None
    note = MICROGRAD_ORDER_NOTE if kind_of(output) == "micrograd" else None
    response = exported_graph(as_engine_value(output, names), Limits(), variant)
    return standalone_html(response, options=EmbedOptions(editor="hidden", **options), title=title, note=note), note


def show(
    output,
    *,
    variant: str = "correct",
    height: int = DEFAULT_HEIGHT,
    title: str = "valuegraph",
    names: dict | None = None,
    **options,
) -> Visualiser:
    """The walk for `output`'s graph (a Value, or a program's text), for a notebook cell. options:
    seed and run for a Python program's text, and the embed's (stage, step, autoplay, speed,
    controls, theme, table), e.g. show(L, table="shown", stage="propagate").

    A value without a label is called by the caller's variable that holds it (`w`, `xs[0]`,
    `model.layers[0].neurons[1].b`); `names` ({name: value or a container of values}, as torchviz
    takes a params dict) comes first. A value nobody holds is called by its operation on its
    inputs' names (`a*b`)."""
    document, note = _document(output, variant=variant, title=title, names=_names(names, sys._getframe(1)), **options)
    return Visualiser(document, height, note)


def export(
    output, path, *, variant: str = "correct", title: str = "valuegraph", names: dict | None = None, **options
) -> Path:
    """Write the self-contained file for `output`'s graph to `path`; returns the path. Values are
    named as show() names them."""
    document, note = _document(output, variant=variant, title=title, names=_names(names, sys._getframe(1)), **options)
    return Visualiser(document, note=note).save(path)


def _names(given: dict | None, caller) -> dict:
    """{id(value): name}: from `given`, then the caller's local and global variables."""
    namespaces = [caller.f_locals]
    if caller.f_globals is not caller.f_locals:
        namespaces.append(caller.f_globals)
    return {**held_names(*namespaces), **held_names(given or {})}
