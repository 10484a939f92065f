"""What CPython prints for a test's own program, to hold the interpreter's printed lines to."""

import contextlib
import io


def cpython_printed(text: str) -> list[str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(text, "<program>", "exec"), {"__name__": "__main__"})  # the test's own programs
    return printed.getvalue().splitlines()
