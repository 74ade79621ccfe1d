"""Stored graphs: the fast GraphML reader and the packed form give back exactly what
networkx's parser gives; a bad stored graph is an error naming what is wrong; a load runs
off the event loop, once per process and version."""

from __future__ import annotations

import asyncio
import io
import json
import re
import tempfile
import threading
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
import redis.asyncio as aioredis
from click.testing import CliRunner
from postel.infra.cli.main import main
from postel.infra.runtime.actor import Actor, Runtime
from postel.infra.runtime.settings import Settings
from postel.infra.store import graph_format, graphs
from postel.infra.store.graph_format import GraphFormatError, decode, write_packed
from postel.infra.store.graph_store import GraphStorage
from postel.infra.store.graphs import AdapterCache, GraphRegistry, GraphUnreadable
from postel.infra.store.keys import Keyspace
from postel.infra.store.wire import connect_arq
from postel.messages.errors import GraphNotFound
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.graphml import RawGraph, read_graphml_bytes
from postel.services.gasl.loaders import (
    DEMO_GRAPH,
    GraphTables,
    build_graph,
    normalise,
    normalise_graph,
)
from postel.services.gasl.state import StateStore
from postel_bench.data.scale_movies import write_scale_movie_graphml

from postel.testing.relay import RELAY_WORKERS

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""


def assert_same_graph(expected: nx.Graph, got: nx.Graph) -> None:
    """Same type, nodes, attributes (key order included) and neighbour order."""
    assert type(got) is type(expected)
    assert [(n, list(a.items())) for n, a in got.nodes(data=True)] == [
        (n, list(a.items())) for n, a in expected.nodes(data=True)
    ]
    for node in expected:
        assert list(got.adj[node]) == list(expected.adj[node])
        if expected.is_directed():
            assert list(got.pred[node]) == list(expected.pred[node])
    assert [(u, v, list(a.items())) for u, v, a in got.edges(data=True)] == [
        (u, v, list(a.items())) for u, v, a in expected.edges(data=True)
    ]


def encode(tables: GraphTables) -> bytes:
    """The packed form of tables held in memory, as `write_packed` writes a streamed graph."""
    number = {node: i for i, node in enumerate(tables.nodes)}
    edges = ((number[u], number[v], u, v, attrs) for u, v, attrs in tables.edges)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store"
        write_packed(path, tables.directed, tables.nodes.items(), edges, lambda: tables.relations)
        return path.read_bytes()


def networkx_path(data: bytes) -> nx.Graph:
    """What postel loaded before the packed form: networkx's parser, then normalisation."""
    return normalise_graph(nx.read_graphml(io.BytesIO(data)))


@pytest.fixture(scope="module")
def movie_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("kb") / "movies.graphml"
    write_scale_movie_graphml(path, 3000)
    return path


@pytest.fixture
def registry(redis_client: aioredis.Redis, tmp_path: Path) -> GraphRegistry:
    # a cache of this test's own: a version another test fetched (same server, name, version
    # and checksum) would be opened from the cache without reading the chunks again
    return GraphRegistry(
        redis_client, KEYS, AdapterCache(), storage=GraphStorage(cache_dir=tmp_path)
    )


def test_the_scale_movie_graph_is_deterministic(tmp_path: Path) -> None:
    one, two = tmp_path / "a.graphml", tmp_path / "b.graphml"
    write_scale_movie_graphml(one, 500)
    write_scale_movie_graphml(two, 500)
    assert one.read_bytes() == two.read_bytes()
    graph = nx.read_graphml(one)
    assert graph.is_multigraph() and graph.is_directed()
    assert graph.number_of_edges() >= 500


