"""The `postel` command line (exit codes: infra/cli/support.py; GASL and graph commands:
infra/cli/gasl.py; commands other distributions add, such as `postel bench`:
infra/cli/entry_points.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from postel.infra.cli.entry_points import CommandsWithEntryPoints
from postel.infra.cli.gasl import gasl, graph
from postel.infra.runtime.names import WORKER_NAMES

if TYPE_CHECKING:
    from postel.infra.client.client import Client
    from postel.infra.store.events import Event

# Each command imports what it needs when it runs (pydantic, Redis, the client, the
# services): `postel --help` and every command start without the others' imports.


def format_event(event: Event) -> str:
    from postel.services.step import parse_command_lines

    figures = [f"attempt={event.attempt}"]
    if event.wait_ms:
        figures.append(f"wait={event.wait_ms:.1f}ms")
    if event.duration_ms:
        figures.append(f"took={event.duration_ms:.1f}ms")
    for name in ("iteration", "round", "llm_calls", "prompt_tokens", "completion_tokens"):
        value = getattr(event, name)
        if value:
            figures.append(f"{name}={value}")
    if event.repair:
        figures.append(f"repair={event.repair}")
    if event.finish_reason:
        figures.append(f"finish={event.finish_reason}")
    line = f"{event.worker:<10} {event.status:<13} {event.type:<22} {' '.join(figures)}"
    if event.decision:
        line += f"  {event.decision}" + (f": {event.rationale}" if event.rationale else "")
    if event.error:
        line += f"  error: {event.error}"
    commands = [
        f"{'':10} {status:<13} {count:>6}  {command}"
        for status, count, command in parse_command_lines(event.commands)
    ]
    return "\n".join([line, *commands])


# Options shared by the commands that build a job request.
type_option = click.option(
    "--type",
    "type_",
    default="str",
    show_default=True,
    help="Desired type: float, int, bool, str, list[T], dict, document, or a JSON "
    "Schema (inline JSON or @file.json).",
)
text_file_option = click.option(
    "--text-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Attach this file's text as the `text` argument.",
)
profile_option = click.option(
    "--profile",
    type=click.Choice(["default", "production", "creative", "strict"]),
    default="default",
    show_default=True,
)


@click.group(cls=CommandsWithEntryPoints, context_settings={"help_option_names": ["-h", "--help"]})
@click.pass_context
def main(ctx: click.Context) -> None:
    """postel: typed LLM jobs through five worker queues on Redis."""
    from postel.infra.cli.support import logs_to_stderr

    # every command logs to stderr from its first line: stdout carries only its output;
    # the demo's terminal is its story, so it logs to a file from its first line instead
    if ctx.invoked_subcommand != "demo":
        logs_to_stderr()


web_port_option = click.option(
    "--web-port",
    type=click.IntRange(0, 65535),
    default=None,
    help="The web server's port (POSTEL_WEB_PORT, default 8040; 0: any free one).",
)


@main.command()
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
    from postel.infra.web.server import WebError, WebServer

    current = settings()
    if current.redis_url:
        fail(
            "`postel up` runs its own Redis; unset POSTEL_REDIS_URL, or run `postel worker`",
            EXIT_INPUT,
        )

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
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
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


@main.command()
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
        guarded = " (token required)" if current.web_token else ""
        click.echo(f"postel web: {server.url}{guarded}   API: {server.url}api/docs")
        click.echo("  Ctrl-C stops")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        click.echo("postel web: stopping")
        await server.stop()

    run_async(serve)()


@main.command()
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
    from postel.infra.web.server import MetricsServer

    current = settings()

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
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


@main.command()
@click.argument("prompt")
@type_option
@click.option("--graph", default=None, help="Name of a registered graph to ask about.")
@text_file_option
@profile_option
@click.option("--job-id", default=None, help="Choose the job id (submission is then idempotent).")
@click.option("--wait", is_flag=True, help="Follow the job's events live and print the result.")
@click.option(
    "--timeout", type=float, default=300.0, show_default=True, help="Seconds --wait waits."
)
def submit(
    prompt: str,
    type_: str,
    graph: str | None,
    text_file: Path | None,
    profile: str,
    job_id: str | None,
    wait: bool,
    timeout: float,
) -> None:
    """Submit PROMPT as a job and print its id (with --wait: follow it and print the result)."""
    from postel.infra.cli.support import run_async, settings
    from postel.infra.client.client import Client

    current = settings()
    request = build_request(prompt, type_, graph, text_file, profile)

    async def go() -> None:
        async with Client(settings=current) as client:
            new_id = await client.submit_request(request, job_id=job_id)
            click.echo(new_id)
            if wait:
                await follow_and_print(client, new_id, timeout)

    run_async(go)()


def build_request(
    prompt: str, type_: str, graph: str | None, text_file: Path | None, profile: str
) -> Any:
    from postel.infra.cli.support import EXIT_INPUT, fail
    from postel.messages import JobRequest, TypeSpec
    from pydantic import ValidationError

    try:
        spec = TypeSpec.model_validate(parse_type_option(type_))
    except (ValidationError, ValueError) as exc:
        fail(f"invalid --type {type_!r}: {exc}", EXIT_INPUT)
    arguments = {"text": text_file.read_text()} if text_file else {}
    return JobRequest(
        prompt=prompt,
        desired_type=spec,
        graph=graph,
        arguments=arguments,
        ambient={"profile": profile},
    )


def parse_type_option(value: str) -> Any:
    """`float`, `list[int]`, inline JSON Schema, or `@schema.json`."""
    if value.startswith("@"):
        return json.loads(Path(value[1:]).read_text())
    if value.lstrip().startswith("{"):
        return json.loads(value)
    return value


async def follow_and_print(client: Client, job_id: str, timeout: float) -> None:
    """Stream the job's events to stderr, then print its result as JSON on stdout."""
    async with asyncio.timeout(timeout):
        async for event in client.follow(job_id):
            click.echo(format_event(event), err=True)
    result = await client.result(job_id, timeout=5)
    click.echo(json.dumps(result, indent=2, ensure_ascii=False))


