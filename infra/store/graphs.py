"""The graph registry: graphs stored in Redis by name, loadable by any worker.

`postel graph add NAME FILE` (or `GraphRegistry.add`) parses the GraphML file into the
shared attribute model (services/gasl/loaders.py), then stores it packed
(infra/store/graph_format.py: tables that decode without parsing XML and run no code)
with its metadata in one hash, `postel:graphs:<name>`, and the name in the set
`postel:graphs`. Re-adding a name replaces the graph and increments its version.

A worker on any machine calls `await registry.adapter(name)`: the graph is loaded in a
thread, once per process and version (concurrent first calls share one load; the event
loop, and with it every lease renewal, keeps running), then cached and reused while the
stored version is unchanged, so the steady-state cost is one HMGET of two small fields per
call; a re-added graph is reloaded on the next call. A graph stored by an older postel
(gzip GraphML in the `data` field) still loads, by parsing it.

The Redis client must return bytes (decode_responses=False, as arq's pool does): the
stored graph is binary.
"""

from __future__ import annotations

import asyncio
import builtins
import gc
import gzip
import hashlib
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import networkx as nx
import redis.asyncio as aioredis
import structlog
from postel.infra.store.graph_format import GraphFormatError, decode, encode
from postel.infra.store.keys import Keyspace
from postel.messages.errors import GraphNotFound, InvalidInput, PostelError
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.graphml import RawGraph, read_graphml_bytes
from postel.services.gasl.loaders import (
    GraphTables,
    build_graph,
    gc_paused,
    normalise,
    relations_of,
)
from postel.services.gasl.schema_summary import summarize_graph
from postel.services.linking.aids import (
    NAME_INDEX_FIELD,
    SCHEMA_CARD_FIELD,
    GraphAids,
    build_aids,
)
from pydantic import BaseModel
from redis.asyncio.cluster import RedisCluster

log = structlog.get_logger(__name__)

GraphFormat = Literal["nano-graphrag", "LightRAG", "GraphML"]

_PACKED = "packed"  # the graph in infra/store/graph_format.py's form
_LEGACY = "data"  # gzip GraphML, as postel stored graphs before the packed form

# KEYS: the graph. ARGV: the legacy field, then field, value, ... Returns the new version.
_STORE = """
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('HDEL', KEYS[1], ARGV[1])
return version
"""
NAME_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,100}")
_META_FIELDS = (
    "version",
    "sha256",
    "nodes",
    "edges",
    "directed",
    "format",
    "source",
    "size_bytes",
    "stored_bytes",
    "added_at",
)


class InvalidGraphName(InvalidInput):
    pass


class GraphFileError(InvalidInput):
    """The file cannot be read or is not a usable GraphML graph; nothing was stored."""


class GraphUnreadable(GraphNotFound):
    """The stored graph cannot be loaded (corrupt, or in a format this postel does not
    read): the job fails `invalid_request` like one whose graph is missing, and adding the
    graph again and redriving the job resumes it."""

    def __init__(self, name: str, version: int, reason: str) -> None:
        self.name = name
        self.known = None
        PostelError.__init__(
            self,
            f"graph {name!r} (version {version}) cannot be loaded: {reason}; "
            "add it again with `postel graph add`",
        )


class GraphInfo(BaseModel):
    name: str
    version: int
    sha256: str
    nodes: int
    edges: int
    directed: bool
    format: GraphFormat
    source: str
    size_bytes: int
    stored_bytes: int
    added_at: datetime


@dataclass
class ParsedGraph:
    graph: nx.Graph
    format: GraphFormat


@dataclass
class PackedGraph:
    """A GraphML file made ready to store: its packed form and what `info` reports."""

    stored: bytes
    format: GraphFormat
    nodes: int
    relations: int
    directed: bool
    aids: GraphAids


# (version, sha256) of a stored graph.
Stamp = tuple[int, str]


