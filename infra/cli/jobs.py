"""The commands on one job: `submit`, `reason`, `status`, `cancel`, `events`, `calls`, and
`coerce` (a value to a desired type, as the validator would). Each imports what it needs
when it runs; those that talk to the system run under `with_client`
(infra/cli/client_command.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from postel.infra.cli.client_command import with_client

if TYPE_CHECKING:
    from postel.infra.client.client import Client
    from postel.infra.store.calls import RecordedCall
    from postel.infra.store.events import Event
    from postel.messages import JobRequest


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


@click.command()
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
@click.option(
    "--priority",
    type=click.Choice(["interactive", "normal", "batch"]),
    default=None,
    help="The job's class: stages take higher classes first (default normal).",
)
@click.option("--tenant", default=None, help="Whose job: tenants are served in turn.")
@click.option("--not-before", default=None, help="Start at this time (ISO 8601, with a zone).")
@click.option("--delay-s", type=float, default=None, help="Start this many seconds from now.")
@click.option("--callback-url", default=None, help="POST the signed outcome here when it ends.")
def submit(
    prompt: str,
    type_: str,
    graph: str | None,
    text_file: Path | None,
    profile: str,
    job_id: str | None,
    wait: bool,
    timeout: float,
    priority: str | None,
    tenant: str | None,
    not_before: str | None,
    delay_s: float | None,
    callback_url: str | None,
) -> None:
    """Submit PROMPT as a job and print its id (with --wait: follow it and print the result)."""
    control = {
        "priority": priority,
        "tenant": tenant,
        "not_before": not_before,
        "delay_s": delay_s,
        "callback_url": callback_url,
    }
    request = build_request(prompt, type_, graph, text_file, profile, control)
    submit_request(request, job_id, wait, timeout)


@with_client
async def submit_request(
    client: Client, request: JobRequest, job_id: str | None, wait: bool, timeout: float
) -> None:
    new_id = await client.submit_request(request, job_id=job_id)
    click.echo(new_id)
    if wait:
        await follow_and_print(client, new_id, timeout)


def build_request(
    prompt: str,
    type_: str,
    graph: str | None,
    text_file: Path | None,
    profile: str,
    options: dict[str, Any] | None = None,
) -> JobRequest:
    """The request the options describe; `options` are JobOptions' fields, unset ones None."""
    from postel.infra.cli.support import EXIT_INPUT, fail
    from postel.messages import JobRequest, TypeSpec
    from pydantic import ValidationError

    try:
        spec = TypeSpec.model_validate(parse_type_option(type_))
    except (ValidationError, ValueError) as exc:
        fail(f"invalid --type {type_!r}: {exc}", EXIT_INPUT)
    arguments = {"text": text_file.read_text()} if text_file else {}
    chosen = {name: value for name, value in (options or {}).items() if value is not None}
    try:
        return JobRequest(
            prompt=prompt,
            desired_type=spec,
            graph=graph,
            arguments=arguments,
            ambient={"profile": profile},
            options=chosen,
        )
    except ValidationError as exc:
        fail(f"invalid option: {exc.errors()[0]['msg']}", EXIT_INPUT)


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


@click.command("reason")
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


@click.command("coerce")
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


@click.command()
@click.argument("job_id")
@with_client
async def status(client: Client, job_id: str) -> None:
    """Print the job record as JSON."""
    record = await client.status(job_id)
    click.echo(record.model_dump_json(indent=2))


@click.command()
@click.argument("job_id")
@click.option("--reason", default="", help="Why; recorded with the failure.")
@with_client
async def cancel(client: Client, job_id: str, reason: str) -> None:
    """Cancel a queued or running job: it fails as `cancelled` and none of its messages is
    handled afterwards (exit 6 if it had already finished, 4 if there is no such job)."""
    record = await client.cancel(job_id, reason, by="cli")
    click.echo(f"{record.job_id} {record.failure}: {record.error}")


@click.command()
@click.argument("job_id")
@click.option("--follow", is_flag=True, help="Keep printing new events until the job ends.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per event.")
@with_client
async def events(client: Client, job_id: str, follow: bool, as_json: bool) -> None:
    """Print the job's events (every hop), in order."""
    await client.status(job_id)
    source = client.follow(job_id) if follow else _aiter(await client.events.read(job_id))
    async for event in source:
        click.echo(event.model_dump_json() if as_json else format_event(event))


async def _aiter(items: list[Event]) -> Any:
    for item in items:
        yield item


@click.command("calls")
@click.argument("job_id")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per call, whole.")
@click.option(
    "--chars",
    type=click.IntRange(0),
    default=600,
    show_default=True,
    help="Characters shown of each prompt's last message and answer (0: all).",
)
@with_client
async def calls_command(client: Client, job_id: str, as_json: bool, chars: int) -> None:
    """Print the job's hops, each followed by the model calls it made: tokens, finish reason,
    the prompt's last message and the answer."""
    from postel.infra.store.calls import read_calls
    from postel.infra.store.events import HANDLED

    await client.status(job_id)
    calls = await read_calls(client.pool, client.keyspace, job_id)
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
            _show_call(call, chars)


def _show_call(call: RecordedCall, chars: int) -> None:
    def shown(text: str) -> str:
        return text if not chars or len(text) <= chars else text[:chars] + " …"

    usage = call.response.usage
    click.echo(
        f"   ── call {call.ordinal} · {usage.prompt_tokens}+{usage.completion_tokens} "
        f"tokens · {call.response.finish_reason}"
        f"{' · truncated' if call.truncated else ''}"
    )
    click.echo(f"   asked:\n{shown(call.request.last_user_message())}")
    click.echo(f"   answered:\n{shown(call.response.text)}\n")
