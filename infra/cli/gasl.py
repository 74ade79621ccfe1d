"""`postel graph` and `postel gasl`; infra/cli/main.py attaches them.

`graph add|list|info` talk to the running system's Redis (like `postel submit`);
`gasl run|check` work on a local GraphML file and need no Redis. Exit codes are
infra/cli/support.py's: 1 a command failed, 2 bad input, 3 Redis unreachable, 4 unknown graph.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from postel.infra.store.graphs import GraphInfo, GraphRegistry

SAMPLE = "sample"


# Every import beyond click (networkx, the GASL executor, pydantic, Redis, the command
# line's support) happens in the commands that need it, so `postel --help` and the other
# commands start fast.


@asynccontextmanager
async def _registry() -> AsyncIterator[GraphRegistry]:
    from postel.infra.cli import support as cli_support
    from postel.infra.store.connect import redis_client
    from postel.infra.store.graphs import GraphRegistry

    client = redis_client(cli_support.settings().effective_redis_url)
    try:
        yield GraphRegistry(client)
    finally:
        await client.aclose()


def _info_row(info: GraphInfo) -> str:
    return (
        f"{info.name:<24}{info.version:>8}{info.nodes:>10}{info.edges:>10}  {info.format:<15}"
        f"{info.added_at:%Y-%m-%d %H:%M}  {info.source}"
    )


@click.group()
def graph() -> None:
    """Named graphs in Redis, which workers on any machine load by name.

    Jobs refer to a graph by its name (`postel submit --graph NAME`)."""


@graph.command("add")
@click.argument("name")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def graph_add(name: str, file: Path) -> None:
    """Store the GraphML FILE (nano-graphrag or LightRAG) as graph NAME.

    The file is parsed first and refused if it is not a usable graph. Adding an existing
    NAME replaces it with a new version; workers reload it on their next use."""
    from postel.infra.cli import support as cli_support
    from postel.infra.store.graphs import GraphFileError, InvalidGraphName, validate_name

    try:
        validate_name(name)
    except InvalidGraphName as exc:
        cli_support.fail(str(exc), cli_support.EXIT_INPUT)

    async def go() -> GraphInfo:
        async with _registry() as registry:
            return await registry.add(name, file)

    try:
        info = cli_support.run_async(go)()
    except GraphFileError as exc:
        cli_support.fail(str(exc), cli_support.EXIT_INPUT)
    click.echo(
        f"graph {info.name} version {info.version}: {info.nodes} nodes, {info.edges} edges "
        f"({info.format}, from {info.source})"
    )


@graph.command("list")
@click.option("--json", "as_json", is_flag=True, help="A JSON array of the graphs' metadata.")
def graph_list(as_json: bool) -> None:
    """List the registered graphs: name, version, size, format, when added, source file."""
    from postel.infra.cli import support as cli_support

    async def go() -> list[GraphInfo]:
        async with _registry() as registry:
            return await registry.list()

    infos = cli_support.run_async(go)()
    if as_json:
        click.echo(json.dumps([i.model_dump(mode="json") for i in infos], indent=2))
    elif not infos:
        click.echo("no graphs registered; add one with `postel graph add NAME FILE`")
    else:
        click.echo(
            f"{'name':<24}{'version':>8}{'nodes':>10}{'edges':>10}  {'format':<15}"
            f"{'added (UTC)':<18}source"
        )
        for info in infos:
            click.echo(_info_row(info))


@graph.command("info")
@click.argument("name")
def graph_info(name: str) -> None:
    """Print graph NAME's metadata as JSON (exit 4 if there is no such graph)."""
    from postel.infra.cli import support as cli_support
    from postel.infra.store.graphs import GraphNotFound

    async def go() -> GraphInfo:
        async with _registry() as registry:
            return await registry.info(name)

    try:
        info = cli_support.run_async(go)()
    except GraphNotFound as exc:
        cli_support.fail(str(exc), cli_support.EXIT_NOT_FOUND)
    click.echo(info.model_dump_json(indent=2))


@click.group()
def gasl() -> None:
    """Run GASL commands on a local GraphML file, or check their syntax (no Redis needed).

    docs/GASL.md describes the language."""


@gasl.command("run")
@click.option(
    "--graph",
    "graph_source",
    required=True,
    help="A GraphML file (nano-graphrag or LightRAG), or `sample` for the bundled MMWR graph.",
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
    if not graph_path.is_file():
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
        result = run_plan(graph_path, loaded, state_dir, max_rows=limit)
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
