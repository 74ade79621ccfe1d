"""`postel export` and `postel replay`: a job as one JSON file, and that file (or a job of
the running system) re-run offline from its recorded model calls (infra/client/replay.py).
Reading a job from the system runs under `with_client` (infra/cli/client_command.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from postel.infra.cli.client_command import with_client

if TYPE_CHECKING:
    from postel.infra.client.client import Client
    from postel.infra.client.replay import JobExport


@with_client
async def exported_job(client: Client, job_id: str) -> JobExport:
    """The job `job_id` of the running system, as `postel export` writes it."""
    from postel.infra.client.replay import capability_of, export_job

    return await export_job(client, job_id, capability_of(client.settings))


@click.command("export")
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
    exported = exported_job(job_id)
    text = exported.model_dump_json(indent=2)
    if output is None:
        click.echo(text)
    else:
        output.write_text(text + "\n")
        click.echo(f"{job_id}: {len(exported.calls)} model calls -> {output}", err=True)


@click.command("replay")
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
    from postel.infra.client.replay import (
        ReplayInputError,
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

    async def go(exported: JobExport) -> None:
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
        found = Path(source).is_file()
        run_async(go)(read_export(Path(source)) if found else exported_job(source))
    except ReplayInputError as exc:
        fail(str(exc), EXIT_INPUT)