# Documents that exercise what networkx's reader does besides the plain case.
_HEAD = '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
EDGE_CASES = {
    "simple with edge ids": _HEAD + '<key id="w" for="edge" attr.name="weight" '
    'attr.type="double"/><graph edgedefault="directed"><node id="a"/><node id="b"/>'
    '<edge id="e1" source="a" target="b"><data key="w">2.5</data></edge>'
    '<edge source="b" target="c"/></graph></graphml>',
    "multigraph, ids as keys, a repeated id merges": _HEAD
    + '<key id="k" for="edge" attr.name="kind" attr.type="string"/>'
    '<graph edgedefault="directed"><node id="a"/>'
    '<edge id="0" source="a" target="b"><data key="k">x</data></edge>'
    '<edge id="0" source="a" target="b"><data key="k">y</data></edge>'
    '<edge source="a" target="b"><data key="k">z</data></edge>'
    '<edge id="e" source="b" target="a"/></graph></graphml>',
    "undirected, a pair both ways, self loop": _HEAD + '<graph edgedefault="undirected">'
    '<node id="b"/><node id="a"/><edge source="a" target="b"/><edge source="b" target="a"/>'
    '<edge source="a" target="a"/><edge source="c" target="b"/></graph></graphml>',
    "types, empty data, keys after the graph, duplicate data": _HEAD
    + '<graph edgedefault="undirected"><node id="n"><data key="i">7</data>'
    '<data key="b">TRUE</data><data key="s"/><data key="f">1e400</data>'
    '<data key="i">8</data></node></graph>'
    '<key id="i" for="node" attr.name="count" attr.type="long"/>'
    '<key id="b" for="node" attr.name="flag" attr.type="boolean"><default>false</default></key>'
    '<key id="s" for="node" attr.name="note" attr.type="string"/>'
    '<key id="f" for="node" attr.name="score" attr.type="float"/></graphml>',
    "quoted ids that normalise alike, &amp; entities": _HEAD
    + '<key id="t" for="node" attr.name="entity_type" attr.type="string"/>'
    '<graph edgedefault="undirected"><node id="&quot;A&quot;"><data key="t">"x &amp; y"</data>'
    '</node><node id="A"><data key="t">person</data></node>'
    '<edge source="&quot;A&quot;" target="A"/></graph></graphml>',
    "a yfiles extension (networkx's own reader)": _HEAD.replace(
        ">", ' xmlns:y="http://www.yworks.com/xml/graphml">'
    )
    + '<key id="g" for="node" yfiles.type="nodegraphics"/><graph edgedefault="directed">'
    '<node id="a"><data key="g"><y:ShapeNode><y:NodeLabel>A</y:NodeLabel></y:ShapeNode>'
    "</data></node></graph></graphml>",
    "no namespace (networkx's own reader)": '<graphml><graph edgedefault="directed">'
    '<node id="a"/></graph></graphml>',
}


@pytest.mark.parametrize("name", list(EDGE_CASES))
def test_fast_reader_reads_what_networkx_reads(name: str) -> None:
    data = EDGE_CASES[name].encode()
    expected = nx.read_graphml(io.BytesIO(data))
    raw = read_graphml_bytes(data)
    assert raw == RawGraph.of(expected)
    assert [list(a.items()) for _, _, a in raw.edges] == [
        list(a.items()) for _, _, a in expected.edges(data=True)
    ]
    assert_same_graph(networkx_path(data), build_graph(normalise(raw)))
    # and through the stored form
    assert_same_graph(networkx_path(data), build_graph(decode(encode(normalise(raw)))))


@pytest.mark.parametrize(
    "document",
    [
        "not xml at all",
        _HEAD + '<graph><node id="a"><data key="missing">1</data></node></graph></graphml>',
        _HEAD + '<key id="i" attr.name="n" attr.type="int"/><graph><node id="a">'
        '<data key="i">seven</data></node></graph></graphml>',
        _HEAD + '<graph><hyperedge><endpoint node="a"/></hyperedge></graph></graphml>',
    ],
)
def test_fast_reader_refuses_what_networkx_refuses(document: str) -> None:
    with pytest.raises(Exception) as networkx_error:
        nx.read_graphml(io.BytesIO(document.encode()))
    with pytest.raises(type(networkx_error.value), match=re.escape(str(networkx_error.value))):
        read_graphml_bytes(document.encode())


async def _records(adapter: NetworkXAdapter, commands: list[str]) -> list[dict[str, Any]]:
    executor = GaslExecutor(adapter, StateStore(), max_rows=None)
    result = await executor.execute_plan({"plan_id": "p", "commands": commands})
    return [record.model_dump(exclude={"duration_ms"}) for record in result.records]


