"""Spans, tokens and the syntax tree the parser builds."""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    offset: int  # 0-based character offset of the first character
    line: int  # 1-based
    column: int  # 1-based, in characters
    end: int  # offset just past the last character


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "number", "name", "op" (operators and punctuation), "end" (newline, ';', end of text)
    text: str
    span: Span


@dataclass(frozen=True, slots=True)
class Number:
    value: float
    span: Span


@dataclass(frozen=True, slots=True)
class Name:
    name: str
    span: Span


@dataclass(frozen=True, slots=True)
class Unary:
    op: str  # "-" or "+"
    operand: object
    span: Span


@dataclass(frozen=True, slots=True)
class Binary:
    op: str  # "+", "-", "*", "/" or "**"
    left: object
    right: object
    span: Span  # the operator


@dataclass(frozen=True, slots=True)
class Call:
    function: str
    args: tuple
    span: Span  # the function's name


@dataclass(frozen=True, slots=True)
class Statement:
    target: str | None  # the assigned name, or None for a bare expression
    expr: object
    span: Span


@dataclass(frozen=True, slots=True)
class Program:
    statements: tuple