@dataclass
class AdapterCache:
    """Parsed graphs of one process, keyed by (Redis server, name), one version each."""

    entries: dict[tuple[str, str], tuple[Stamp, NetworkXAdapter]] = field(default_factory=dict)
    # Loads under way, so concurrent jobs on a cold worker parse a big graph once, not N times.
    loading: dict[tuple[str, str, int, str], asyncio.Task[tuple[Stamp, NetworkXAdapter]]] = field(
        default_factory=dict
    )
    # the name index and schema card of the version cached, read once per process and version
    aids: dict[tuple[str, str], tuple[Stamp, GraphAids]] = field(default_factory=dict)


# One cache per process by default: workers may build a registry per job and still share it.
SHARED_CACHE = AdapterCache()


def validate_name(name: str) -> str:
    if not NAME_PATTERN.fullmatch(name):
        raise InvalidGraphName(
            f"invalid graph name {name!r}: use 1-100 letters, digits, '.', '_' or '-'"
        )
    return name


def detect_format(raw: RawGraph) -> GraphFormat:
    """LightRAG writes an `entity_id` per node; nano-graphrag quotes its node ids."""
    nodes = raw.nodes
    if any("entity_id" in attrs for attrs in nodes.values()):
        return "LightRAG"
    if any(node.startswith('"') and node.endswith('"') for node in nodes):
        return "nano-graphrag"
    return "GraphML"


def parse_graphml(data: bytes) -> ParsedGraph:
    """Parse GraphML bytes into the shared attribute model (blocking: run it in a thread)."""
    with gc_paused():
        raw = read_graphml_bytes(data)
        return ParsedGraph(build_graph(normalise(raw)), detect_format(raw))


def pack_graphml(data: bytes) -> PackedGraph:
    """Parse GraphML bytes and pack them for storing (blocking: run it in a thread)."""
    with gc_paused():
        raw = read_graphml_bytes(data)
        tables = normalise(raw)
        return PackedGraph(
            encode(tables),
            detect_format(raw),
            len(tables.nodes),
            tables.relations,
            raw.directed,
            aids_of_tables(tables),
        )


def _relation_names(
    edges: Iterable[tuple[str, str, dict[str, Any]]],
) -> Iterator[tuple[str, str, list[str]]]:
    for source, target, attrs in edges:
        for relation in relations_of(attrs):
            yield source, target, [str(k) for k in relation.get("keywords") or []]


def aids_of_tables(tables: GraphTables) -> GraphAids:
    """The name index and schema card of a graph about to be stored (the seam a store of
    another shape calls with its own node and relation streams: services.linking.aids)."""
    return build_aids(tables.nodes.items(), _relation_names(tables.edges), tables.directed)


def aids_of_graph(graph: nx.Graph) -> GraphAids:
    """The same, for a graph stored before postel kept them (built once per process)."""
    return build_aids(
        graph.nodes(data=True), _relation_names(graph.edges(data=True)), graph.is_directed()
    )


def load_packed(stored: bytes) -> NetworkXAdapter:
    """The adapter of a packed graph (blocking: run it in a thread)."""
    with gc_paused():
        # the adapter freezes the graph out of the collector's sight as it is built
        # (AdapterCache unfreezes when a new version replaces it)
        return NetworkXAdapter.from_graph(build_graph(decode(stored)))


def load_legacy(stored: bytes) -> NetworkXAdapter:
    """The adapter of a graph an older postel stored as gzip GraphML."""
    return NetworkXAdapter.from_graph(parse_graphml(gzip.decompress(stored)).graph)


def _connection_kwargs(redis: aioredis.Redis) -> dict[str, Any]:
    if isinstance(redis, RedisCluster):
        return redis.get_connection_kwargs()
    return redis.connection_pool.connection_kwargs


