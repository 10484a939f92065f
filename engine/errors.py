"""The one error type of the engine: a message a learner understands, and where."""

from .syntax import Span


class ProgramError(Exception):
    def __init__(self, message: str, span: Span):
        super().__init__(message)
        self.message = message
        self.span = span

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def column(self) -> int:
        return self.span.column

    @property
    def offset(self) -> int:
        return self.span.offset

    def __str__(self):
        return f"{self.line}:{self.column}: {self.message}"
