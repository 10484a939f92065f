"""Python programs for micrograd: a checked subset of Python (parse.py), run by closures
(interpreter.py) over valuegraph's own built-ins (builtins.py) and micrograd's nn module written
in the subset (prelude.py)."""

from .run import PythonRun, replay_python, run_python
from .snapshots import Taker

__all__ = ["PythonRun", "Taker", "replay_python", "run_python"]
