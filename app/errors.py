"""Errors as answers: what went wrong, where, in JSON; never a 500 for a bad request."""

import json
import math
import re

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from engine import ProgramError, format_number

from .broker import BrokerUnavailable
from .graph import GraphError

ECHO_ITEMS = 10  # members of an echoed object or array; the rest are counted
ECHO_DEPTH = 8  # levels of an echoed object or array; deeper ones become "…"


class JSONAnswer(JSONResponse):
    """The app's JSON answers (FastAPI's default response class): a lone surrogate that a program's text put
    in one (a printed line, a label), which JSON may carry but UTF-8 cannot, is written as its JSON escape
    (\\ud800) instead of failing the answer."""

    def render(self, content) -> bytes:
        text = json.dumps(content, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":"))
        return text.encode("utf-8", "backslashreplace")


def json_error(status: int, detail, headers: dict[str, str] | None = None) -> Response:
    """An error body that is always valid JSON, whatever input it echoes: non-finite numbers
    (Python's json reads NaN literals) become strings, and ASCII escapes keep lone surrogates
    (which JSON may carry, but UTF-8 cannot) from breaking the encoder."""
    body = json.dumps({"detail": json_safe(detail)}, ensure_ascii=True, allow_nan=False)
    return Response(body, status, media_type="application/json", headers=headers)


def json_safe(value, max_length: int | None = None):
    """A copy of `value` that json.dumps can write, built with an explicit stack (an input nested
    1,000 deep is no RecursionError). With max_length, a copy small whatever the input: strings
    cut to max_length characters, containers to ECHO_ITEMS members and ECHO_DEPTH levels."""
    holder = [None]
    pending = [(holder, 0, value, 0)]
    while pending:
        parent, key, item, depth = pending.pop()
        if isinstance(item, float) and not math.isfinite(item):
            item = format_number(item)
        elif isinstance(item, bytes):
            item = _cut(item.decode("utf-8", "replace"), max_length)
        elif isinstance(item, str):
            item = _cut(item, max_length)
        elif isinstance(item, (dict, list, tuple)):
            if max_length is not None and depth >= ECHO_DEPTH:
                item = "…"
            else:
                size = len(item)
                shown = size if max_length is None else min(size, ECHO_ITEMS)
                members = item.items() if isinstance(item, dict) else enumerate(item)
                copy = {} if isinstance(item, dict) else [None] * shown
                for number, (member_key, member) in enumerate(members):
                    if number == shown:
                        break
                    slot = _cut(str(member_key), max_length) if isinstance(copy, dict) else number
                    pending.append((copy, slot, member, depth + 1))
                if shown < size:
                    if isinstance(copy, dict):
                        copy["…"] = f"{size - shown:,} more members"
                    else:
                        copy.append(f"… {size - shown:,} more items")
                item = copy
        elif not isinstance(item, (int, float, bool, type(None))):
            item = _cut(str(item), max_length)
        parent[key] = item
    return holder[0]


def _cut(text: str, max_length: int | None) -> str:
    if max_length is None or len(text) <= max_length:
        return text
    return f"{text[:max_length]}… ({len(text):,} characters)"


async def program_error(request: Request, error: ProgramError) -> Response:
    return json_error(
        400, {"message": error.message, "line": error.line, "column": error.column, "offset": error.offset}
    )


async def validation_error(request: Request, error: RequestValidationError) -> Response:
    """FastAPI's usual 422 body, but bounded and always encodable. A body can hold any number of
    problems (92,000 bad variables in 1 MB), each echoing its input: only the first
    max_reported_errors are listed, each input cut to max_echo_length, and one more entry says
    how many were left out. NaN and Infinity a client sent become strings, and a body that is
    not JSON at all (FastAPI echoes it as bytes, maybe not UTF-8) becomes text."""
    settings = request.app.state.settings
    errors = error.errors()
    reported = [
        {**problem, "input": json_safe(problem.get("input"), settings.max_echo_length)}
        if "input" in problem
        else problem
        for problem in errors[: settings.max_reported_errors]
    ]
    detail = jsonable_encoder(reported)
    if len(errors) > len(reported):
        left_out = len(errors) - len(reported)
        detail.append(
            {
                "type": "too_many_errors",
                "loc": ["body"],
                "msg": f"{left_out:,} more problems not listed (only the first {len(reported)} are)",
            }
        )
    return json_error(422, detail)


async def graph_error(request: Request, error: GraphError) -> Response:
    """A posted graph that is not one (a cycle, an unknown child...): a 422 like pydantic's, whose
    loc gives the node's place in `nodes` and the field, and whose msg names the node."""
    entry = error.as_validation_error()
    return json_error(422, [{**entry, "input": json_safe(entry["input"], request.app.state.settings.max_echo_length)}])


async def http_error(request: Request, error: HTTPException) -> Response:
    """FastAPI's answer, with two gaps closed. A body that json.loads rejects with something other
    than a JSONDecodeError (nesting past the recursion limit, bytes that are not UTF-8, an integer
    of more than 4,300 digits) gets FastAPI's bare 400 "There was an error parsing the body": here
    it is the same 422 as any other malformed JSON, saying what is wrong. And a 405 lists every
    method the API documents for the path in Allow (HTTP requires it; Starlette names only
    the first route's)."""
    reason = _unreadable_body(error.__cause__) if error.status_code == 400 else None
    if reason:
        return json_error(
            422,
            [
                {
                    "type": "json_invalid",
                    "loc": ["body"],
                    "msg": f"JSON decode error: {reason}",
                    "input": {},
                    "ctx": {"error": reason},
                }
            ],
        )
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
    """The methods the OpenAPI schema gives for this path, or for the template it fits (/runs/{job_id});
    none for pages and static files."""
    path = request.scope["path"]
    for template, operations in request.app.openapi()["paths"].items():
        if template == path or ("{" in template and _template_pattern(template).fullmatch(path)):
            return {method.upper() for method in operations}
    return set()


def _template_pattern(template: str) -> re.Pattern:
    return re.compile("/".join("[^/]+" if part.startswith("{") else re.escape(part) for part in template.split("/")))


async def broker_unavailable(request: Request, down: BrokerUnavailable) -> Response:
    """Redis is down (or its breaker is open): a 503 saying so and when to try again, never a 500."""
    seconds = max(1, math.ceil(down.retry_after))
    return json_error(
        503,
        {"message": f"the Teach live store (Redis) cannot be reached; try again in {seconds} s"},
        {"retry-after": str(seconds)},
    )


def register_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(BrokerUnavailable, broker_unavailable)
    app.add_exception_handler(ProgramError, program_error)
    app.add_exception_handler(GraphError, graph_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(HTTPException, http_error)
