"""Errors as answers: what went wrong, where, in JSON; never a 500 for a bad request."""

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic_core import to_json

from engine import ProgramError

from .budget import TimeBudgetExceeded


def json_error(status: int, detail) -> Response:
    # NaN may be echoed back from a body (Python's json reads NaN literals): write it as a string
    return Response(to_json({"detail": detail}, inf_nan_mode="strings", fallback=str), status, media_type="application/json")


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