@main.command()
@click.option(
    "--max-rounds",
    type=click.IntRange(1, 20),
    default=3,
    show_default=True,
    help="HDT rounds (plan -> execute -> evaluate) before the planner hands over.",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(64, 8192),
    default=384,
    show_default=True,
    help="Completion tokens per model call: small enough that the answer document "
    "is written across continuation messages.",
)
@click.option("--timeout", type=float, default=1200.0, show_default=True)
def demo(max_rounds: int, max_tokens: int, timeout: float) -> None:
    """The main job: ask the bundled knowledge graph which authors collaborate most, and on
    what topics, and watch it travel: intent, task plan, HDT rounds of GASL, the answer
    document across continuations, validation.

    Embedded by default (a private Redis, all five workers, the bundled offline model); on
    the running system when POSTEL_REDIS_URL is set or `postel up` runs; the model at
    POSTEL_LLM_BASE_URL when set."""
    from postel.infra.cli.demo import evidence_lines, groundless_line, run_demo, verdict_lines
    from postel.infra.cli.support import EXIT_FAILED, run_async
    from postel.infra.runtime.logging import log_to_file
    from postel.infra.runtime.settings import Settings
    from postel.services.generation.markdown import to_markdown

    current = Settings()
    # the trace below is the demo's story: the system's own log lines go to a file
    log_path = current.state_dir / "demo.log"
    log_to_file(log_path, current.log_level)
    click.echo(f"logs: {log_path}")

    async def go() -> None:
        outcome = await run_demo(
            current, click.echo, max_rounds=max_rounds, max_tokens=max_tokens, timeout=timeout
        )
        record = outcome.record
        click.echo("\n" + "\n".join(verdict_lines(record)))
        if record.status == "failed":
            if isinstance(record.result, dict) and "sections" in record.result:
                click.echo("\nWhat was delivered before it failed (the model's words):\n")
                click.echo(to_markdown(record.result))
        else:
            click.echo("")
            click.echo(to_markdown(record.result))
        if outcome.rounds:
            click.echo("\nThe evidence GASL found in the graph (exact results, with sources):\n")
            for line in evidence_lines(outcome.rounds):
                click.echo(line)
            groundless = groundless_line(outcome.rounds)
            if groundless is not None:
                click.echo(f"\n{groundless}")
        click.echo(
            f"\n{record.llm_calls} model calls, "
            f"{record.prompt_tokens}+{record.completion_tokens} tokens"
        )
        if record.status == "failed":
            sys.exit(EXIT_FAILED)

    run_async(go)()


