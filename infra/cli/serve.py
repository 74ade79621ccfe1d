"""The long-running processes and the view of them: `up` (the whole system in one process),
`web` (the API and dashboard), `worker` (one worker kind), `model serve` (the bundled model
over HTTP), and `workers` (the live worker processes, under `with_client`,
infra/cli/client_command.py). Each serving command stops cleanly on Ctrl-C or SIGTERM.

`up` and `worker` are the processes that carry hops, so they, and nothing that merely
imports postel, make the process's Redis connections pack commands with hiredis
(infra/store/redis_packing.py)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import click
from postel.infra.cli.client_command import with_client
from postel.infra.runtime.names import WORKER_NAMES

if TYPE_CHECKING:
    from postel.infra.client.client import Client


def stop_on_signals() -> asyncio.Event:
    """An event Ctrl-C (SIGINT) or SIGTERM sets, in the running loop: a serving command
    waits on it, then stops what it started."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


web_port_option = click.option(
    "--web-port",
    type=click.IntRange(0, 65535),
    default=None,
    help="The web server's port (POSTEL_WEB_PORT, default 8040; 0: any free one).",
)


@click.command()
@click.option("--port", type=int, default=None, help="Embedded Redis port (POSTEL_EMBEDDED_PORT).")
@click.option(
    "--state-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where the embedded Redis keeps its AOF (POSTEL_STATE_DIR).",
)
@click.option("--no-web", is_flag=True, help="Do not start the web server (API and dashboard).")
@web_port_option
def up(port: int | None, state_dir: Path | None, no_web: bool, web_port: int | None) -> None:
    """Run the whole system in one process: an embedded Redis, all five workers and the web
    server (HTTP API and live dashboard, on loopback unless POSTEL_WEB_HOST says otherwise).

    Ctrl-C stops it cleanly; queued jobs survive a restart (AOF under the state dir)."""
    from postel.infra.cli.support import EXIT_INPUT, fail, run_async, settings
    from postel.infra.runtime.local_system import LocalSystem
    from postel.infra.store.redis_packing import pack_with_hiredis
    from postel.infra.web.server import WebError, WebServer, check_exposure

    current = settings()
    if current.redis_url:
        fail(
            "`postel up` runs its own Redis; unset POSTEL_REDIS_URL, or run `postel worker`",
            EXIT_INPUT,
        )
    if not no_web:
        try:  # before anything starts
            check_exposure(current, current.web_host, "the web server")
        except WebError as exc:
            fail(f"{exc} (or --no-web)", EXIT_INPUT)
    pack_with_hiredis()

    async def serve() -> None:
        system = LocalSystem(current, port=port, state_dir=state_dir)
        await system.start()
        web: WebServer | None = None
        try:
            if not no_web:
                chosen = web_port if web_port is not None else current.web_port
                web = WebServer(current, system.url, current.web_host, chosen)
                await web.start()
        except WebError as exc:
            await system.stop()
            fail(f"{exc} (choose another with --web-port, or --no-web)", EXIT_INPUT)
        click.echo(f"postel up: redis at {system.url}")
        if web is not None:
            click.echo(f"  dashboard: {web.url}   API: {web.url}api/docs")
        click.echo(f"  other shells: {other_shells_hint(system.url)}")
        click.echo("  Ctrl-C stops")
        stop = stop_on_signals()
        waiter = asyncio.create_task(stop.wait())
        crashed = asyncio.create_task(system.wait())
        await asyncio.wait([waiter, crashed], return_when=asyncio.FIRST_COMPLETED)
        click.echo("postel up: stopping")
        if web is not None:
            await web.stop()
        await system.stop()
        if crashed.done() and crashed.exception() is not None:
            raise crashed.exception()  # type: ignore[misc]

    run_async(serve)()


def other_shells_hint(url: str) -> str:
    """What another shell runs to reach this `postel up`, as printed: a plain shell finds
    only the default port, so any other is named in the command itself."""
    from postel.infra.runtime.settings import DEFAULT_EMBEDDED_PORT, Settings

    submit = "postel submit 'hello'"
    if url == Settings(embedded_port=DEFAULT_EMBEDDED_PORT).embedded_url:
        return f"{submit}   (or POSTEL_REDIS_URL={url})"
    return f"POSTEL_REDIS_URL={url} {submit}"