MOVIE_QUERIES = [
    'FIND nodes WHERE entity_type = "PERSON" AS people',
    'FIND edges WHERE keywords CONTAINS "directed_by" AS directing',
    'NEIGHBORS "Farid Eckson 0" DIRECTION in VIA "starred_actors" AS films',
    'NEIGHBORS ${films} DIRECTION out VIA "directed_by" AS directors',
    'FIND nodes WHERE entity_type = "FILM" LIMIT 5 AS some',
    "SUBGRAPH FROM ${some} DIRECTION out DEPTH 1 AS around",
]
SAMPLE_QUERIES = [
    'FIND nodes WHERE entity_type = "PERSON" AS people',
    "FIND edges WHERE weight >= 8 AS heavy",
    'NEIGHBORS "BRIANA MORELAND" DEPTH 2 AS near',
]


@pytest.mark.parametrize(
    ("which", "queries"), [("sample", SAMPLE_QUERIES), ("movies", MOVIE_QUERIES)]
)
async def test_add_then_load_gives_the_graphml_graph_and_the_same_records(
    registry: GraphRegistry, movie_file: Path, which: str, queries: list[str]
) -> None:
    path = DEMO_GRAPH if which == "sample" else movie_file
    expected = networkx_path(path.read_bytes())
    info = await registry.add(which, path)
    assert (info.nodes, info.directed) == (expected.number_of_nodes(), expected.is_directed())
    loaded = await registry.adapter(which)
    assert_same_graph(expected, loaded.graph)
    want = await _records(NetworkXAdapter.from_graph(expected), queries)
    got = await _records(loaded, queries)
    assert got == want
    assert all(record["status"] in ("success", "partial") and record["count"] for record in got)


def test_local_loaders_use_the_fast_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """`postel gasl run` and replay read a GraphML file themselves: no networkx parse."""

    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("networkx's GraphML parser was used")

    expected = networkx_path(DEMO_GRAPH.read_bytes())
    monkeypatch.setattr(nx, "read_graphml", refuse)
    assert_same_graph(expected, NetworkXAdapter.from_graphml(DEMO_GRAPH).graph)
    assert_same_graph(expected, graphs.parse_graphml(DEMO_GRAPH.read_bytes()).graph)


def _packed() -> bytes:
    return encode(normalise(read_graphml_bytes(DEMO_GRAPH.read_bytes())))


def _corrupt_chunk(stored: bytes) -> bytes:
    _, at = graph_format.read_header(stored)
    flipped = bytearray(stored)
    flipped[at + 10] ^= 0xFF
    return bytes(flipped)


def _other_version(stored: bytes) -> bytes:
    header, at = graph_format.read_header(stored)
    head = json.dumps({**header, "version": 99}).encode()
    return graph_format.MAGIC + graph_format._LENGTH.pack(len(head)) + head + stored[at:]


@pytest.mark.parametrize(
    ("spoil", "problem"),
    [
        (lambda s: b"<graphml>" + s, "wrong magic bytes"),
        (_corrupt_chunk, r"chunk 0 \(nodes\) fails its CRC-32 check"),
        (_other_version, "format version 99, and this postel reads version 1"),
        (lambda s: s[:-100], r"cut short in chunk \d+ \(edges\)"),
        (lambda s: s + b"x", "1 bytes after its last chunk"),
    ],
)
def test_a_spoilt_stored_graph_is_refused_naming_the_problem(spoil: Any, problem: str) -> None:
    with pytest.raises(GraphFormatError, match=problem):
        decode(spoil(_packed()))