@main.command("reason")
@click.argument("prompt")
@type_option
@text_file_option
@profile_option
@click.option("--timeout", type=float, default=600.0, show_default=True)
@click.option("--quiet", is_flag=True, help="Do not print the job's events on stderr.")
def reason_command(
    prompt: str, type_: str, text_file: Path | None, profile: str, timeout: float, quiet: bool
) -> None:
    """Ask for a typed value and print it as JSON.

    Runs on the running system (POSTEL_REDIS_URL, or a `postel up` on this machine); with
    none, starts the whole system for this one job and stops it afterwards."""
    from postel.infra.cli.support import run_async, settings
    from postel.infra.client.client import JobFailedError
    from postel.infra.client.session import connected, run_job

    current = settings()
    request = build_request(prompt, type_, None, text_file, profile)

    def show(event: Event) -> None:
        if not quiet:
            click.echo(format_event(event), err=True)

    async def go() -> None:
        async with connected(current) as client:
            record = await run_job(client, request, timeout=timeout, on_event=show)
        if record.status == "failed":
            raise JobFailedError(record.job_id, record.failure or "failed", record.error or "")
        click.echo(json.dumps(record.result, indent=2, ensure_ascii=False))

    run_async(go)()


@main.command("coerce")
@click.option(
    "--type",
    "type_",
    required=True,
    help="float, int, bool, str, list[T], dict, document, or a JSON Schema.",
)
@click.option("--locale", default=None, help="e.g. de_DE: decides 1.299,99 vs 1,299.99.")
@click.argument("value")
def coerce_command(type_: str, locale: str | None, value: str) -> None:
    """Coerce VALUE to the type as the validator would and print it as JSON (exit 2 and the
    reason if it cannot be)."""
    from postel.infra.cli.support import EXIT_INPUT, fail
    from postel.messages import TypeSpec
    from postel.services.validation import CoercionError, UnsupportedSchemaError, coerce
    from pydantic import ValidationError

    try:
        spec = TypeSpec.model_validate(parse_type_option(type_))
        result = coerce(value, spec, locale=locale)
    except (CoercionError, UnsupportedSchemaError, ValidationError, ValueError) as exc:
        fail(str(exc), EXIT_INPUT)
    click.echo(json.dumps(result, ensure_ascii=False))


@main.command()
@click.argument("job_id")
def status(job_id: str) -> None:
    """Print the job record as JSON."""
    from postel.infra.cli.support import run_async, settings
    from postel.infra.client.client import Client

    current = settings()

    async def go() -> None:
        async with Client(settings=current) as client:
            record = await client.status(job_id)
            click.echo(record.model_dump_json(indent=2))

    run_async(go)()


@main.command()
@click.argument("job_id")
@click.option("--reason", default="", help="Why; recorded with the failure.")
def cancel(job_id: str, reason: str) -> None:
    """Cancel a queued or running job: it fails as `cancelled` and none of its messages is
    handled afterwards (exit 6 if it had already finished, 4 if there is no such job)."""
    from postel.infra.cli.support import run_async, settings
    from postel.infra.client.client import Client

    current = settings()

    async def go() -> None:
        async with Client(settings=current) as client:
            record = await client.cancel(job_id, reason, by="cli")
            click.echo(f"{record.job_id} {record.failure}: {record.error}")

    run_async(go)()


