"""What the web server answers while Redis is away (a restart, a Sentinel failover): 503
with Retry-After, as JSON on the API and a plain page elsewhere, and one warning line in the
log instead of a traceback per request. A job record that cannot be read (malformed) is a
clear 500 naming the job, also without a traceback."""

from __future__ import annotations

import structlog
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from postel.infra.store.connect import REDIS_UNAVAILABLE
from postel.infra.store.jobs import MalformedJobRecord
from postel.infra.web.errors import postel_error
from postel.messages.errors import OUTCOMES, Misconfigured

log = structlog.get_logger(__name__)

RETRY_AFTER_S = 2
"""What a client is told to wait: a failover takes a few seconds, a restart about as long."""
UNREACHABLE = "Redis is unreachable, retrying"
_MALFORMED = OUTCOMES[Misconfigured].http_status

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>postel: {title}</title>
<meta http-equiv="refresh" content="{refresh}"></head>
<body><h1>{title}</h1><p>{detail}</p></body></html>
"""


def _api(request: Request) -> bool:
    return request.url.path.startswith("/api/") or request.url.path == "/metrics"


async def redis_unavailable(request: Request, exc: Exception) -> Response:
    log.warning("redis unreachable; answering 503", path=request.url.path, error=str(exc))
    headers = {"Retry-After": str(RETRY_AFTER_S)}
    if _api(request):
        return JSONResponse({"detail": UNREACHABLE}, status_code=503, headers=headers)
    page = _PAGE.format(
        title=UNREACHABLE,
        refresh=RETRY_AFTER_S,
        detail="This page reloads by itself once Redis answers again.",
    )
    return HTMLResponse(page, status_code=503, headers=headers)


async def malformed_record(request: Request, exc: Exception) -> Response:
    """The API answers as for any PostelError (errors.py); a page says it in HTML."""
    if _api(request):
        return await postel_error(request, exc)
    log.warning("malformed job record", path=request.url.path, error=str(exc))
    page = _PAGE.format(title="malformed job record", refresh=3600, detail=str(exc))
    return HTMLResponse(page, status_code=_MALFORMED)


def install(app: FastAPI) -> None:
    for kind in REDIS_UNAVAILABLE:
        app.add_exception_handler(kind, redis_unavailable)
    app.add_exception_handler(MalformedJobRecord, malformed_record)
