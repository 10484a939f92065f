"""valuegraph's engine: micrograd-style scalar autograd, a small expression language that
builds its graphs, Python written for micrograd (engine.python), the step-by-step trace of the
backward pass, and the nudge test.
Standard library only; nothing here knows about the web."""

from .errors import ProgramError
from .evaluate import FUNCTIONS, evaluate
from .limits import Limits
from .nudge import DEFAULT_NUDGE, measure_gradient, measure_leaf_gradients
from .parser import parse
from .program import ProgramRun, is_python, replay_program, run_program
from .syntax import Span
from .trace import VARIANTS, Trace, format_number, trace
from .value import Value

__all__ = [
    "DEFAULT_NUDGE",
    "FUNCTIONS",
    "Limits",
    "ProgramError",
    "Span",
    "Trace",
    "VARIANTS",
    "Value",
    "ProgramRun",
    "evaluate",
    "format_number",
    "is_python",
    "measure_gradient",
    "measure_leaf_gradients",
    "parse",
    "replay_program",
    "run_program",
    "trace",
]
