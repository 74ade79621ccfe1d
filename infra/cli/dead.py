"""`postel dead`: list, show, redrive and discard dead letters (infra/runtime/redrive.py),
each under `with_client` (infra/cli/client_command.py)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click
from postel.infra.cli.client_command import with_client

if TYPE_CHECKING:
    from postel.infra.client.client import Client


@click.group()
def dead() -> None:
    """Dead letters: messages postel could not handle, kept with the error and the payload."""


JOB_CHARS = 24
ERROR_CHARS = 100  # a list line's error; `postel dead show` prints it whole

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
@with_client
async def dead_list(
    client: Client,
    worker: str | None,
    error: str | None,
    limit: int,
    before: str | None,
    as_json: bool,
) -> None:
    """List dead letters, newest first."""
    from postel.infra.cli.support import clip
    from postel.infra.store.deadletter import list_dead

    page = await list_dead(
        client.pool, client.keyspace, before=before, limit=limit, worker=worker, error=error
    )
    for letter in page.items:
        if as_json:
            click.echo(letter.model_dump_json())
            continue
        when = f"{letter.at:%Y-%m-%d %H:%M:%S}" if letter.at else "?"
        job = clip(letter.job_id or "-", JOB_CHARS)
        error = clip(" ".join(letter.error.split()), ERROR_CHARS)
        click.echo(f"{letter.id:<17} {when}  {letter.worker:<10} {job:<{JOB_CHARS}} {error}")
    if not as_json:
        more = f"; more: --before {page.next}" if page.next else ""
        click.echo(f"({len(page.items)} shown of {page.total}{more})", err=True)


@dead.command("show")
@click.argument("entry_id")
@with_client
async def dead_show(client: Client, entry_id: str) -> None:
    """Print one dead letter as JSON, its raw payload included."""
    from postel.infra.store.deadletter import get_dead

    letter = await get_dead(client.pool, client.keyspace, entry_id)
    click.echo(letter.model_dump_json(indent=2))


def _one_letter_or_all(
    entry_id: str | None, every: bool, worker: str | None, error: str | None
) -> None:
    """An id, or --all narrowed by the filters: exit 2 for anything else."""
    from postel.infra.cli.support import EXIT_INPUT, fail

    if (entry_id is None) == (not every):
        fail("give one dead letter id, or --all (with --worker/--error to narrow it)", EXIT_INPUT)
    if entry_id is not None and (worker or error):
        fail("--worker and --error narrow --all; give them without an id", EXIT_INPUT)


@dead.command("redrive")
@click.argument("entry_id", required=False)
@click.option("--all", "every", is_flag=True, help="Every dead letter (narrowed by the filters).")
@worker_filter
@error_filter
def dead_redrive(entry_id: str | None, every: bool, worker: str | None, error: str | None) -> None:
    """Send a dead letter back as a new attempt (its tries reset, its job reopened); with
    --all, every one the filters match. Exit 6 if one stays dead (the reason is printed)."""
    _one_letter_or_all(entry_id, every, worker, error)
    redrive_letters(entry_id, worker, error)


@with_client
async def redrive_letters(
    client: Client, entry_id: str | None, worker: str | None, error: str | None
) -> None:
    """Redrive the dead letter `entry_id`, or (None) every one the filters match."""
    from postel.infra.cli.support import EXIT_REFUSED
    from postel.infra.runtime.redrive import redrive, redrive_matching

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


@dead.command("discard")
@click.argument("entry_id", required=False)
@click.option("--all", "every", is_flag=True, help="Every dead letter (narrowed by the filters).")
@worker_filter
@error_filter
def dead_discard(entry_id: str | None, every: bool, worker: str | None, error: str | None) -> None:
    """Drop a dead letter for good (recorded as a `discarded` event); with --all, every one
    the filters match. Exit 4 if the id names no dead letter."""
    _one_letter_or_all(entry_id, every, worker, error)
    discard_letters(entry_id, worker, error)


@with_client
async def discard_letters(
    client: Client, entry_id: str | None, worker: str | None, error: str | None
) -> None:
    """Discard the dead letter `entry_id`, or (None) every one the filters match."""
    from postel.infra.runtime.redrive import discard, discard_matching

    if entry_id is not None:
        done = await discard(client.pool, client.events, entry_id, by="cli")
    else:
        done = await discard_matching(
            client.pool, client.events, by="cli", worker=worker, error=error
        )
    for letter in done.discarded:
        click.echo(f"{letter} discarded")
    click.echo(f"discarded {len(done.discarded)}", err=True)
