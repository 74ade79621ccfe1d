"""The web application: the API router, the dashboard's pages and static files, behind the
guard (security.py), with headers that keep the pages to their own origin."""

from __future__ import annotations

import time

from arq.connections import ArqRedis
from fastapi import APIRouter, FastAPI, Response
from fastapi.staticfiles import StaticFiles
from postel.infra.runtime.settings import Settings
from postel.infra.store.keys import Keyspace
from postel.infra.web import api, dead_letters, errors, operations, outage, pages
from postel.infra.web.metrics import SystemMetrics
from postel.infra.web.security import Guard, web_token
from postel.infra.web.state import WebState
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Scripts and styles from this server only (inline styles carry the timeline's widths);
# no frames, no form posts elsewhere.
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        b"img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; "
        b"form-action 'self'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]


ROUTERS: tuple[APIRouter, ...] = (
    api.router,
    dead_letters.api,
    operations.api,
    pages.router,
    dead_letters.pages,
    operations.pages,
)
"""Every route but /metrics and /static: the API's, then the pages'."""


class _Headers:
    """The security headers, and `Server-Timing: app;dur=<ms>`: how long the server took
    until the answer started (the whole page, for a rendered one)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                took = f"app;dur={(time.perf_counter() - started) * 1000:.2f}".encode()
                message["headers"] = [
                    *message.get("headers", []),
                    *SECURITY_HEADERS,
                    (b"server-timing", took),
                ]
            await send(message)

        await self.app(scope, receive, with_headers if scope["type"] == "http" else send)


def create_app(
    pool: ArqRedis, keyspace: Keyspace, settings: Settings, *, loopback_only: bool
) -> tuple[ASGIApp, WebState]:
    """The ASGI application and its shared state, over `pool` whose keys `keyspace` names.
    With POSTEL_WEB_TOKEN set, every request needs the token; `loopback_only` also refuses
    requests addressed to any other host."""
    token = web_token(settings)
    state = WebState.create(pool, keyspace, settings, token_required=token is not None)
    app = FastAPI(
        title="postel",
        summary="Submit, follow and cancel jobs; redrive dead letters; watch workers and queues.",
        version="1",
        openapi_url="/api/openapi.json",
        docs_url=None,  # FastAPI's docs pages load scripts from a CDN: pages.api_docs instead
        redoc_url=None,
        separate_input_output_schemas=False,
    )
    app.state.web = state
    errors.install(app)
    outage.install(app)
    metrics = SystemMetrics(pool, keyspace)

    @app.get("/metrics", include_in_schema=False)
    async def prometheus_metrics() -> Response:
        """The whole system's metrics for Prometheus (infra/web/metrics.py)."""
        return await metrics.scrape()

    for router in ROUTERS:
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=pages.HERE / "static"), name="static")
    guard = Guard(app, token=token, loopback_only=loopback_only and token is None)
    app.state.guard = guard
    return _Headers(guard), state