def _server_id(redis: aioredis.Redis) -> str:
    if isinstance(redis, RedisCluster):
        return "cluster:" + ",".join(sorted(redis.nodes_manager.startup_nodes))
    kwargs = _connection_kwargs(redis)
    if "path" in kwargs:
        return f"unix:{kwargs['path']}/{kwargs.get('db', 0)}"
    return f"{kwargs.get('host')}:{kwargs.get('port')}/{kwargs.get('db', 0)}"


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class GraphRegistry:
    """Named graphs in Redis, under the keys `keyspace` names. `cache` defaults to the
    process-wide one."""

    def __init__(
        self, redis: aioredis.Redis, keyspace: Keyspace, cache: AdapterCache | None = None
    ) -> None:
        if _connection_kwargs(redis).get("decode_responses"):
            raise ValueError("GraphRegistry needs a Redis client with decode_responses=False")
        self.redis = redis
        self.keyspace = keyspace
        self.cache = SHARED_CACHE if cache is None else cache
        self._server = _server_id(redis)

    async def add(self, name: str, path: str | Path) -> GraphInfo:
        """Parse the file (refusing a bad one), then store it as the next version of `name`."""
        validate_name(name)
        path = Path(path)
        try:
            data = await asyncio.to_thread(path.read_bytes)
        except OSError as exc:
            raise GraphFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
        return await self.add_bytes(name, data, source=path.name, label=str(path))

    async def add_bytes(
        self, name: str, data: bytes, *, source: str, label: str | None = None
    ) -> GraphInfo:
        """Store GraphML bytes (an upload) as the next version of `name`; `source` is kept as
        the file's name, `label` names the input in errors."""
        validate_name(name)
        label = label or source
        try:
            packed = await asyncio.to_thread(pack_graphml, data)
        except Exception as exc:  # any parser failure means the file is unusable
            raise GraphFileError(f"{label} is not a readable GraphML graph: {exc}") from exc
        if packed.nodes == 0:
            raise GraphFileError(f"{label} is GraphML but holds no nodes")
        meta: dict[str, Any] = {
            "sha256": hashlib.sha256(data).hexdigest(),
            "nodes": packed.nodes,
            "edges": packed.relations,
            "directed": int(packed.directed),
            "format": packed.format,
            "source": source,
            "size_bytes": len(data),
            "stored_bytes": len(packed.stored),
            "added_at": datetime.now(UTC).isoformat(),
        }
        # One script: a reader never sees a new version number with the old data. The name
        # is listed after, as its own command: on a cluster the list is in another slot.
        stored = {**meta, _PACKED: packed.stored, **packed.aids.to_fields()}
        fields = [item for pair in stored.items() for item in pair]
        store = self.redis.register_script(_STORE)
        version = await store(keys=[self.keyspace.graph(name)], args=[_LEGACY, *fields])
        await self.redis.sadd(self.keyspace.graphs, name)  # type: ignore[misc]
        info = self._info(name, {**meta, "version": version})
        log.info(
            "graph.added",
            graph=name,
            version=info.version,
            nodes=info.nodes,
            edges=info.edges,
            format=info.format,
            stored_bytes=info.stored_bytes,
        )
        return info

    async def names(self) -> builtins.list[str]:
        return sorted(_text(n) for n in await self.redis.smembers(self.keyspace.graphs))

    async def list(self) -> builtins.list[GraphInfo]:
        names = await self.names()
        async with self.redis.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.hmget(self.keyspace.graph(name), _META_FIELDS)
            rows = await pipe.execute()
        return [
            self._info(name, dict(zip(_META_FIELDS, row, strict=True)))
            for name, row in zip(names, rows, strict=True)
            if row[0] is not None
        ]

    async def info(self, name: str) -> GraphInfo:
        row = await self.redis.hmget(self.keyspace.graph(name), _META_FIELDS)
        if row[0] is None:
            raise GraphNotFound(name, await self.names())
        return self._info(name, dict(zip(_META_FIELDS, row, strict=True)))

    async def adapter(self, name: str | None) -> NetworkXAdapter:
        """The graph as a GASL adapter, parsed once per process and version; GraphNotFound
        when it is not registered, or `name` is None (a job that names no graph)."""
        if name is None:
            raise GraphNotFound(None)
        # The hash travels with the version: after a flush, a re-added graph restarts at
        # version 1, and only the hash tells it from the graph cached before.
        raw_version, raw_sha = await self.redis.hmget(
            self.keyspace.graph(name), ["version", "sha256"]
        )
        if raw_version is None or raw_sha is None:
            raise GraphNotFound(name, await self.names())
        stamp = (int(raw_version), _text(raw_sha))
        cached = self.cache.entries.get((self._server, name))
        if cached is not None and cached[0] == stamp:
            return cached[1]
        loading_key = (self._server, name, *stamp)
        task = self.cache.loading.get(loading_key)
        # A task belongs to its event loop; one left by another loop cannot be awaited here.
        if task is None or task.get_loop() is not asyncio.get_running_loop():
            task = asyncio.ensure_future(self._load(name))
            self.cache.loading[loading_key] = task
            task.add_done_callback(lambda _: self.cache.loading.pop(loading_key, None))
        # Shielded: one cancelled caller must not cancel the load the others wait on.
        loaded_stamp, adapter = await asyncio.shield(task)
        replaced = self.cache.entries.get((self._server, name))
        self.cache.entries[(self._server, name)] = (loaded_stamp, adapter)
        if replaced is not None and replaced[1] is not adapter:
            gc.unfreeze()  # the version it replaces may now be collected
        return adapter

    async def summary(self, name: str | None) -> dict[str, Any]:
        """The graph's schema summary for planning prompts (entity types, attributes,
        relation keywords), computed once per loaded version."""
        adapter = await self.adapter(name)
        # One pass over a big graph takes seconds: keep it off the event loop.
        return await asyncio.to_thread(summarize_graph, adapter)

    async def aids(self, name: str) -> GraphAids:
        """The graph's name index and schema card (services.linking), stored beside its
        version at `graph add`; read once per process and version."""
        raw_version, raw_sha = await self.redis.hmget(
            self.keyspace.graph(name), ["version", "sha256"]
        )
        if raw_version is None or raw_sha is None:
            raise GraphNotFound(name, await self.names())
        stamp = (int(raw_version), _text(raw_sha))
        cached = self.cache.aids.get((self._server, name))
        if cached is not None and cached[0] == stamp:
            return cached[1]
        names, card = await self.redis.hmget(
            self.keyspace.graph(name), [NAME_INDEX_FIELD, SCHEMA_CARD_FIELD]
        )
        if names is not None and card is not None:
            aids = await asyncio.to_thread(GraphAids.from_fields, names, card)
        else:  # stored by an older postel
            adapter = await self.adapter(name)
            aids = await asyncio.to_thread(aids_of_graph, adapter.graph)
        self.cache.aids[(self._server, name)] = (stamp, aids)
        return aids

    async def _load(self, name: str) -> tuple[Stamp, NetworkXAdapter]:
        # Stamp and data in one read, so the cache entry names the version it holds.
        raw_version, raw_sha, packed, legacy = await self.redis.hmget(
            self.keyspace.graph(name), ["version", "sha256", _PACKED, _LEGACY]
        )
        if raw_version is None or raw_sha is None or (packed is None and legacy is None):
            raise GraphNotFound(name, await self.names())
        version = int(raw_version)
        started = time.perf_counter()
        try:
            if packed is not None:
                adapter = await asyncio.to_thread(load_packed, packed)
            else:
                adapter = await asyncio.to_thread(load_legacy, legacy)
        except GraphFormatError as exc:
            raise GraphUnreadable(name, version, f"the stored graph: {exc}") from exc
        except Exception as exc:  # a legacy blob that no longer parses
            raise GraphUnreadable(name, version, f"its stored GraphML: {exc}") from exc
        log.info(
            "graph.loaded",
            graph=name,
            version=version,
            nodes=adapter.graph.number_of_nodes(),
            packed=packed is not None,
            load_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        return (version, _text(raw_sha)), adapter

    @staticmethod
    def _info(name: str, meta: dict[str, Any]) -> GraphInfo:
        values = {k: _text(v) if isinstance(v, bytes) else v for k, v in meta.items()}
        values["directed"] = bool(int(values["directed"]))
        return GraphInfo.model_validate({"name": name, **values})
