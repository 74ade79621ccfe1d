"""Serving the web application with uvicorn inside postel's own event loop, next to the
workers of `postel up` or alone for `postel web`; and `/metrics` alone for a lone worker.

The socket is bound before uvicorn starts, so a port in use is a clear error (WebError)
instead of uvicorn exiting the process; uvicorn's signal handling is left out, since the
caller handles Ctrl-C.

Both servers are bounded against clients that hold connections: a request's headers and body
must arrive within POSTEL_WEB_REQUEST_TIMEOUT_S of connecting or of the previous answer
(`deadline_protocol`), an idle keep-alive connection closes after KEEP_ALIVE_S, and past
POSTEL_WEB_MAX_CONNECTIONS connections requests are answered 503. Both sit behind the guard
(security.py): the token when one is set, loopback names only otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import Generator

import h11
import structlog
import uvicorn
from postel.infra.runtime.settings import Settings
from postel.infra.store.connect import keyspace_of, redis_client
from postel.infra.store.wire import connect_arq
from postel.infra.web.app import create_app
from postel.infra.web.metrics import SystemMetrics
from postel.infra.web.security import TOKEN_SETTING, Guard, WebError, web_token
from postel.infra.web.state import WebState
from redis.asyncio import Redis
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from uvicorn.protocols.http.h11_impl import H11Protocol

log = structlog.get_logger(__name__)

_SHUTDOWN_GRACE_S = 2
KEEP_ALIVE_S = 5
"""An idle keep-alive connection is closed after this long."""
_RECEIVING = (h11.IDLE, h11.SEND_BODY)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _DeadlineH11(H11Protocol):
    """uvicorn's h11 protocol with a deadline on receiving each request: from the connection
    (or the previous answer) to the request's last body byte. uvicorn alone times out only
    idle keep-alive connections, so a client trickling its headers or body held a connection
    for ever."""

    request_timeout_s = 30.0
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state not in _RECEIVING:
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state in _RECEIVING:
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.request_timeout_s, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            log.info("web client too slow: disconnected", client=self.client)
            self.transport.close()


def deadline_protocol(request_timeout_s: float) -> type[H11Protocol]:
    """The HTTP protocol class for uvicorn with this request deadline."""
    return type("DeadlineH11", (_DeadlineH11,), {"request_timeout_s": request_timeout_s})


def bounded_config(app: object, settings: Settings, **options: object) -> uvicorn.Config:
    """A uvicorn configuration with the bounds of the module's note."""
    return uvicorn.Config(
        app,  # type: ignore[arg-type]
        http=deadline_protocol(settings.web_request_timeout_s),
        timeout_keep_alive=KEEP_ALIVE_S,
        limit_concurrency=settings.web_max_connections,
        lifespan="off",
        log_config=None,
        access_log=False,
        **options,  # type: ignore[arg-type]
    )


def check_exposure(settings: Settings, host: str, what: str) -> str | None:
    """The token (`web_token`: a set one too short is WebError); serving beyond loopback
    needs one."""
    token = web_token(settings)
    if not is_loopback(host) and token is None:
        raise WebError(
            f"serving {what} on {host} needs a token: set {TOKEN_SETTING} (or bind 127.0.0.1)"
        )
    return token


class QuietServer(uvicorn.Server):
    """uvicorn without its own signal handling: postel's processes handle signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield

    async def serving(
        self, failure: str, sockets: list[socket.socket] | None = None
    ) -> asyncio.Task[None]:
        """Serve in a task, returned once the server accepts connections; WebError with
        `failure` if it stops first (the port taken, say)."""
        task = asyncio.create_task(self.serve(sockets=sockets))
        while not self.started:
            if task.done():
                await task
                raise WebError(failure)
            await asyncio.sleep(0.02)
        return task

    async def stopped(self, task: asyncio.Task[None]) -> None:
        """Ask the server to stop, and wait until it has."""
        self.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await task


class WebServer:
    """`await start()` serves on host:port (port 0: any free one), `url` says where;
    `await stop()` ends open event streams and stops."""

    def __init__(self, settings: Settings, redis_url: str, host: str, port: int) -> None:
        self.token = check_exposure(settings, host, "the web server")
        self.settings = settings
        self.redis_url = redis_url
        self.host = host
        self.port = port
        self._server: QuietServer | None = None
        self._task: asyncio.Task[None] | None = None
        self._state: WebState | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    async def start(self) -> None:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError as exc:
            sock.close()
            raise WebError(f"cannot serve on {self.host}:{self.port}: {exc.strerror}") from exc
        self.port = sock.getsockname()[1]
        try:
            pool = await connect_arq(self.redis_url)
        except BaseException:
            sock.close()
            raise
        app, self._state = create_app(
            pool,
            keyspace_of(self.redis_url),
            self.settings,
            loopback_only=is_loopback(self.host),
        )
        config = bounded_config(app, self.settings, timeout_graceful_shutdown=_SHUTDOWN_GRACE_S)
        self._server = QuietServer(config)
        self._task = await self._server.serving("the web server stopped at start", [sock])
        log.info("web server started", url=self.url)

    async def stop(self) -> None:
        if self._server is None or self._task is None or self._state is None:
            return
        self._state.stopping.set()
        await self._server.stopped(self._task)
        await self._state.pool.aclose()
        self._server = self._task = None
        log.info("web server stopped", url=self.url)

    async def __aenter__(self) -> WebServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class MetricsServer:
    """`/metrics` alone, for a process that serves no dashboard (`postel worker
    --metrics-port`): the same system-wide metrics as `postel web`'s, behind the same guard
    and bounds."""

    def __init__(self, settings: Settings, redis_url: str, host: str, port: int) -> None:
        self.token = check_exposure(settings, host, "metrics")
        self.settings = settings
        self.redis_url = redis_url
        self.host = host
        self.port = port
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._redis: Redis | None = None

    async def __aenter__(self) -> MetricsServer:
        self._redis = redis_client(self.redis_url)
        metrics = SystemMetrics(self._redis, keyspace_of(self.redis_url))

        async def scrape(request: Request) -> Response:
            return await metrics.scrape()

        app = Guard(
            Starlette(routes=[Route("/metrics", scrape)]),
            token=self.token,
            loopback_only=self.token is None,
        )
        config = bounded_config(app, self.settings, host=self.host, port=self.port)
        self._server = QuietServer(config)
        self._task = await self._server.serving(f"cannot serve metrics on {self.host}:{self.port}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None and self._task is not None:
            await self._server.stopped(self._task)
        if self._redis is not None:
            await self._redis.aclose()
