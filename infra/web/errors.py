"""postel's errors as HTTP answers: the status of each comes from messages.errors.OUTCOMES,
the table the CLI's exit codes come from, so a route raises the error and never maps it by
hand. The body is FastAPI's usual `{"detail": message}`.

A request that does not validate is a 422 naming each bad field (`loc`, `msg`, `type`),
without echoing what was sent: a lone surrogate, NaN or an out-of-range number in it cannot
be written back as JSON, and FastAPI's own answer tried, and failed with a 500."""

from __future__ import annotations

import math
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from postel.messages.errors import PostelError, outcome_of

log = structlog.get_logger(__name__)


def writable(value: Any) -> Any:
    """`value` as JSON can carry it: a lone surrogate shown as its escape (`\\ud800`), a
    number that is not finite as its text."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, bool | int | float) or value is None:
        return value
    if isinstance(value, dict):
        return {writable(str(k)): writable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [writable(v) for v in value]
    return writable(str(value))


async def postel_error(request: Request, exc: Exception) -> Response:
    outcome = outcome_of(exc)
    assert outcome is not None, "installed for PostelError only"
    status = outcome.http_status
    if status >= 500:
        log.warning("request failed", path=request.url.path, error=writable(str(exc)))
    return JSONResponse({"detail": writable(str(exc))}, status_code=status)


async def invalid_request(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError), "installed for RequestValidationError only"
    detail = [
        {"loc": writable(list(error["loc"])), "msg": writable(error["msg"]), "type": error["type"]}
        for error in exc.errors()
    ]
    return JSONResponse({"detail": detail}, status_code=422)


def install(app: FastAPI) -> None:
    """Answer every PostelError a route raises from the table (more specific handlers, such
    as outage.py's, still win: Starlette picks the nearest class), and every request that
    does not validate with a 422 that can be written."""
    app.add_exception_handler(PostelError, postel_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