@click.command()
@click.option(
    "--host",
    default=None,
    help="Address to serve on (POSTEL_WEB_HOST, default 127.0.0.1); any address but "
    "loopback needs POSTEL_WEB_TOKEN.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Port (POSTEL_WEB_PORT, default 8040; 0: any free one).",
)
def web(host: str | None, port: int | None) -> None:
    """Serve the HTTP API (OpenAPI at /api/docs) and the live dashboard for the system at
    POSTEL_REDIS_URL, or the `postel up` running on this machine."""
    from postel.infra.cli.support import EXIT_INPUT, fail, run_async, settings
    from postel.infra.web.server import WebError, WebServer

    current = settings()

    async def serve() -> None:
        chosen = port if port is not None else current.web_port
        try:
            server = WebServer(
                current, current.effective_redis_url, host or current.web_host, chosen
            )
            await server.start()
        except WebError as exc:
            fail(str(exc), EXIT_INPUT)
        guarded = " (token required)" if server.token else ""
        click.echo(f"postel web: {server.url}{guarded}   API: {server.url}api/docs")
        click.echo("  Ctrl-C stops")
        stop = stop_on_signals()
        await stop.wait()
        click.echo("postel web: stopping")
        await server.stop()

    run_async(serve)()


@click.command()
@click.argument("name", type=click.Choice(WORKER_NAMES))
@click.option(
    "--concurrency",
    type=click.IntRange(1, 1000),
    default=None,
    help="Jobs this process runs at once (POSTEL_CONCURRENCY, default 10).",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    default=None,
    help="Serve the system's Prometheus metrics on this port (/metrics).",
)
@click.option(
    "--metrics-host", default="127.0.0.1", show_default=True, help="Address for --metrics-port."
)
def worker(name: str, concurrency: int | None, metrics_port: int | None, metrics_host: str) -> None:
    """Run one worker process of kind NAME against POSTEL_REDIS_URL.

    Start as many as you like, on any machine: they share the queue. The intent worker
    also consumes the ingress stream."""
    from postel.infra.cli.support import run_async, settings
    from postel.infra.runtime.runner import run_workers
    from postel.infra.store.redis_packing import pack_with_hiredis
    from postel.infra.web.server import MetricsServer

    current = settings()
    pack_with_hiredis()

    async def serve() -> None:
        stop = stop_on_signals()
        async with contextlib.AsyncExitStack() as stack:
            if metrics_port is not None:
                scraped = MetricsServer(
                    current, current.effective_redis_url, metrics_host, metrics_port
                )
                await stack.enter_async_context(scraped)
            await run_workers(
                [name],
                current,
                current.effective_redis_url,
                concurrency=concurrency,
                ingress=name == "intent",
                stop=stop,
            )

    run_async(serve)()


@click.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object per process.")
@with_client
async def workers(client: Client, as_json: bool) -> None:
    """List the live worker processes (each refreshes its presence every few seconds)."""
    from postel.infra.runtime.presence import live_workers

    for presence in await live_workers(client.pool, client.keyspace):
        if as_json:
            click.echo(presence.model_dump_json())
            continue
        kinds = ", ".join(presence.workers) + (" + ingress" if presence.ingress else "")
        click.echo(f"{presence.instance:<28} {kinds}  (since {presence.started_at:%H:%M:%S})")


@click.group()
def model() -> None:
    """The bundled offline model (the `local` extra)."""


@model.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True)
def model_serve(host: str, port: int) -> None:
    """Serve the bundled SmolLM2-135M over the OpenAI-compatible protocol until stopped, so
    worker processes on other machines can use it (POSTEL_LLM_BASE_URL=http://HOST:PORT/v1)."""
    from postel.infra.cli.support import EXIT_INPUT, fail, run_async, settings
    from postel.infra.runtime.local_model import LocalModelError, LocalModelServer

    settings()

    async def serve() -> None:
        server = LocalModelServer(host=host, port=port)
        try:
            await server.start()
        except LocalModelError as exc:
            fail(str(exc), EXIT_INPUT)
        click.echo(f"postel model: serving at {server.base_url} (Ctrl-C stops)")
        stop = stop_on_signals()
        await stop.wait()
        await server.stop()

    run_async(serve)()
