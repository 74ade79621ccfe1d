"""GraphRegistry on real Redis: storage, refusals, and the per-process adapter cache."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from postel.infra.store import graphs
from postel.infra.store.graphs import (
    AdapterCache,
    GraphFileError,
    GraphNotFound,
    GraphRegistry,
    InvalidGraphName,
)
from postel.infra.store.keys import Keyspace
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""

NANO = """<?xml version='1.0' encoding='utf-8'?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
<key id="d0" for="node" attr.name="entity_type" attr.type="string"/>
<key id="d1" for="node" attr.name="description" attr.type="string"/>
<key id="d2" for="edge" attr.name="weight" attr.type="double"/>
<graph edgedefault="undirected">
<node id="&quot;ALICE&quot;"><data key="d0">"PERSON"</data><data key="d1">"An author."</data></node>
<node id="&quot;CDC&quot;"><data key="d0">"ORGANIZATION"</data></node>
<edge source="&quot;ALICE&quot;" target="&quot;CDC&quot;"><data key="d2">2.0</data></edge>
</graph></graphml>
"""

# The same graph as LightRAG writes it, plus a node.
LIGHTRAG = """<?xml version='1.0' encoding='utf-8'?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
<key id="d0" for="node" attr.name="entity_id" attr.type="string"/>
<key id="d1" for="node" attr.name="entity_type" attr.type="string"/>
<key id="d2" for="edge" attr.name="keywords" attr.type="string"/>
<graph edgedefault="undirected">
<node id="ALICE"><data key="d0">ALICE</data><data key="d1">person</data></node>
<node id="CDC"><data key="d0">CDC</data><data key="d1">organization</data></node>
<node id="BOB"><data key="d0">BOB</data><data key="d1">person</data></node>
<edge source="ALICE" target="CDC"><data key="d2">works at,author</data></edge>
</graph></graphml>
"""


@pytest.fixture
def nano_file(tmp_path: Path) -> Path:
    path = tmp_path / "authors.graphml"
    path.write_text(NANO)
    return path


@pytest.fixture
def lightrag_file(tmp_path: Path) -> Path:
    path = tmp_path / "authors_lightrag.graphml"
    path.write_text(LIGHTRAG)
    return path


@pytest.fixture
def registry(redis_client: aioredis.Redis) -> GraphRegistry:
    # A private cache per test: the process-wide one would outlive the test's flushed Redis.
    return GraphRegistry(redis_client, KEYS, AdapterCache())


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts loads of a stored graph (add parses the GraphML; a load decodes what it
    stored)."""
    calls: list[int] = []
    real = graphs.load_packed

    def counting(stored: bytes) -> NetworkXAdapter:
        calls.append(len(stored))
        return real(stored)

    monkeypatch.setattr(graphs, "load_packed", counting)
    return calls


async def test_add_list_info(registry: GraphRegistry, nano_file: Path, lightrag_file: Path) -> None:
    first = await registry.add("mmwr.authors", nano_file)
    assert (first.name, first.version, first.nodes, first.edges) == ("mmwr.authors", 1, 2, 1)
    assert first.format == "nano-graphrag" and first.source == "authors.graphml"
    assert first.sha256 == hashlib.sha256(nano_file.read_bytes()).hexdigest()
    assert first.size_bytes == len(NANO.encode()) and not first.directed

    other = await registry.add("lr", lightrag_file)
    assert (other.format, other.nodes) == ("LightRAG", 3)
    again = await registry.add("mmwr.authors", lightrag_file)
    assert again.version == 2 and again.nodes == 3

    listed = await registry.list()
    assert [(i.name, i.version) for i in listed] == [("lr", 1), ("mmwr.authors", 2)]
    assert await registry.info("mmwr.authors") == again


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("not xml at all", "not a readable GraphML graph"),
        ("<root><child/></root>", "not a readable GraphML graph"),
        (
            '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
            '<graph edgedefault="undirected"/></graphml>',
            "holds no nodes",
        ),
    ],
)
async def test_bad_file_refused_and_nothing_stored(
    registry: GraphRegistry,
    redis_client: aioredis.Redis,
    tmp_path: Path,
    content: str,
    problem: str,
) -> None:
    bad = tmp_path / "broken.graphml"
    bad.write_text(content)
    with pytest.raises(GraphFileError, match=problem) as caught:
        await registry.add("g", bad)
    assert "broken.graphml" in str(caught.value)
    assert await redis_client.keys(f"{KEYS.graphs}*") == []


