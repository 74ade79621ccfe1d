"""`graph add` stores the graph's name index and schema card beside its version; any
process reads them once per version (GraphRegistry.aids)."""

from __future__ import annotations

from pathlib import Path

import redis.asyncio as aioredis
from postel.infra.store.graphs import AdapterCache, GraphRegistry
from postel.infra.store.keys import Keyspace
from postel.services.linking.aids import NAME_INDEX_FIELD, SCHEMA_CARD_FIELD
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


async def test_graph_add_stores_the_name_index_and_schema_card(
    redis_client: aioredis.Redis, tmp_path: Path
) -> None:
    path = tmp_path / "movies.graphml"
    path.write_text(MOVIES)
    registry = GraphRegistry(redis_client, KEYS, AdapterCache())
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
    registry = GraphRegistry(redis_client, KEYS, AdapterCache())
    await registry.add("movies", path)
    await redis_client.hdel(KEYS.graph("movies"), NAME_INDEX_FIELD, SCHEMA_CARD_FIELD)
    aids = await registry.aids("movies")
    assert link("Who directed Sunken Voice (2010)?", aids.names)[0].how == "exact"
    assert aids.card["entity_types"] == {"FILM": 1, "PERSON": 1}