async def test_a_worker_meeting_a_corrupt_graph_fails_the_job_and_loads_it_once_readded(
    registry: GraphRegistry, redis_client: aioredis.Redis
) -> None:
    await registry.add("g", DEMO_GRAPH)
    chunk = KEYS.graph_chunk("g", 1, 0)
    stored = await redis_client.get(chunk)
    await redis_client.set(chunk, _corrupt_chunk(stored))
    with pytest.raises(GraphUnreadable, match=r"'g' \(version 1\) cannot be loaded: .*SHA-256"):
        await registry.adapter("g")
    # the actor fails such a job `invalid_request`, as for a missing graph
    assert issubclass(GraphUnreadable, GraphNotFound)
    await registry.add("g", DEMO_GRAPH)
    assert (await registry.adapter("g")).graph.number_of_nodes() == 3261


@pytest.mark.parametrize("field", ["packed", "data"])
async def test_a_graph_stored_by_an_older_postel_still_loads(
    registry: GraphRegistry, redis_client: aioredis.Redis, field: str
) -> None:
    """Older postels kept the graph in its hash: packed, or before that as gzip GraphML."""
    import gzip

    data = DEMO_GRAPH.read_bytes()
    await registry.add("old", DEMO_GRAPH)
    store_fields = ["store_sha256", "store_bytes", "chunks", "location", "engine"]
    await redis_client.hdel(KEYS.graph("old"), *store_fields)
    blob = gzip.compress(data) if field == "data" else _packed()
    await redis_client.hset(KEYS.graph("old"), field, blob)
    assert_same_graph(networkx_path(data), (await registry.adapter("old")).graph)
    await registry.add("old", DEMO_GRAPH)  # re-adding stores the version's store alone
    assert await redis_client.hget(KEYS.graph("old"), field) is None
    assert await redis_client.hget(KEYS.graph("old"), "chunks") is not None


async def test_loading_runs_off_the_event_loop_and_leases_keep_renewing(
    redis_url: str, settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A worker's own lease renewal (1 s lease, renewed every 250 ms) runs while a slow
    load waits, in its thread, for five renewals: past the lease's first expiry. A load on
    the event loop would block the renewals it waits for, and the test would fail."""
    pool = await connect_arq(redis_url)
    try:
        registry = GraphRegistry(
            pool, KEYS, AdapterCache(), storage=GraphStorage(cache_dir=tmp_path)
        )
        await registry.add("g", DEMO_GRAPH)
        actor = Actor(
            RELAY_WORKERS[0],
            Runtime.create(pool, KEYS, settings.model_copy(update={"lease_s": 1.0})),
        )
        renewals = 0
        renewed_enough = threading.Event()
        real_pexpire, real_load = pool.pexpire, graphs.load_packed

        async def counting_pexpire(*args: Any, **kwargs: Any) -> Any:
            nonlocal renewals
            held = await real_pexpire(*args, **kwargs)
            renewals += 1
            if renewals >= 5:
                renewed_enough.set()
            return held

        def slow_load(stored: bytes) -> NetworkXAdapter:
            if not renewed_enough.wait(timeout=60):
                raise AssertionError("the worker renewed no lease while the graph loaded")
            return real_load(stored)

        monkeypatch.setattr(pool, "pexpire", counting_pexpire)
        monkeypatch.setattr(graphs, "load_packed", slow_load)
        lease = "arq:in-progress:graph-job"
        await pool.set(lease, b"1", px=1000)
        renewing = asyncio.create_task(actor._renew_lease(lease))
        try:
            # two jobs ask at once: one load, shared
            adapters = await asyncio.gather(registry.adapter("g"), registry.adapter("g"))
            assert await pool.exists(lease), "the lease lapsed while the graph loaded"
        finally:
            renewing.cancel()
            await asyncio.gather(renewing, return_exceptions=True)
        assert adapters[0] is adapters[1] and renewals >= 5
    finally:
        await pool.aclose()


def test_bench_graphs_tiny_run() -> None:
    result = CliRunner().invoke(main, ["bench", "graphs", "--triples", "600", "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["relations"] == figures["triples"] >= 600
    assert set(figures["targets"]) == {"add_s", "load_s", "rss_mb"}
    for side in ("packed", "graphml_parse"):
        assert figures[side]["add_s"] > 0 and figures[side]["load_s"] > 0
        assert figures[side]["rss_mb"] > 0
    assert figures["packed"]["stored_bytes"] < figures["graphml_bytes"]
