"""The `postel` command line: the `main` group and where each command lives.

- jobs.py: submit, reason, status, cancel, events, calls, coerce;
- dead.py: `postel dead` (list, show, redrive, discard);
- graph.py: `postel graph`; gasl.py: `postel gasl` (its work in gasl_run.py);
- serve.py: up, web, worker, model serve, workers;
- replay.py: export, replay;
- here: demo (its work in demo.py) and schema (schema.py).

What the commands share: client_command.py (`with_client`: settings, the client, exit
codes, for a command that talks to the running system) and support.py (exit codes,
`fail`, `run_async`, `settings`); commands other distributions add, such as `postel bench`:
entry_points.py. A new command goes in the module of its group and is added below.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from postel.infra.cli.dead import dead
from postel.infra.cli.entry_points import CommandsWithEntryPoints
from postel.infra.cli.gasl import gasl
from postel.infra.cli.graph import graph
from postel.infra.cli.jobs import (
    calls_command,
    cancel,
    coerce_command,
    events,
    reason_command,
    status,
    submit,
)
from postel.infra.cli.replay import export_command, replay_command
from postel.infra.cli.serve import model, up, web, worker, workers

# Each command imports what it needs when it runs (pydantic, Redis, the client, the
# services): `postel --help` and every command start without the others' imports.


@click.group(cls=CommandsWithEntryPoints, context_settings={"help_option_names": ["-h", "--help"]})
@click.pass_context
def main(ctx: click.Context) -> None:
    """postel: typed LLM jobs through five worker queues on Redis."""
    from postel.infra.cli.support import logs_to_stderr

    # every command logs to stderr from its first line: stdout carries only its output;
    # the demo's terminal is its story, so it logs to a file from its first line instead
    if ctx.invoked_subcommand != "demo":
        logs_to_stderr()


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
@click.option(
    "--mission/--small",
    default=None,
    help="Ask the whole mission (a document on collaborations) or the bundled model's "
    "question (a person's co-authors); default: the small one on the bundled model.",
)
def demo(max_rounds: int, max_tokens: int, timeout: float, mission: bool | None) -> None:
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
            current,
            click.echo,
            max_rounds=max_rounds,
            max_tokens=max_tokens,
            timeout=timeout,
            mission=mission,
        )
        record = outcome.record
        click.echo("\n" + "\n".join(verdict_lines(record)))
        if record.status == "failed":
            if isinstance(record.result, dict) and "sections" in record.result:
                click.echo("\nWhat was delivered before it failed (the model's words):\n")
                click.echo(to_markdown(record.result))
        elif isinstance(record.result, dict) and "sections" in record.result:
            click.echo("")
            click.echo(to_markdown(record.result))
        else:
            click.echo(json.dumps(record.result, ensure_ascii=False, indent=2))
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


@main.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
def schema(directory: Path) -> None:
    """Write one JSON Schema per message type into DIRECTORY."""
    from postel.infra.cli.schema import write_schemas

    for path in write_schemas(directory):
        click.echo(str(path))


COMMANDS: tuple[click.Command, ...] = (
    # jobs.py
    submit,
    reason_command,
    status,
    cancel,
    events,
    calls_command,
    coerce_command,
    # serve.py
    up,
    web,
    worker,
    workers,
    model,
    # dead.py, graph.py, gasl.py, replay.py
    dead,
    graph,
    gasl,
    export_command,
    replay_command,
)
for command in COMMANDS:
    main.add_command(command)


if __name__ == "__main__":
    main()
