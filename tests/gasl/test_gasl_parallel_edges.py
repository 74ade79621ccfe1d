"""A multigraph loses no relation: parallel edges between the same two nodes are all kept,
FIND edges returns each, a VIA filter matches any of them, and counts are the file's own
(checked against networkx reading the same GraphML)."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest
import redis.asyncio as aioredis
from postel.infra.store.graphs import GraphRegistry
from postel.infra.store.keys import Keyspace
from postel.messages.gasl import GaslPlan
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.schema_summary import summarize_graph

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""


def films_graphml(tmp_path: Path) -> Path:
    """A director who also stars in her film, and an actor in two roles of one film."""
    raw = nx.MultiDiGraph()
    for node, kind in [("NORA", "PERSON"), ("SAM", "PERSON"), ("DUSK", "FILM")]:
        raw.add_node(node, entity_type=kind, description=f"{node} the {kind.lower()}")
    raw.add_edge("NORA", "DUSK", keywords="directed", description="directed Dusk")
    raw.add_edge("NORA", "DUSK", keywords="starred_in", description="played the lead")
    raw.add_edge("SAM", "DUSK", keywords="starred_in", description="played the twin")
    raw.add_edge("SAM", "DUSK", keywords="starred_in", description="played the twin's double")
    path = tmp_path / "films.graphml"
    nx.write_graphml(raw, path)
    return path


async def run(adapter: NetworkXAdapter, *commands: str) -> list[dict]:
    executor = GaslExecutor(adapter, max_rows=100)
    result = await executor.execute_plan(GaslPlan(plan_id="p", commands=list(commands)))
    assert [r.status for r in result.records] == ["success"] * len(commands), result.records
    return result.records[-1].rows


async def test_every_parallel_relation_is_kept_and_queryable(tmp_path: Path) -> None:
    path = films_graphml(tmp_path)
    oracle = nx.read_graphml(path)
    adapter = NetworkXAdapter.from_graphml(path)
    rows = await run(adapter, "FIND edges AS all")
    assert len(rows) == oracle.number_of_edges() == 4
    described = sorted(d for row in rows for d in row["description"])
    assert described == sorted(d for *_, d in oracle.edges(data="description"))
    starred = await run(adapter, 'FIND edges WHERE keywords CONTAINS "starred" AS s')
    assert len(starred) == 3
    # NORA's second relation (starred_in) is walkable too
    reached = await run(adapter, 'NEIGHBORS "NORA" VIA "starred" AS films')
    assert [r["id"] for r in reached] == ["DUSK"]
    assert summarize_graph(adapter)["edges"] == 4
    assert summarize_graph(adapter)["relation_keywords"] == {"starred_in": 3, "directed": 1}


@pytest.mark.usefixtures("redis_url")
async def test_adding_a_multigraph_reports_every_relation(
    tmp_path: Path, redis_client: aioredis.Redis
) -> None:
    info = await GraphRegistry(redis_client, KEYS).add("films", films_graphml(tmp_path))
    assert (info.nodes, info.edges) == (3, 4)