@main.command()
@click.argument("job_id")
@click.option("--follow", is_flag=True, help="Keep printing new events until the job ends.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per event.")
def events(job_id: str, follow: bool, as_json: bool) -> None:
    """Print the job's events (every hop), in order."""
    from postel.infra.cli.support import run_async, settings
    from postel.infra.client.client import Client

    current = settings()

    async def go() -> None:
        async with Client(settings=current) as client:
            await client.status(job_id)
            source = client.follow(job_id) if follow else _aiter(await client.events.read(job_id))
            async for event in source:
                click.echo(event.model_dump_json() if as_json else format_event(event))

    run_async(go)()


async def _aiter(items: list[Event]) -> Any:
    for item in items:
        yield item


@main.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object per process.")
def workers(as_json: bool) -> None:
    """List the live worker processes (each refreshes its presence every few seconds)."""
    from postel.infra.cli.support import run_async, settings
    from postel.infra.client.client import Client
    from postel.infra.runtime.presence import live_workers

    current = settings()

    async def go() -> None:
        async with Client(settings=current) as client:
            for presence in await live_workers(client.pool):
                if as_json:
                    click.echo(presence.model_dump_json())
                    continue
                kinds = ", ".join(presence.workers) + (" + ingress" if presence.ingress else "")
                click.echo(
                    f"{presence.instance:<28} {kinds}  (since {presence.started_at:%H:%M:%S})"
                )

    run_async(go)()


@main.group()
def dead() -> None:
    """Dead letters: messages postel could not handle, kept with the error and the payload."""


worker_filter = click.option(
    "--worker", default=None, help="Only those of this worker kind (or `ingress`)."
)
error_filter = click.option("--error", default=None, help="Only those whose error contains TEXT.")


@dead.command("list")
@worker_filter
@error_filter
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
@click.option("--before", default=None, help="Continue after this id (the cursor printed last).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per dead letter.")
def dead_list(
    worker: str | None, error: str | None, limit: int, before: str | None, as_json: bool
) -> None:
    """List dead letters, newest first."""
    from postel.infra.cli.support import run_async, settings
    from postel.infra.client.client import Client
    from postel.infra.store.deadletter import list_dead

    current = settings()

    async def go() -> None:
        async with Client(settings=current) as client:
            page = await list_dead(
                client.pool, before=before, limit=limit, worker=worker, error=error
            )
        for letter in page.items:
            if as_json:
                click.echo(letter.model_dump_json())
                continue
            when = f"{letter.at:%Y-%m-%d %H:%M:%S}" if letter.at else "?"
            job = letter.job_id or "-"
            click.echo(
                f"{letter.id:<17} {when}  {letter.worker:<10} {job:<24} {letter.error[:100]}"
            )
        if not as_json:
            more = f"; more: --before {page.next}" if page.next else ""
            click.echo(f"({len(page.items)} shown of {page.total}{more})", err=True)

    run_async(go)()


@dead.command("show")
@click.argument("entry_id")
def dead_show(entry_id: str) -> None:
    """Print one dead letter as JSON, its raw payload included."""
    from postel.infra.cli.support import run_async, settings
    from postel.infra.client.client import Client
    from postel.infra.store.deadletter import get_dead

    current = settings()

    async def go() -> None:
        async with Client(settings=current) as client:
            letter = await get_dead(client.pool, entry_id)
        click.echo(letter.model_dump_json(indent=2))

    run_async(go)()


