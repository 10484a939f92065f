"""Errors as answers: what went wrong, where, in JSON; never a 500 for a bad request."""

import json
import math

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException

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
    """FastAPI's usual 422 body, but safe for the NaN and Infinity a client may send, and for a
    body that is not JSON at all: FastAPI echoes it as bytes, which need not be UTF-8 (a 500
    without the custom encoder)."""
    return json_error(422, jsonable_encoder(error.errors(), custom_encoder={bytes: _text}))


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


async def http_error(request: Request, error: HTTPException) -> Response:
    """FastAPI's answer, with two gaps closed. A body that json.loads rejects with something other
    than a JSONDecodeError (nesting past the recursion limit, bytes that are not UTF-8, an integer
    of more than 4,300 digits) gets FastAPI's bare 400 "There was an error parsing the body": here
    it is the same 422 as any other malformed JSON, saying what is wrong. And a 405 lists every
    method the API documents for the path in Allow (HTTP requires it; Starlette names only
    the first route's)."""
    reason = _unreadable_body(error.__cause__) if error.status_code == 400 else None
    if reason:
        return json_error(422, [{"type": "json_invalid", "loc": ["body"], "msg": f"JSON decode error: {reason}", "input": {}, "ctx": {"error": reason}}])
    if error.status_code == 405 and (methods := _documented_methods(request)):
        error = HTTPException(405, error.detail, headers={**(error.headers or {}), "Allow": ", ".join(sorted(methods))})
    return await http_exception_handler(request, error)


def _unreadable_body(cause: BaseException | None) -> str | None:
    if isinstance(cause, RecursionError):
        return "the body nests arrays or objects too deeply"
    if isinstance(cause, UnicodeDecodeError):
        return "the body is not UTF-8 text"
    if isinstance(cause, ValueError):  # json.loads's other ValueErrors are the two above
        return "a number in the body has too many digits"
    return None


def _documented_methods(request: Request) -> set[str]:
    """The methods the OpenAPI schema gives for this exact path (none for pages and static files)."""
    operations = request.app.openapi()["paths"].get(request.scope["path"], {})
    return {method.upper() for method in operations}


def register_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ProgramError, program_error)
    app.add_exception_handler(TimeBudgetExceeded, time_budget_exceeded)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(HTTPException, http_error)
