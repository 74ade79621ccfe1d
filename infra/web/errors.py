"""postel's errors as HTTP answers: the status of each comes from messages.errors.OUTCOMES,
the table the CLI's exit codes come from, so a route raises the error and never maps it by
hand. The body is FastAPI's usual `{"detail": message}`."""

from __future__ import annotations

import structlog
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from postel.messages.errors import PostelError, outcome_of

log = structlog.get_logger(__name__)


async def postel_error(request: Request, exc: Exception) -> Response:
    outcome = outcome_of(exc)
    assert outcome is not None, "installed for PostelError only"
    status = outcome.http_status
    if status >= 500:
        log.warning("request failed", path=request.url.path, error=str(exc))
    return JSONResponse({"detail": str(exc)}, status_code=status)


def install(app: FastAPI) -> None:
    """Answer every PostelError a route raises from the table (more specific handlers, such
    as outage.py's, still win: Starlette picks the nearest class)."""
    app.add_exception_handler(PostelError, postel_error)