@dead.command("redrive")
@click.argument("entry_id", required=False)
@click.option("--all", "every", is_flag=True, help="Every dead letter (narrowed by the filters).")
@worker_filter
@error_filter
def dead_redrive(entry_id: str | None, every: bool, worker: str | None, error: str | None) -> None:
    """Send a dead letter back as a new attempt (its tries reset, its job reopened); with
    --all, every one the filters match. Exit 6 if one stays dead (the reason is printed)."""
    from postel.infra.cli.support import EXIT_INPUT, EXIT_REFUSED, fail, run_async, settings
    from postel.infra.client.client import Client
    from postel.infra.runtime.redrive import redrive, redrive_matching

    if (entry_id is None) == (not every):
        fail("give one dead letter id, or --all (with --worker/--error to narrow it)", EXIT_INPUT)
    if entry_id is not None and (worker or error):
        fail("--worker and --error narrow --all; give them without an id", EXIT_INPUT)
    current = settings()

    async def go() -> None:
        async with Client(settings=current) as client:
            if entry_id is not None:
                done = await redrive(client.pool, client.events, entry_id, by="cli")
                click.echo(f"{done.dead_letter} -> {done.worker}: {done.message_id}")
                return
            report = await redrive_matching(
                client.pool, client.events, by="cli", worker=worker, error=error
            )
        for done in report.redriven:
            click.echo(f"{done.dead_letter} -> {done.worker}: {done.message_id}")
        for refused, reason in report.refused.items():
            click.echo(f"{refused} stays dead: {reason}", err=True)
        click.echo(f"redriven {len(report.redriven)}, refused {len(report.refused)}", err=True)
        if report.refused:
            sys.exit(EXIT_REFUSED)

    run_async(go)()


@dead.command("discard")
@click.argument("entry_id", required=False)
@click.option("--all", "every", is_flag=True, help="Every dead letter (narrowed by the filters).")
@worker_filter
@error_filter
def dead_discard(entry_id: str | None, every: bool, worker: str | None, error: str | None) -> None:
    """Drop a dead letter for good (recorded as a `discarded` event); with --all, every one
    the filters match. Exit 4 if the id names no dead letter."""
    from postel.infra.cli.support import EXIT_INPUT, fail, run_async, settings
    from postel.infra.client.client import Client
    from postel.infra.runtime.redrive import discard, discard_matching

    if (entry_id is None) == (not every):
        fail("give one dead letter id, or --all (with --worker/--error to narrow it)", EXIT_INPUT)
    if entry_id is not None and (worker or error):
        fail("--worker and --error narrow --all; give them without an id", EXIT_INPUT)
    current = settings()

    async def go() -> None:
        async with Client(settings=current) as client:
            if entry_id is not None:
                done = await discard(client.pool, client.events, entry_id, by="cli")
            else:
                done = await discard_matching(
                    client.pool, client.events, by="cli", worker=worker, error=error
                )
        for letter in done.discarded:
            click.echo(f"{letter} discarded")
        click.echo(f"discarded {len(done.discarded)}", err=True)

    run_async(go)()


@main.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
def schema(directory: Path) -> None:
    """Write one JSON Schema per message type into DIRECTORY."""
    from postel.infra.cli.schema import write_schemas

    for path in write_schemas(directory):
        click.echo(str(path))


@main.group()
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
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await server.stop()

    run_async(serve)()


main.add_command(graph)
main.add_command(gasl)


@main.command("calls")
@click.argument("job_id")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per call, whole.")
@click.option(
    "--chars",
    type=click.IntRange(0),
    default=600,
    show_default=True,
    help="Characters shown of each prompt's last message and answer (0: all).",
)
def calls_command(job_id: str, as_json: bool, chars: int) -> None:
    """Print the job's hops, each followed by the model calls it made: tokens, finish reason,
    the prompt's last message and the answer."""
    from postel.infra.cli.support import run_async, settings
    from postel.infra.client.client import Client
    from postel.infra.store.calls import RecordedCall, read_calls
    from postel.infra.store.events import HANDLED

    current = settings()

    def shown(text: str) -> str:
        return text if not chars or len(text) <= chars else text[:chars] + " …"

    def show(call: RecordedCall) -> None:
        usage = call.response.usage
        click.echo(
            f"   ── call {call.ordinal} · {usage.prompt_tokens}+{usage.completion_tokens} "
            f"tokens · {call.response.finish_reason}"
            f"{' · truncated' if call.truncated else ''}"
        )
        click.echo(f"   asked:\n{shown(call.request.last_user_message())}")
        click.echo(f"   answered:\n{shown(call.response.text)}\n")

    async def go() -> None:
        async with Client(settings=current) as client:
            await client.status(job_id)
            calls = await read_calls(client.pool, job_id)
            if as_json:
                for call in calls:
                    click.echo(call.model_dump_json())
                return
            by_hop: dict[str, list[RecordedCall]] = {}
            for call in calls:
                by_hop.setdefault(call.message_id, []).append(call)
            for event in await client.events.read(job_id):
                if event.status not in HANDLED:
                    continue
                click.echo(format_event(event))
                for call in by_hop.pop(event.message_id, []):
                    show(call)

    run_async(go)()


