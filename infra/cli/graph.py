"""`postel graph add|list|info|remove`: named graphs in the running system's Redis, which
workers on any machine load by name (infra/store/graphs.py, docs/GRAPHS.md);
infra/cli/main.py attaches the group.
Exit codes are infra/cli/support.py's: 2 bad input, 3 Redis unreachable, 4 unknown graph.
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

# Every import beyond click (pydantic, Redis, the command line's support) happens in the
# commands that need it, so `postel --help` and the other commands start fast.


@asynccontextmanager
async def _registry() -> AsyncIterator[GraphRegistry]:
    from postel.infra.cli import support as cli_support
    from postel.infra.store.connect import keyspace_of, redis_client
    from postel.infra.store.graphs import GraphRegistry

    settings = cli_support.settings()
    url = settings.effective_redis_url
    client = redis_client(url)
    try:
        yield GraphRegistry(client, keyspace_of(url), storage=settings.graph_storage())
    finally:
        await client.aclose()


def _info_row(info: GraphInfo) -> str:
    return (
        f"{info.name:<24}{info.version:>8}{info.nodes:>10}{info.edges:>10}  {info.format:<15}"
        f"{info.engine:<10}{info.added_at:%Y-%m-%d %H:%M}  {info.source}"
    )


@click.group()
def graph() -> None:
    """Named graphs in Redis, which workers on any machine load by name.

    Jobs refer to a graph by its name (`postel submit --graph NAME`)."""


@graph.command("add")
@click.argument("name")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--nodes",
    "nodes_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A node list (CSV or Parquet) for an edge-list FILE.",
)
@click.option(
    "--directed", is_flag=True, help="An edge list's edges are directed (GraphML says itself)."
)
@click.option(
    "--engine",
    type=click.Choice(["networkx", "ladybug"]),  # engines/registry.py's ENGINES, unimported
    help="The engine workers open the graph with (default: by the graph's size, "
    "services/gasl/engines/registry.py).",
)
def graph_add(
    name: str, file: Path, nodes_file: Path | None, directed: bool, engine: str | None
) -> None:
    """Store FILE as graph NAME: GraphML (nano-graphrag, LightRAG, any tool), or a CSV /
    Parquet edge list (Neo4j, LightRAG and pandas exports) with an optional node list;
    gzip-compressed or not (docs/GRAPHS.md names the columns).

    The file is streamed with bounded memory and refused if it is not a usable graph or is
    past a limit (POSTEL_GRAPH_MAX_*). Adding an existing NAME replaces it with a new
    version; workers open it on their next use."""
    from postel.infra.cli import support as cli_support
    from postel.infra.store.graphs import InvalidGraphName, validate_name
    from postel.messages.errors import InvalidInput

    try:
        validate_name(name)
    except InvalidGraphName as exc:
        cli_support.fail(str(exc), cli_support.EXIT_INPUT)

    async def go() -> GraphInfo:
        async with _registry() as registry:
            return await registry.add(
                name,
                file,
                engine=engine,  # type: ignore[arg-type]
                nodes=nodes_file,
                directed=directed,
            )

    try:
        info = cli_support.run_async(go)()
    except InvalidInput as exc:
        cli_support.fail(str(exc), cli_support.EXIT_INPUT)
    click.echo(
        f"graph {info.name} version {info.version}: {info.nodes} nodes, {info.edges} edges "
        f"({info.format}, {info.engine}, from {info.source})"
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
            f"{'engine':<10}{'added (UTC)':<18}source"
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


@graph.command("remove")
@click.argument("name")
def graph_remove(name: str) -> None:
    """Remove graph NAME everywhere: its store in Redis (or on the shared volume), this
    machine's cache; workers drop it on their next use of a graph (exit 4 if there is no
    such graph)."""
    from postel.infra.cli import support as cli_support
    from postel.infra.store.graphs import GraphNotFound

    async def go() -> GraphInfo:
        async with _registry() as registry:
            return await registry.remove(name)

    try:
        info = cli_support.run_async(go)()
    except GraphNotFound as exc:
        cli_support.fail(str(exc), cli_support.EXIT_NOT_FOUND)
    click.echo(f"graph {info.name} removed (it was version {info.version})")
