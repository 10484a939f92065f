"""Errors as answers: what went wrong, where, in JSON; never a 500 for a bad request."""

import json
import math

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response

from engine import ProgramError, format_number

from .budget import TimeBudgetExceeded


def json_error(status: int, detail) -> Response:
    """An error body that is always valid JSON, whatever input it echoes: non-finite numbers
    (Python's json reads NaN literals) become strings, and ASCII escapes keep lone surrogates
    (which JSON may carry, but UTF-8 cannot) from breaking the encoder."""
    body = json.dumps({"detail": _finite(detail)}, ensure_ascii=True, allow_nan=False)
    return Response(body, status, media_type="application/json")


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return format_number(value)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


async def program_error(request: Request, error: ProgramError) -> Response:
    return json_error(400, {"message": error.message, "line": error.line, "column": error.column, "offset": error.offset})


async def time_budget_exceeded(request: Request, error: TimeBudgetExceeded) -> Response:
    return json_error(503, {"message": str(error)})


async def validation_error(request: Request, error: RequestValidationError) -> Response:
    """FastAPI's usual 422 body, but safe for the NaN and Infinity a client may send."""
    return json_error(422, jsonable_encoder(error.errors()))


def register_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ProgramError, program_error)
    app.add_exception_handler(TimeBudgetExceeded, time_budget_exceeded)
    app.add_exception_handler(RequestValidationError, validation_error)