@main.command("export")
@click.argument("job_id")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write here instead of standard output.",
)
def export_command(job_id: str, output: Path | None) -> None:
    """Write the job as one JSON file: request, record and result, events, recorded model
    calls (also as a cassette), GASL rounds and graph versions (`postel replay` reads it)."""
    from postel.infra.cli.support import run_async, settings
    from postel.infra.client.client import Client
    from postel.infra.client.replay import capability_of, export_job

    current = settings()

    async def go() -> None:
        async with Client(settings=current) as client:
            exported = await export_job(client, job_id, capability_of(current))
        text = exported.model_dump_json(indent=2)
        if output is None:
            click.echo(text)
        else:
            output.write_text(text + "\n")
            click.echo(f"{job_id}: {len(exported.calls)} model calls -> {output}", err=True)

    run_async(go)()


@main.command("replay")
@click.argument("source")
@click.option(
    "--graph",
    "graph_files",
    multiple=True,
    metavar="NAME=FILE",
    help="A graph the job used (the bundled mmwr is found by itself).",
)
@click.option(
    "--strict", is_flag=True, help="Fail at the first model call the recording cannot answer."
)
@click.option("--json", "as_json", is_flag=True)
def replay_command(source: str, graph_files: tuple[str, ...], strict: bool, as_json: bool) -> None:
    """Re-run an exported job (a file from `postel export`, or a job id of the system at
    POSTEL_REDIS_URL) offline, from its recorded model calls; exit 0 if it reaches the same
    result the same way, 1 with the first divergence (the stage, and a diff of the prompts)."""
    from postel.infra.cli.support import EXIT_FAILED, EXIT_INPUT, fail, run_async, settings
    from postel.infra.client.client import Client
    from postel.infra.client.replay import (
        ReplayInputError,
        capability_of,
        export_job,
        read_export,
        replay_gasl_rounds,
        replay_job,
    )

    current = settings()
    graphs: dict[str, Path] = {}
    for spec in graph_files:
        name, sep, file = spec.partition("=")
        if not sep or not name or not file:
            fail(f"--graph takes NAME=FILE, not {spec!r}", EXIT_INPUT)
        graphs[name] = Path(file)

    async def go() -> None:
        if Path(source).is_file():
            exported = read_export(Path(source))
        else:
            async with Client(settings=current) as client:
                exported = await export_job(client, source, capability_of(current))
        report = await replay_job(exported, current, graphs=graphs, strict=strict)
        rounds = await replay_gasl_rounds(exported, graphs)
        changed_rounds = [check for check in rounds if not check.same]
        if as_json:
            click.echo(
                json.dumps(
                    {
                        **report.model_dump(mode="json"),
                        "gasl_rounds": [check.model_dump() for check in rounds],
                    },
                    indent=2,
                )
            )
        elif report.same:
            click.echo(
                f"{exported.job_id}: same result ({report.status}); "
                f"{report.calls_served} model calls served from the recording"
            )
        else:
            click.echo(f"{exported.job_id}: diverged: {report.divergence}")
            click.echo(f"recorded {report.recorded_status}, replayed {report.status}")
            if report.diff:
                click.echo(report.diff)
        if rounds and not as_json:
            click.echo(
                f"GASL rounds re-run from their plans: {len(rounds) - len(changed_rounds)} of "
                f"{len(rounds)} gave the recorded records"
            )
            for check in changed_rounds:
                click.echo(f"  task {check.task_index} round {check.round}: {check.difference}")
        if not report.same or changed_rounds:
            sys.exit(EXIT_FAILED)

    try:
        run_async(go)()
    except ReplayInputError as exc:
        fail(str(exc), EXIT_INPUT)


if __name__ == "__main__":
    main()
