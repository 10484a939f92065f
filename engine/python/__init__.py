"""Python programs for micrograd: a checked subset of Python (parse.py), run by closures
(interpreter.py) over valuegraph's own built-ins (builtins.py) and micrograd's nn module written
in the subset (prelude.py)."""

from .run import PythonRun, run_python

__all__ = ["PythonRun", "run_python"]
