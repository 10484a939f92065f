"""Spans, and the program the parser hands the evaluator.

A long program makes hundreds of thousands of tokens and steps, so both are plain tuples (a named
tuple's constructor is a Python function, and reading its fields by name is slower than unpacking):

    token: (kind, text, start, end), kind one of "number", "name", "op" (operators and punctuation),
           "end" (newline or ';') and "eof"; start and end are character offsets, end exclusive.
    step:  (action, argument, offset, start, end), one per operand or operation of an expression,
           in postfix order (operands before the operation that combines them):
             NUMBER  the number's value            NAME   the name
             BINARY  "+", "-", "*", "/" or "**"     UNARY  "-" or "+"
             CALL    (the function's name, the number of arguments)
           offset is where the step's own token starts (the number, the name, the operator, the
           function's name), which is where an error in it is reported; start and end are the
           offsets the whole expression the step computes spans, parentheses around it excluded.

Line and column are not kept: an error computes them from the source with place().
"""

from typing import NamedTuple

NUMBER, NAME, BINARY, UNARY, CALL = "number", "name", "binary", "unary", "call"


class Span(NamedTuple):
    offset: int  # 0-based character offset of the first character
    line: int  # 1-based
    column: int  # 1-based, in characters
    end: int  # offset just past the last character


def place(source: str, start: int, end: int) -> Span:
    """The Span of source[start:end]: its line and column counted from the newlines before it."""
    line_start = source.rfind("\n", 0, start) + 1
    return Span(start, source.count("\n", 0, start) + 1, start - line_start + 1, end)


NO_ORIGIN = (None, "", ())  # (span, expr, scope) of a node no program text made
WHOLE_PROGRAM = Span(0, 1, 1, 0)  # the place of an error about the program as a whole


class Statement(NamedTuple):
    target: str | None  # the assigned name, or None for a bare expression
    steps: tuple  # the expression, as steps in postfix order (see above); the last one is its value
    start: int  # offset of the statement's first token


class Program(NamedTuple):
    statements: tuple
    source: str  # the text the offsets point into
