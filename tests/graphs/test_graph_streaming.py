"""Graph inputs streamed into the store: edge and node lists (CSV, TSV, Parquet, gzip),
limits refused while streaming, versions shipped as checksummed chunks (or on a volume) and
cached per machine, `remove` freeing a graph everywhere, and the versions a process keeps."""

from __future__ import annotations

import gzip
import io
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import redis.asyncio as aioredis
from postel.infra.store.graph_ingest import GraphLimits, GraphTooLarge
from postel.infra.store.graph_store import GraphStorage
from postel.infra.store.graphs import AdapterCache, GraphRegistry
from postel.infra.store.keys import Keyspace
from postel.messages.errors import GraphNotFound
from postel.services.gasl.loaders import DEMO_GRAPH, PARALLEL

KEYS = Keyspace()

LIGHTRAG_EDGES = (
    "src_id,tgt_id,keywords,weight,description\n"
    'Alice,Bob,"knows,works_with",2.5,met at work\n'
    "Bob,Carol,knows,1,\n"
    "Alice,Bob,mentors,3,a second relation\n"
    "Carol,Dave,knows,1,Dave has no node row\n"
)
LIGHTRAG_NODES = (
    "entity_id,entity_type,description\n"
    "Alice,person,an engineer\n"
    "Bob,person,\n"
    "Carol,org,a company<SEP>founded 1990\n"
)
NEO4J_EDGES = ":START_ID,:END_ID,:TYPE,weight:float\na,b,KNOWS,0.5\nb,c,LIKES,2\n"
NEO4J_NODES = ":ID(Person),name,:LABEL,age:int\na,Ann,Person,31\nb,Ben,Person,40\nc,Cid,Robot,7\n"


