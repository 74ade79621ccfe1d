"""`graph add` stores the graph's name index and schema card with its version, built in its
one pass over the spool on either engine; any process reads them once per version
(GraphRegistry.aids)."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.asyncio as aioredis
from postel.infra.store.graph_store import GraphStorage
from postel.infra.store.graphs import AdapterCache, GraphRegistry
from postel.infra.store.keys import Keyspace
from postel.services.linking.aids import NAME_INDEX_FIELD, SCHEMA_CARD_FIELD, build_aids
from postel.services.linking.names import link

KEYS = Keyspace()
MOVIES = """<?xml version='1.0' encoding='utf-8'?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
<key id="d0" for="node" attr.name="entity_type" attr.type="string"/>
<key id="d1" for="edge" attr.name="keywords" attr.type="string"/>
<graph edgedefault="directed">
<node id="Sunken Voice (2010)"><data key="d0">FILM</data></node>
<node id="Ada Lindsen"><data key="d0">PERSON</data></node>
<edge source="Sunken Voice (2010)" target="Ada Lindsen"><data key="d1">directed_by</data></edge>
</graph></graphml>
"""
# a LightRAG edge list: Alice and Bob are related twice (one edge, a PARALLEL relation)
EDGES = (
    "src_id,tgt_id,keywords\n"
    'Alice Ward,Bob Stone,"knows,works_with"\n'
    "Bob Stone,Acme Corp,employed_by\n"
    "Alice Ward,Bob Stone,mentors\n"
)
NODES = "entity_id,entity_type\nAlice Ward,PERSON\nBob Stone,PERSON\nAcme Corp,ORG\n"


def registry_in(redis_client: aioredis.Redis, tmp_path: Path) -> GraphRegistry:
    storage = GraphStorage(cache_dir=tmp_path / "cache")
    return GraphRegistry(redis_client, KEYS, AdapterCache(), storage=storage)


async def test_graph_add_stores_the_name_index_and_schema_card(
    redis_client: aioredis.Redis, tmp_path: Path
) -> None:
    path = tmp_path / "movies.graphml"
    path.write_text(MOVIES)
    registry = registry_in(redis_client, tmp_path)
    await registry.add("movies", path)
    stored = await redis_client.hmget(KEYS.graph("movies"), [NAME_INDEX_FIELD, SCHEMA_CARD_FIELD])
    assert all(stored)
    aids = await registry.aids("movies")
    [entity] = link("Who directed Sunken Voice?", aids.names)
    assert (entity.id, entity.entity_type) == ("Sunken Voice (2010)", "FILM")
    [relation] = aids.card["relations"]
    assert (relation["name"], relation["source"], relation["target"]) == (
        "directed_by",
        "FILM",
        "PERSON",
    )
    assert await registry.aids("movies") is aids  # read once per version


async def test_a_graph_stored_without_them_gets_them_from_its_graph(
    redis_client: aioredis.Redis, tmp_path: Path
) -> None:
    path = tmp_path / "movies.graphml"
    path.write_text(MOVIES)
    registry = registry_in(redis_client, tmp_path)
    await registry.add("movies", path)
    await redis_client.hdel(KEYS.graph("movies"), NAME_INDEX_FIELD, SCHEMA_CARD_FIELD)
    aids = await registry.aids("movies")
    assert link("Who directed Sunken Voice (2010)?", aids.names)[0].how == "exact"
    assert aids.card["entity_types"] == {"FILM": 1, "PERSON": 1}


@pytest.mark.parametrize("engine", ["networkx", "ladybug"])
async def test_they_are_built_in_the_pass_that_writes_either_engines_store(
    redis_client: aioredis.Redis, tmp_path: Path, engine: str
) -> None:
    """The same aids as a graph read whole gives, parallel relations counted, on both
    engines."""
    (tmp_path / "edges.csv").write_text(EDGES)
    (tmp_path / "nodes.csv").write_text(NODES)
    registry = registry_in(redis_client, tmp_path)
    await registry.add(
        "kg", tmp_path / "edges.csv", nodes=tmp_path / "nodes.csv", directed=True, engine=engine
    )
    aids = await registry.aids("kg")
    whole = build_aids(
        [("Alice Ward", {"entity_type": "PERSON"}), ("Bob Stone", {"entity_type": "PERSON"}),
         ("Acme Corp", {"entity_type": "ORG"})],
        [("Alice Ward", "Bob Stone", ["knows", "works_with"]),
         ("Alice Ward", "Bob Stone", ["mentors"]),
         ("Bob Stone", "Acme Corp", ["employed_by"])],
        directed=True,
    )  # fmt: skip
    assert aids.names.nodes == whole.names.nodes
    assert aids.names.names == whole.names.names
    relations = {(r["name"], r["source"], r["target"], r["count"]) for r in aids.card["relations"]}
    assert relations == {
        (r["name"], r["source"], r["target"], r["count"]) for r in whole.card["relations"]
    }
    assert aids.card["entity_types"] == whole.card["entity_types"]
    [entity] = link("Who employs Bob Stone?", aids.names)
    assert (entity.id, entity.entity_type) == ("Bob Stone", "PERSON")


async def test_a_new_version_is_read_with_its_own_aids(
    redis_client: aioredis.Redis, tmp_path: Path
) -> None:
    path = tmp_path / "movies.graphml"
    path.write_text(MOVIES)
    registry = registry_in(redis_client, tmp_path)
    await registry.add("kg", path)
    assert link("Who directed Sunken Voice?", (await registry.aids("kg")).names)
    (tmp_path / "edges.csv").write_text(EDGES)
    (tmp_path / "nodes.csv").write_text(NODES)
    await registry.add("kg", tmp_path / "edges.csv", nodes=tmp_path / "nodes.csv")
    aids = await registry.aids("kg")
    assert not link("Who directed Sunken Voice?", aids.names)
    assert aids.card["entity_types"] == {"PERSON": 2, "ORG": 1}


async def test_a_ladybug_graph_stored_without_them_has_none(
    redis_client: aioredis.Redis, tmp_path: Path
) -> None:
    path = tmp_path / "movies.graphml"
    path.write_text(MOVIES)
    registry = registry_in(redis_client, tmp_path)
    await registry.add("movies", path, engine="ladybug")
    await redis_client.hdel(KEYS.graph("movies"), NAME_INDEX_FIELD, SCHEMA_CARD_FIELD)
    aids = await registry.aids("movies")
    assert link("Who directed Sunken Voice (2010)?", aids.names) == []
    assert aids.card["entity_types"] == {}
    assert aids.card["relations"] == []