async def test_missing_file_and_bad_names_refused(
    registry: GraphRegistry, redis_client: aioredis.Redis, tmp_path: Path, nano_file: Path
) -> None:
    with pytest.raises(GraphFileError, match=r"cannot read .*missing\.graphml"):
        await registry.add("g", tmp_path / "missing.graphml")
    for name in ("", "a b", "x/y", "a" * 101, "ünï"):
        with pytest.raises(InvalidGraphName):
            await registry.add(name, nano_file)
    assert await redis_client.keys(f"{KEYS.graphs}*") == []


async def test_unknown_name_lists_known_ones(registry: GraphRegistry, nano_file: Path) -> None:
    with pytest.raises(GraphNotFound, match="none yet"):
        await registry.info("ghost")
    await registry.add("beta", nano_file)
    await registry.add("alpha", nano_file)
    with pytest.raises(GraphNotFound, match="known graphs: alpha, beta") as caught:
        await registry.adapter("ghost")
    assert caught.value.known == ["alpha", "beta"]


async def test_adapter_cached_until_the_graph_changes(
    registry: GraphRegistry, nano_file: Path, lightrag_file: Path, loads: list[int]
) -> None:
    await registry.add("g", nano_file)
    first = await registry.adapter("g")
    assert await registry.adapter("g") is first
    assert len(loads) == 1  # the second call reused the first load
    alice = first.get_node("ALICE")
    assert alice is not None and alice["entity_type"] == "PERSON"
    assert first.get_node("BOB") is None

    await registry.add("g", lightrag_file)
    second = await registry.adapter("g")
    assert second is not first and len(loads) == 2
    assert second.graph.number_of_nodes() == 3 and second.get_node("BOB") is not None
    assert await registry.adapter("g") is second


async def test_concurrent_cold_loads_parse_once(
    registry: GraphRegistry, nano_file: Path, loads: list[int]
) -> None:
    await registry.add("g", nano_file)
    loaded = await asyncio.gather(*(registry.adapter("g") for _ in range(8)))
    assert all(adapter is loaded[0] for adapter in loaded)
    assert len(loads) == 1


async def test_two_processes_both_see_an_update(
    redis_url: str, nano_file: Path, lightrag_file: Path
) -> None:
    """Two registries with their own clients and caches stand for two worker processes."""
    clients = [aioredis.Redis.from_url(redis_url) for _ in range(2)]
    try:
        one, two = (GraphRegistry(client, KEYS, AdapterCache()) for client in clients)
        await one.add("shared", nano_file)
        before = [await one.adapter("shared"), await two.adapter("shared")]
        assert before[0] is not before[1]  # separate processes, separate copies
        assert [a.graph.number_of_nodes() for a in before] == [2, 2]

        await two.add("shared", lightrag_file)
        after = [await one.adapter("shared"), await two.adapter("shared")]
        assert [a.graph.number_of_nodes() for a in after] == [3, 3]
        assert (await one.info("shared")).version == 2
    finally:
        for client in clients:
            await client.aclose()


async def test_readd_after_flush_is_not_mistaken_for_the_cached_graph(
    registry: GraphRegistry,
    redis_client: aioredis.Redis,
    nano_file: Path,
    lightrag_file: Path,
) -> None:
    await registry.add("g", nano_file)
    assert (await registry.adapter("g")).graph.number_of_nodes() == 2
    await redis_client.flushdb()
    assert (await registry.add("g", lightrag_file)).version == 1  # same version, new file
    assert (await registry.adapter("g")).graph.number_of_nodes() == 3


async def test_text_clients_are_refused(redis_url: str) -> None:
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        with pytest.raises(ValueError, match="decode_responses=False"):
            GraphRegistry(client, KEYS)
    finally:
        await client.aclose()


async def test_summary_follows_the_stored_version(
    registry: GraphRegistry, nano_file: Path, lightrag_file: Path
) -> None:
    await registry.add("g", nano_file)
    first = await registry.summary("g")
    assert first["nodes"] == 2 and first["entity_types"] == {"PERSON": 1, "ORGANIZATION": 1}
    await registry.add("g", lightrag_file)
    second = await registry.summary("g")
    assert second["entity_types"] == {"PERSON": 2, "ORGANIZATION": 1}
    assert "works at" in second["relation_keywords"]
    with pytest.raises(GraphNotFound):
        await registry.summary("ghost")
