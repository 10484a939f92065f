"""Spans, tokens and the syntax tree the parser builds.

Named tuples rather than dataclasses: a long program makes hundreds of thousands of them, and
tuples are cheaper to build and mostly invisible to the garbage collector."""

from typing import NamedTuple


class Span(NamedTuple):
    offset: int  # 0-based character offset of the first character
    line: int  # 1-based
    column: int  # 1-based, in characters
    end: int  # offset just past the last character


class Token(NamedTuple):
    kind: str  # "number", "name", "op" (operators and punctuation), "end" (newline, ';', end of text)
    text: str
    span: Span


class Number(NamedTuple):
    value: float
    span: Span


class Name(NamedTuple):
    name: str
    span: Span


class Unary(NamedTuple):
    op: str  # "-" or "+"
    operand: object
    span: Span


class Binary(NamedTuple):
    op: str  # "+", "-", "*", "/" or "**"
    left: object
    right: object
    span: Span  # the operator


class Call(NamedTuple):
    function: str
    args: tuple
    span: Span  # the function's name


class Statement(NamedTuple):
    target: str | None  # the assigned name, or None for a bare expression
    expr: object
    span: Span


class Program(NamedTuple):
    statements: tuple