class Recording:
    """A collector that records what the cache told it."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def building(self) -> AbstractContextManager[None]:
        self.calls.append("building")
        return nullcontext()

    def settled(self) -> None:
        self.calls.append("settled")

    def released(self) -> None:
        self.calls.append("released")


def storage(tmp_path: Path, machine: str = "m1", **kwargs: object) -> GraphStorage:
    return GraphStorage(cache_dir=tmp_path / machine, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def registry(redis_client: aioredis.Redis, tmp_path: Path) -> GraphRegistry:
    return GraphRegistry(redis_client, KEYS, AdapterCache(), storage=storage(tmp_path))


def write(tmp_path: Path, name: str, text: str, zipped: bool = False) -> Path:
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if zipped else text.encode())
    return path


async def test_a_lightrag_edge_list_with_its_node_list(
    registry: GraphRegistry, tmp_path: Path
) -> None:
    edges = write(tmp_path, "edges.csv.gz", LIGHTRAG_EDGES, zipped=True)
    nodes = write(tmp_path, "nodes.csv", LIGHTRAG_NODES)
    info = await registry.add("kg", edges, nodes=nodes)
    assert (info.nodes, info.edges, info.format, info.directed) == (4, 4, "edge list", False)
    assert info.size_bytes == len(LIGHTRAG_EDGES) + len(LIGHTRAG_NODES)
    graph = (await registry.adapter("kg")).graph
    assert list(graph.nodes) == ["Alice", "Bob", "Carol", "Dave"]
    assert graph.nodes["Carol"]["entity_type"] == "ORG"
    assert graph.nodes["Carol"]["description"] == ["a company", "founded 1990"]
    assert graph.nodes["Dave"] == {"id": "Dave", "description": [], "source_ids": []}
    ab = graph.edges["Alice", "Bob"]
    assert (ab["keywords"], ab["weight"], ab["description"]) == (
        ["knows", "works_with"],
        2.5,
        ["met at work"],
    )
    assert [r["keywords"] for r in ab[PARALLEL]] == [["mentors"]]


@pytest.mark.parametrize("kind", ["csv", "tsv", "parquet"])
async def test_a_neo4j_export_directed(registry: GraphRegistry, tmp_path: Path, kind: str) -> None:
    def table(text: str, name: str) -> Path:
        if kind == "csv":
            return write(tmp_path, f"{name}.csv", text)
        if kind == "tsv":
            return write(tmp_path, f"{name}.tsv", text.replace(",", "\t"))
        rows = [line.split(",") for line in text.strip().splitlines()]
        path = tmp_path / f"{name}.parquet"
        columns = {head: [row[i] for row in rows[1:]] for i, head in enumerate(rows[0])}
        pq.write_table(pa.table(columns), path)
        return path

    info = await registry.add(
        "neo", table(NEO4J_EDGES, "rels"), nodes=table(NEO4J_NODES, "people"), directed=True
    )
    assert (info.nodes, info.edges, info.directed) == (3, 2, True)
    graph = (await registry.adapter("neo")).graph
    assert graph.nodes["a"]["entity_type"] == "PERSON"
    assert graph.nodes["a"]["name"] == "Ann"
    assert graph.edges["a", "b"]["keywords"] == ["KNOWS"]
    assert graph.edges["a", "b"]["weight"] == 0.5
    assert graph.has_edge("b", "c") and not graph.has_edge("c", "b")
    if kind == "csv":  # the typed header converts
        assert graph.nodes["a"]["age"] == 31


async def test_an_edge_list_without_its_columns_is_refused(
    registry: GraphRegistry, redis_client: aioredis.Redis, tmp_path: Path
) -> None:
    with pytest.raises(Exception, match="needs a source and a target column"):
        await registry.add("bad", write(tmp_path, "x.csv", "a,b\n1,2\n"))
    assert await registry.names() == []


@pytest.mark.parametrize(
    ("limits", "setting"),
    [
        (GraphLimits(max_bytes=100_000), "POSTEL_GRAPH_MAX_BYTES"),
        (GraphLimits(max_nodes=1000), "POSTEL_GRAPH_MAX_NODES"),
        (GraphLimits(max_edges=1000), "POSTEL_GRAPH_MAX_EDGES"),
    ],
)
async def test_a_limit_refuses_the_input_naming_the_setting(
    redis_client: aioredis.Redis, tmp_path: Path, limits: GraphLimits, setting: str
) -> None:
    registry = GraphRegistry(
        redis_client, KEYS, AdapterCache(), storage=storage(tmp_path, limits=limits)
    )
    with pytest.raises(GraphTooLarge, match=setting) as refused:
        await registry.add("big", DEMO_GRAPH)
    assert "nothing was stored" in str(refused.value)
    assert await redis_client.keys("postel:graphs*") == []


def bomb(pairs: int) -> bytes:
    edges = "".join('<edge source="a" target="b"/>' for _ in range(pairs))
    return (
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns"><graph edgedefault="directed">'
        f'<node id="a"/><node id="b"/>{edges}</graph></graphml>'
    ).encode()


async def test_parallel_relations_past_the_limit_are_refused_and_below_it_kept(
    redis_client: aioredis.Redis, tmp_path: Path
) -> None:
    registry = GraphRegistry(
        redis_client,
        KEYS,
        AdapterCache(),
        storage=storage(tmp_path, limits=GraphLimits(max_parallel=50)),
    )
    with pytest.raises(GraphTooLarge, match=r"MAX_PARALLEL.*'a' and 'b' 51 times in a row"):
        await registry.add_stream("bomb", io.BytesIO(gzip.compress(bomb(51))), source="b.gz")
    # the same pair spread out, not in a row: counted in the spool once it is read
    spread = bomb(51).replace(b"/>", b'/><edge source="a" target="c"/>', 51)
    with pytest.raises(GraphTooLarge, match=r"'a' and 'b' 51 times; nothing"):
        await registry.add_stream("bomb", io.BytesIO(spread), source="spread.graphml")
    info = await registry.add_stream("bomb", io.BytesIO(gzip.compress(bomb(50))), source="b.gz")
    assert (info.nodes, info.edges) == (2, 50)
    assert len((await registry.adapter("bomb")).graph.edges["a", "b"][PARALLEL]) == 49


async def test_a_version_ships_as_chunks_and_a_new_one_frees_them(
    redis_client: aioredis.Redis, tmp_path: Path
) -> None:
    registry = GraphRegistry(
        redis_client, KEYS, AdapterCache(), storage=storage(tmp_path, chunk_bytes=65_536)
    )
    first = await registry.add("g", DEMO_GRAPH)
    chunks = int(await redis_client.hget(KEYS.graph("g"), "chunks"))
    assert chunks == -(-first.stored_bytes // 65_536) > 1
    await registry.adapter("g")
    second = await registry.add("g", DEMO_GRAPH)
    assert second.version == 2
    assert await redis_client.exists(*(KEYS.graph_chunk("g", 1, i) for i in range(chunks))) == 0
    assert await redis_client.exists(KEYS.graph_chunk("g", 2, 0)) == 1
    assert (await registry.adapter("g")).graph.number_of_nodes() == 3261
    cached = sorted(p.name for p in (registry.storage.cache_dir).rglob("*-*") if p.is_dir())
    assert len(cached) == 1 and cached[0].startswith("2-"), cached


async def test_a_shared_volume_keeps_the_store_out_of_redis(
    redis_client: aioredis.Redis, tmp_path: Path
) -> None:
    volume = tmp_path / "volume"
    writer = GraphRegistry(
        redis_client, KEYS, AdapterCache(), storage=storage(tmp_path, "m1", volume=volume)
    )
    reader = GraphRegistry(
        redis_client, KEYS, AdapterCache(), storage=storage(tmp_path, "m2", volume=volume)
    )
    await writer.add("g", DEMO_GRAPH)
    assert [k async for k in redis_client.scan_iter("postel:graphs:g:*")] == []
    assert len(list(volume.rglob("*.store"))) == 1
    assert (await reader.adapter("g")).graph.number_of_nodes() == 3261
    await writer.remove("g")
    assert list(volume.rglob("*.store")) == []


async def test_remove_frees_the_graph_everywhere(
    redis_client: aioredis.Redis, tmp_path: Path
) -> None:
    """Two worker processes on one machine share its cache; a third process removes the
    graph: its keys and the machine's cached store go at once, and each worker drops its
    copy on its next use of any graph."""
    recorded = Recording()
    machine = storage(tmp_path)
    one = GraphRegistry(redis_client, KEYS, AdapterCache(collector=recorded), storage=machine)
    two = GraphRegistry(redis_client, KEYS, AdapterCache(), storage=machine)
    admin = GraphRegistry(redis_client, KEYS, AdapterCache(), storage=machine)
    await admin.add("g", DEMO_GRAPH)
    await admin.add("other", DEMO_GRAPH)
    await one.adapter("g")
    await two.adapter("g")
    folders = {p for p in machine.cache_dir.rglob("1-*") if p.is_dir()}
    assert len(folders) == 1, "both processes opened the one cached store"
    removed = await admin.remove("g")
    assert removed.name == "g"
    assert [k async for k in redis_client.scan_iter("postel:graphs:g*")] == []
    assert await admin.names() == ["other"]
    assert not any(p.exists() for p in folders)
    await one.adapter("other")
    assert [name for _, name in one.cache.entries] == ["other"]
    assert "released" in recorded.calls
    with pytest.raises(GraphNotFound, match="no graph named 'g'"):
        await two.adapter("g")
    assert [name for _, name in two.cache.entries] == []
    with pytest.raises(GraphNotFound):
        await admin.remove("g")


async def test_a_process_keeps_its_bounded_number_of_versions_least_recent_dropped(
    redis_client: aioredis.Redis, tmp_path: Path
) -> None:
    recorded = Recording()
    registry = GraphRegistry(
        redis_client, KEYS, AdapterCache(versions=2, collector=recorded), storage=storage(tmp_path)
    )
    for name in ("a", "b", "c"):
        await registry.add(name, DEMO_GRAPH)
    first = await registry.adapter("a")
    await registry.adapter("b")
    assert await registry.adapter("a") is first  # a is now the most recent
    assert recorded.calls.count("released") == 0
    await registry.adapter("c")
    assert [name for _, name in registry.cache.entries] == ["a", "c"]
    assert recorded.calls.count("released") == 1
    assert recorded.calls.count("building") == 3


async def test_the_engine_is_chosen_or_follows_the_graphs_size(
    redis_client: aioredis.Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A version on ladybug is fetched as its store folder and opened read-only within the
    buffer pool setting; without --engine, a graph of LADYBUG_FROM_RELATIONS relations or
    more goes to ladybug."""
    from postel.infra.store import graphs
    from postel.services.gasl.engines import ladybug_store
    from postel.services.gasl.engines import registry as engines
    from postel.services.gasl.engines.ladybug_engine import LadybugAdapter

    pools: list[int | None] = []

    def opening(engine: str, source: Path, *, buffer_pool_size: int | None = None) -> object:
        pools.append(buffer_pool_size)
        return engines.open_engine(engine, source, buffer_pool_size=buffer_pool_size)  # type: ignore[arg-type]

    monkeypatch.setattr(graphs, "open_engine", opening)
    real_build = ladybug_store.build_ladybug_store

    def building(*args: Any, **kwargs: Any) -> Any:
        pools.append(kwargs["buffer_pool_size"])
        return real_build(*args, **kwargs)

    monkeypatch.setattr(ladybug_store, "build_ladybug_store", building)
    pool, build_pool = 32 * 1_048_576, 96 * 1_048_576
    registry = GraphRegistry(
        redis_client,
        KEYS,
        AdapterCache(),
        storage=storage(tmp_path, buffer_pool_bytes=pool, build_pool_bytes=build_pool),
    )
    small = await registry.add("small", DEMO_GRAPH)
    assert small.engine == "networkx" and small.edges < engines.LADYBUG_FROM_RELATIONS
    monkeypatch.setattr(engines, "LADYBUG_FROM_RELATIONS", small.edges)
    big = await registry.add("big", DEMO_GRAPH)
    chosen = await registry.add("chosen", DEMO_GRAPH, engine="networkx")
    assert (big.engine, chosen.engine) == ("ladybug", "networkx")
    adapter = await registry.adapter("big")
    assert isinstance(adapter, LadybugAdapter) and pools == [build_pool, pool]
    assert [i.engine for i in await registry.list()] == ["ladybug", "networkx", "networkx"]
    await registry.remove("big")
    assert not list(registry.storage.cache_dir.rglob("big"))


async def test_a_graph_on_a_redis_cluster(cluster_url: str, tmp_path: Path) -> None:
    """On a cluster a version's chunks spread over the shards; add, open and remove work
    all the same."""
    from postel.infra.store.connect import keyspace_of, redis_client

    client = redis_client(cluster_url)
    try:
        registry = GraphRegistry(
            client,
            keyspace_of(cluster_url),
            AdapterCache(),
            storage=storage(tmp_path, chunk_bytes=65_536),
        )
        info = await registry.add("g", DEMO_GRAPH)
        assert (await registry.adapter("g")).graph.number_of_nodes() == info.nodes
        await registry.remove("g")
        assert await registry.names() == []
        assert [k async for k in client.scan_iter("postel:graphs*")] == []
    finally:
        await client.aclose()
