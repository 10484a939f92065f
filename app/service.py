"""The one pipeline from a request to its answer: program -> run -> trace -> (nudge test) ->
(layout). Every caller that turns a program into a graph comes here: /backward, the exports, the
embed, Teach live's check of a room's state, the CLI and the notebook helper."""

from typing import NamedTuple

from engine import Limits, ProgramRun, Trace, measure_leaf_gradients, run_program, trace

from . import schemas
from .budget import collector_paused
from .layout import compute_layout
from .serialize import backward_json, backward_response


class Computed(NamedTuple):
    """What the engine made for one request, before it is written: the arguments of
    app.serialize's backward_response and backward_json, in their order."""

    steps: Trace
    measured: dict | None  # {leaf Value: numeric gradient} when the request asked for the check
    layout: dict | None
    include_trace: bool
    program: ProgramRun | None  # None for a graph built in Python

    def response(self) -> schemas.BackwardResponse:
        return backward_response(*self)

    def json(self) -> bytes:
        return backward_json(*self)


def compute(request: schemas.BackwardRequest, limits: Limits) -> Computed:
    """parse -> run -> trace -> (nudge test) -> (layout), as the request asks."""
    program = run_program(request.expression, request.variables, limits, request.seed, request.run)
    steps = trace(program.output, limits, request.variant)  # the syntax tree is freed by now
    measured = measure_leaf_gradients(program.output, request.nudge, limits) if request.check else None
    layout = compute_layout(steps) if request.layout else None
    return Computed(steps, measured, layout, request.trace, program)


def answer(request: schemas.BackwardRequest, limits: Limits) -> schemas.BackwardResponse:
    """The answer as data (rooms, exports), built with the cyclic collector paused."""
    with collector_paused():
        return compute(request, limits).response()
