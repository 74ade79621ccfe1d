"""`postel gasl run|check`: GASL commands on a local GraphML file, or their syntax checked,
with no Redis (the work is in gasl_run.py; infra/cli/main.py attaches the group). Exit codes
are infra/cli/support.py's: 1 a command failed, 2 bad input.
"""

from __future__ import annotations

from pathlib import Path

import click

SAMPLE = "sample"


# Every import beyond click (networkx, the GASL executor, pydantic, the command line's
# support) happens in the commands that need it, so `postel --help` and the other
# commands start fast.


@click.group()
def gasl() -> None:
    """Run GASL commands on a local GraphML file, or check their syntax (no Redis needed).

    docs/GASL.md describes the language."""


@gasl.command("run")
@click.option(
    "--graph",
    "graph_source",
    required=True,
    help="A GraphML file (nano-graphrag or LightRAG), `sample` for the bundled MMWR graph, "
    "or a ladybug store folder (with --engine ladybug).",
)
@click.option(
    "--engine",
    type=click.Choice(["networkx", "ladybug"]),
    default="networkx",
    show_default=True,
    help="The graph engine: networkx in memory, or ladybug on disk (a GraphML file is "
    "written to a temporary store first). docs/GRAPHS.md compares them.",
)
@click.option(
    "--plan",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A plan object as JSON: {plan_id, why, commands, config}. Instead of COMMANDs.",
)
@click.option(
    "--state",
    "state_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep the state store in this directory, so later runs see its variables.",
)
@click.option("--json", "as_json", is_flag=True, help="The records as JSON, with result rows.")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=None,
    help="At most this many result rows per record in --json.  [default: all]",
)
@click.argument("commands", nargs=-1)
def gasl_run(
    graph_source: str,
    engine: str,
    plan: Path | None,
    state_dir: Path | None,
    as_json: bool,
    limit: int | None,
    commands: tuple[str, ...],
) -> None:
    """Run the COMMANDs (or --plan) and print one execution record per command.

    Exit 0 if every record is success, empty or partial; 1 if any is error,
    binding_failure or schema_mismatch; 2 for bad usage. PROCESS and ANALYZE need a
    model, which runs only in the gasl worker: here they end as error records.

    \b
    postel gasl run --graph sample 'FIND nodes WHERE entity_type = "PERSON" LIMIT 5 AS p'
    postel gasl run --graph sample --engine ladybug 'NEIGHBORS "ROBIN LEE" DEPTH 2 AS n'
    """
    import networkx as nx
    from postel.infra.cli import support as cli_support
    from postel.infra.cli.gasl_run import format_records_table, load_plan, records_json, run_plan
    from postel.messages.gasl import FAILED_STATUSES
    from postel.services.gasl.loaders import DEMO_GRAPH

    if (plan is None) == (not commands):
        cli_support.fail(
            "give either --plan PLAN.json or COMMANDs, not both or neither", cli_support.EXIT_INPUT
        )
    graph_path = DEMO_GRAPH if graph_source == SAMPLE else Path(graph_source)
    store = engine == "ladybug" and (graph_path / "store.json").is_file()
    if not (graph_path.is_file() or store):
        cli_support.fail(
            f"graph file {graph_source} not found (or `--graph sample`)", cli_support.EXIT_INPUT
        )
    try:
        loaded = load_plan(plan if plan is not None else list(commands))
    except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        cli_support.fail(
            f"invalid plan {plan or 'from COMMANDs'}: {_first_line(exc)}", cli_support.EXIT_INPUT
        )
    try:
        result = run_plan(graph_path, loaded, state_dir, max_rows=limit, engine=engine)  # type: ignore[arg-type]
    except (SyntaxError, nx.NetworkXError) as exc:  # xml's ParseError is a SyntaxError
        cli_support.fail(
            f"{graph_path} is not a readable GraphML graph: {exc}", cli_support.EXIT_INPUT
        )
    click.echo(records_json(result.records) if as_json else format_records_table(result.records))
    if any(record.status in FAILED_STATUSES for record in result.records):
        raise SystemExit(cli_support.EXIT_FAILED)


def _first_line(exc: Exception) -> str:
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "plan"
        return f"{where}: {first['msg']} ({exc.error_count()} error(s))"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


@gasl.command("check")
@click.argument("commands", nargs=-1, required=True)
def gasl_check(commands: tuple[str, ...]) -> None:
    """Parse the COMMANDs without running them: `ok`, or where and why one fails.

    Exit 2 if any command does not parse."""
    from postel.infra.cli import support as cli_support
    from postel.infra.cli.gasl_run import check_commands

    failed = False
    for command, outcome in zip(commands, check_commands(list(commands)), strict=True):
        if isinstance(outcome, str):
            click.echo(f"ok     {command}")
            continue
        failed = True
        expected = ", ".join(outcome.expected) or "-"
        click.echo(f"error  {command}")
        click.echo(f"       line {outcome.line}, column {outcome.column}: got {outcome.got}")
        click.echo(f"       expected: {expected}")
        click.echo(f"       hint: {outcome.hint}")
    if failed:
        raise SystemExit(cli_support.EXIT_INPUT)
