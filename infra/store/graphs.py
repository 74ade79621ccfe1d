"""The graph registry: named, versioned graphs that workers on any machine load by name.

`postel graph add NAME FILE` (or `GraphRegistry.add`) streams the file into the shared
attribute model with bounded memory (infra/store/graph_ingest.py, refusing an input past a
limit), writes the version's store (the packed tables of infra/store/graph_format.py for
networkx, a LadybugDB folder as an archive for ladybug) and ships it where workers fetch it
(infra/store/graph_store.py: chunks in Redis, or a shared volume). The graph's hash,
`Keyspace.graph(name)`, then names the new version, its checksum, its metadata and its name
index and schema card (services/linking/aids.py, built in the same pass over the spool), and
the name is in the set `Keyspace.graphs`. Re-adding a name makes a new version and frees the one
before; `remove` frees the graph everywhere.

A worker calls `await registry.adapter(name)`: the version is fetched once per machine into
the local cache, opened read-only once per process (in a thread: concurrent first calls
share one open, and the event loop keeps running), then kept in the process's AdapterCache
while the hash names the same version, so the steady-state cost is one HMGET. Each call
also checks the other versions the process holds, so a graph re-added or removed is dropped
on the process's next use of any graph. The cache keeps at most `versions` versions, the
least recently used dropped first; the worker process's memory policy
(infra/runtime/memory.py) decides how many, and what the collector does as versions come and
go. Graphs stored by an older postel (one packed blob in the hash, or gzip GraphML in its
`data` field) still load.

The Redis client must return bytes (decode_responses=False, as arq's pool does).
"""

from __future__ import annotations

import asyncio
import builtins
import gzip
import hashlib
import mmap
import re
import shutil
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Protocol

import networkx as nx
import redis.asyncio as aioredis
import structlog
from postel.infra.store.graph_format import GraphFormatError, decode, write_packed
from postel.infra.store.graph_ingest import (
    GraphFileError,
    GraphFormat,
    GraphInput,
    GraphLimits,
    GraphTooLarge,
    InputKind,
    SpooledGraph,
    SpoolFolder,
    input_kind,
    spool_input,
)
from postel.infra.store.graph_store import (
    LADYBUG_FOLDER,
    STORE_FILE,
    GraphStorage,
    StoreChecksumError,
    StoredVersion,
    delete_store,
    fetch,
    file_sha256,
    pack_folder,
    prune_cache,
    put_store,
)
from postel.infra.store.keys import Keyspace
from postel.messages.errors import GraphNotFound, InvalidInput, PostelError
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.engines.registry import Engine, default_engine, open_engine
from postel.services.gasl.graphml import RawGraph, read_graphml_bytes
from postel.services.gasl.loaders import build_graph, normalise, relations_of
from postel.services.gasl.schema_summary import summarize_graph
from postel.services.linking.aids import (
    NAME_INDEX_FIELD,
    SCHEMA_CARD_FIELD,
    AidsBuilder,
    GraphAids,
    aids_of_graph,
)
from pydantic import BaseModel
from redis.asyncio.cluster import RedisCluster

__all__ = [
    "AdapterCache",
    "GraphFileError",
    "GraphInfo",
    "GraphNotFound",
    "GraphRegistry",
    "GraphTooLarge",
    "GraphUnreadable",
    "InvalidGraphName",
]

log = structlog.get_logger(__name__)


_PACKED = "packed"  # the packed graph in the hash itself, as postel stored graphs before
_LEGACY = "data"  # gzip GraphML, as postel stored graphs before the packed form

# KEYS: the graph. ARGV: the version, then field, value, ... Returns the version it replaced
# with that version's store fields (nil when there was none).
_PUBLISH = """
local old = redis.call('HMGET', KEYS[1], 'version', 'store_sha256', 'store_bytes', 'chunks',
  'engine', 'location')
redis.call('HDEL', KEYS[1], 'packed', 'data')
redis.call('HSET', KEYS[1], 'version', ARGV[1], unpack(ARGV, 2))
return old
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
    "engine",
)
_STORE_FIELDS = ("version", "store_sha256", "store_bytes", "chunks", "engine", "location")


class InvalidGraphName(InvalidInput):
    pass


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
    engine: Engine = "networkx"


@dataclass
class ParsedGraph:
    graph: nx.Graph
    format: GraphFormat


# (version, checksum) of a stored graph.
Stamp = tuple[int, str]


class Collector(Protocol):
    """What a process's memory policy does as graph versions come and go
    (infra/runtime/memory.py's MemoryPolicy)."""

    def building(self) -> AbstractContextManager[None]:
        """Around the build of a graph version in memory."""

    def settled(self) -> None:
        """A version was built and is now held."""

    def released(self) -> None:
        """Versions were dropped: their memory may be given back."""


class _NoCollector:
    def building(self) -> AbstractContextManager[None]:
        return nullcontext()

    def settled(self) -> None:
        pass

    def released(self) -> None:
        pass


@dataclass
class AdapterCache:
    """The graph versions one process holds, keyed by (Redis server, name): at most
    `versions`, the least recently used dropped first."""

    versions: int = 2
    collector: Collector = field(default_factory=_NoCollector)
    entries: OrderedDict[tuple[str, str], tuple[Stamp, Any]] = field(default_factory=OrderedDict)
    # Loads under way, so concurrent jobs on a cold worker open a big graph once, not N times.
    loading: dict[tuple[str, str, int, str], asyncio.Task[tuple[Stamp, Any]]] = field(
        default_factory=dict
    )
    # the name index and schema card of each graph's version, read once per process and version
    aids: dict[tuple[str, str], tuple[Stamp, GraphAids]] = field(default_factory=dict)

    def get(self, key: tuple[str, str], stamp: Stamp) -> Any:
        held = self.entries.get(key)
        if held is None or held[0] != stamp:
            return None
        self.entries.move_to_end(key)
        return held[1]

    def put(self, key: tuple[str, str], stamp: Stamp, adapter: Any) -> None:
        replaced = self.entries.pop(key, None)
        self.entries[key] = (stamp, adapter)
        dropped = replaced is not None and replaced[1] is not adapter
        while len(self.entries) > self.versions:
            evicted, _ = self.entries.popitem(last=False)
            log.info("graph.dropped", graph=evicted[1], why="least recently used")
            dropped = True
        if dropped:
            self.collector.released()
        self.collector.settled()

    def drop(self, key: tuple[str, str]) -> bool:
        if self.entries.pop(key, None) is None:
            return False
        self.collector.released()
        return True


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
    """Parse GraphML bytes whole into the shared attribute model (blocking: run it in a
    thread): for a graph file a process reads itself (replays)."""
    raw = read_graphml_bytes(data)
    return ParsedGraph(build_graph(normalise(raw)), detect_format(raw))


def load_packed(stored: bytes | mmap.mmap) -> NetworkXAdapter:
    """The adapter of a packed graph (blocking: run it in a thread)."""
    return NetworkXAdapter.from_graph(build_graph(decode(stored)))


def load_legacy(stored: bytes) -> NetworkXAdapter:
    """The adapter of a graph an older postel stored as gzip GraphML."""
    return NetworkXAdapter.from_graph(parse_graphml(gzip.decompress(stored)).graph)


def _open_packed_file(path: Path) -> NetworkXAdapter:
    """A fetched networkx store, read through a shared read-only mapping of its file."""
    with path.open("rb") as stream, mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        return load_packed(mm)


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


@dataclass
class _Prepared:
    """A version's store file, written and checksummed, with what `info` reports."""

    path: Path
    sha256: str
    size: int
    engine: Engine
    format: GraphFormat
    nodes: int
    relations: int
    directed: bool
    aids: GraphAids


def _nodes_fed(graph: SpooledGraph, aids: AidsBuilder) -> Iterator[tuple[str, dict[str, Any]]]:
    for node_id, attrs in graph.nodes():
        aids.add_node(node_id, attrs)
        yield node_id, attrs


def _edges_fed(graph: SpooledGraph, aids: AidsBuilder) -> Iterator[Any]:
    for edge in graph.numbered_edges():
        _, _, source, target, attrs = edge
        for relation in relations_of(attrs):
            aids.add_relation(source, target, relation)
        yield edge


def _each_relation_fed(graph: SpooledGraph, aids: AidsBuilder) -> Iterator[dict[str, Any]]:
    for relation in graph.each_relation():
        aids.add_relation(relation["source"], relation["target"], relation)
        yield relation


def _write_store(
    graph: SpooledGraph, engine: Engine, work: Path, build_pool: int | None, aids: AidsBuilder
) -> Path:
    """The version's store file in `work`, written as the spool streams it out; the same
    pass feeds `aids` the nodes, then the relations."""
    path = work / STORE_FILE
    if engine == "networkx":
        write_packed(
            path,
            graph.directed,
            _nodes_fed(graph, aids),
            _edges_fed(graph, aids),
            lambda: graph.relations,
        )
        return path
    from postel.services.gasl.engines.ladybug_store import build_ladybug_store

    folder = work / LADYBUG_FOLDER
    pool = {} if build_pool is None else {"buffer_pool_size": build_pool}
    nodes = (attrs for _, attrs in _nodes_fed(graph, aids))
    build_ladybug_store(nodes, _each_relation_fed(graph, aids), graph.directed, folder, **pool)
    pack_folder(folder, path)
    shutil.rmtree(folder)
    return path


class GraphRegistry:
    """Named graphs under the keys `keyspace` names, stored as `storage` says. `cache` holds
    the versions this process opened (a worker's comes from its memory policy)."""

    def __init__(
        self,
        redis: aioredis.Redis,
        keyspace: Keyspace,
        cache: AdapterCache | None = None,
        *,
        storage: GraphStorage | None = None,
    ) -> None:
        if _connection_kwargs(redis).get("decode_responses"):
            raise ValueError("GraphRegistry needs a Redis client with decode_responses=False")
        self.redis = redis
        self.keyspace = keyspace
        self.cache = AdapterCache() if cache is None else cache
        self.storage = storage or GraphStorage()
        self._server = _server_id(redis)
        self._server_tag = hashlib.sha256(self._server.encode()).hexdigest()[:12]

    async def add(
        self,
        name: str,
        path: str | Path,
        *,
        engine: Engine | None = None,
        nodes: str | Path | None = None,
        directed: bool = False,
    ) -> GraphInfo:
        """Stream the file (GraphML, or a CSV / Parquet edge list with an optional node list
        `nodes`) into the next version of `name`, refusing a bad or too large one."""
        validate_name(name)
        path = Path(path)
        try:
            with (
                path.open("rb") as edges,
                Path(nodes).open("rb") if nodes is not None else nullcontext() as node_file,
            ):
                source = GraphInput(
                    edges,
                    str(path),
                    input_kind(path.name),
                    node_file,
                    str(nodes or ""),
                    directed,
                )
                return await self.add_input(name, source, source=path.name, engine=engine)
        except OSError as exc:
            raise GraphFileError(f"cannot read {exc.filename}: {exc.strerror or exc}") from exc

    async def add_stream(
        self,
        name: str,
        stream: IO[bytes],
        *,
        source: str,
        kind: InputKind = "graphml",
        engine: Engine | None = None,
        limits: GraphLimits | None = None,
    ) -> GraphInfo:
        """Store an upload (GraphML, gzip or not) as the next version of `name`; `source`
        is kept as the file's name and names the input in errors."""
        validate_name(name)
        graph_input = GraphInput(stream, source, kind)
        return await self.add_input(name, graph_input, source=source, engine=engine, limits=limits)

    async def add_input(
        self,
        name: str,
        graph_input: GraphInput,
        *,
        source: str,
        engine: Engine | None = None,
        limits: GraphLimits | None = None,
    ) -> GraphInfo:
        validate_name(name)
        limits = limits or self.storage.limits
        with SpoolFolder(self.storage.spool_dir) as work:
            prepared = await asyncio.to_thread(self._prepare, graph_input, engine, limits, work)
            version = int(await self.redis.hincrby(self.keyspace.graph(name), "reserved", 1))  # type: ignore[misc]
            chunks, location = await put_store(
                self.redis,
                self.keyspace,
                self.storage,
                name,
                version,
                prepared.path,
                prepared.sha256,
            )
        meta: dict[str, Any] = {
            "sha256": graph_input.digest.hexdigest(),
            "nodes": prepared.nodes,
            "edges": prepared.relations,
            "directed": int(prepared.directed),
            "format": prepared.format,
            "source": source,
            "size_bytes": graph_input.bytes_read,
            "stored_bytes": prepared.size,
            "added_at": datetime.now(UTC).isoformat(),
            "engine": prepared.engine,
        }
        store_fields = {
            "store_sha256": prepared.sha256,
            "store_bytes": prepared.size,
            "chunks": chunks,
            "location": location,
        }
        # The aids are published in the same script: a reader never sees a version with
        # another version's name index or schema card.
        published = {**meta, **store_fields, **prepared.aids.to_fields()}
        fields = [item for pair in published.items() for item in pair]
        publish = self.redis.register_script(_PUBLISH)
        old = await publish(keys=[self.keyspace.graph(name)], args=[version, *fields])
        # The name is listed after, as its own command: on a cluster the set is in another slot.
        await self.redis.sadd(self.keyspace.graphs, name)  # type: ignore[misc]
        replaced = self._stored(name, old)
        if replaced is not None and replaced.version != version:
            await delete_store(self.redis, self.keyspace, self.storage, replaced)
        info = self._info(name, {**meta, "version": version})
        log.info(
            "graph.added",
            graph=name,
            version=info.version,
            nodes=info.nodes,
            edges=info.edges,
            format=info.format,
            engine=info.engine,
            stored_bytes=info.stored_bytes,
        )
        return info

    def _prepare(
        self, graph_input: GraphInput, engine: Engine | None, limits: GraphLimits, work: Path
    ) -> _Prepared:
        graph = spool_input(graph_input, limits, work)
        try:
            chosen = engine or default_engine(graph.spool.edges)
            aids = AidsBuilder(graph.directed)
            path = _write_store(graph, chosen, work, self.storage.build_pool_bytes, aids)
        finally:
            graph.spool.close()
        return _Prepared(
            path,
            file_sha256(path),
            path.stat().st_size,
            chosen,
            graph.format,
            graph.node_count,
            graph.relations,
            graph.directed,
            aids.build(),
        )

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

    async def remove(self, name: str) -> GraphInfo:
        """Free graph `name` everywhere: its hash, its name, its store (chunks or volume
        file), this process's copy and this machine's cache; other processes drop it on
        their next use of a graph. GraphNotFound if there is none."""
        info = await self.info(name)
        stored = self._stored(
            name, await self.redis.hmget(self.keyspace.graph(name), _STORE_FIELDS)
        )
        await self.redis.delete(self.keyspace.graph(name))
        await self.redis.srem(self.keyspace.graphs, name)  # type: ignore[misc]
        if stored is not None:
            await delete_store(self.redis, self.keyspace, self.storage, stored)
        self._forget(name)
        log.info("graph.removed", graph=name, version=info.version)
        return info

    def _forget(self, name: str) -> None:
        """Drop this process's copy of `name` and this machine's cached store of it."""
        self.cache.drop((self._server, name))
        self.cache.aids.pop((self._server, name), None)
        prune_cache(self.storage, self._server_tag, name)

    async def adapter(self, name: str | None) -> Any:
        """The graph as a GASL adapter, opened once per process and version; GraphNotFound
        when it is not registered, or `name` is None (a job that names no graph)."""
        if name is None:
            raise GraphNotFound(None)
        await self._drop_stale(name)
        row = await self.redis.hmget(self.keyspace.graph(name), _STORE_FIELDS)
        if row[0] is None:
            self._forget(name)
            raise GraphNotFound(name, await self.names())
        stored = self._stored(name, row)
        key = (self._server, name)
        stamp: Stamp = (
            (stored.version, stored.sha256)
            if stored is not None
            else await self._legacy_stamp(name)
        )
        held = self.cache.get(key, stamp)
        if held is not None:
            return held
        loading_key = (self._server, name, *stamp)
        task = self.cache.loading.get(loading_key)
        # A task belongs to its event loop; one left by another loop cannot be awaited here.
        if task is None or task.get_loop() is not asyncio.get_running_loop():
            task = asyncio.ensure_future(self._load(name, stored, stamp))
            self.cache.loading[loading_key] = task
            task.add_done_callback(lambda _: self.cache.loading.pop(loading_key, None))
        # Shielded: one cancelled caller must not cancel the load the others wait on.
        loaded_stamp, adapter = await asyncio.shield(task)
        if self.cache.get(key, loaded_stamp) is not adapter:
            self.cache.put(key, loaded_stamp, adapter)
        return adapter

    async def _drop_stale(self, using: str) -> None:
        """Drop the versions this process holds (of other graphs than `using`) that their
        hash no longer names: re-added or removed since."""
        held = [
            (key, stamp)
            for key, (stamp, _) in self.cache.entries.items()
            if key[0] == self._server and key[1] != using
        ]
        if not held:
            return
        async with self.redis.pipeline(transaction=False) as pipe:
            for (_, name), _ in held:
                pipe.hmget(self.keyspace.graph(name), ["version", "store_sha256", "sha256"])
            rows = await pipe.execute()
        for (key, stamp), (version, store_sha, sha) in zip(held, rows, strict=True):
            if version is None:
                self._forget(key[1])
            elif (int(version), _text(store_sha or sha)) != stamp:
                self.cache.drop(key)

    async def _legacy_stamp(self, name: str) -> Stamp:
        version, sha = await self.redis.hmget(self.keyspace.graph(name), ["version", "sha256"])
        return int(version), _text(sha)

    async def summary(self, name: str | None) -> dict[str, Any]:
        """The graph's schema summary for planning prompts (entity types, attributes,
        relation keywords), computed once per loaded version."""
        adapter = await self.adapter(name)
        # One pass over a big graph takes seconds: keep it off the event loop.
        return await asyncio.to_thread(summarize_graph, adapter)

    async def aids(self, name: str) -> GraphAids:
        """The graph's name index and schema card (services.linking), published with its
        version at `graph add`; read once per process and version.

        A graph stored by a postel that did not keep them gets them built once per process
        and version: from its graph when it opens on networkx (every graph an older postel
        stored whole in its hash does), else (a ladybug store, whose engine lists nodes only
        under its result caps) they are empty, so its questions go unlinked and its prompts
        carry no card until `postel graph add` stores it again."""
        key = (self._server, name)
        stamp_fields = ["version", "sha256"]
        raw_version, raw_sha = await self.redis.hmget(self.keyspace.graph(name), stamp_fields)
        if raw_version is None or raw_sha is None:
            raise GraphNotFound(name, await self.names())
        cached = self.cache.aids.get(key)
        if cached is not None and cached[0] == (int(raw_version), _text(raw_sha)):
            return cached[1]
        # Stamp and aids in one read, so the entry names the version they belong to.
        raw_version, raw_sha, names, card = await self.redis.hmget(
            self.keyspace.graph(name), [*stamp_fields, NAME_INDEX_FIELD, SCHEMA_CARD_FIELD]
        )
        if raw_version is None or raw_sha is None:
            raise GraphNotFound(name, await self.names())
        stamp = (int(raw_version), _text(raw_sha))
        if names is not None and card is not None:
            aids = await asyncio.to_thread(GraphAids.from_fields, names, card)
        else:
            aids = await self._aids_of_adapter(name)
        self.cache.aids[key] = (stamp, aids)
        return aids

    async def _aids_of_adapter(self, name: str) -> GraphAids:
        adapter = await self.adapter(name)
        if not isinstance(adapter, NetworkXAdapter):
            log.warning("graph.no_aids", graph=name, why="stored without them; add it again")
            return AidsBuilder((await self.info(name)).directed).build()
        return await asyncio.to_thread(aids_of_graph, adapter.graph)

    async def _load(
        self, name: str, stored: StoredVersion | None, stamp: Stamp
    ) -> tuple[Stamp, Any]:
        started = time.perf_counter()
        if stored is None:
            adapter = await self._load_legacy(name, stamp)
        else:
            try:
                folder = await fetch(
                    self.redis, self.keyspace, self.storage, self._server_tag, stored
                )
                adapter = await asyncio.to_thread(self._open, stored, folder)
            except (GraphFormatError, StoreChecksumError) as exc:
                raise GraphUnreadable(name, stored.version, f"the stored graph: {exc}") from exc
            prune_cache(self.storage, self._server_tag, name, keep=folder)
        log.info(
            "graph.loaded",
            graph=name,
            version=stamp[0],
            engine=stored.engine if stored else "networkx",
            load_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        return stamp, adapter

    def _open(self, stored: StoredVersion, folder: Path) -> Any:
        if stored.engine == "ladybug":
            return open_engine(
                "ladybug", folder / LADYBUG_FOLDER, buffer_pool_size=self.storage.buffer_pool_bytes
            )
        with self.cache.collector.building():
            return _open_packed_file(folder / STORE_FILE)

    async def _load_legacy(self, name: str, stamp: Stamp) -> NetworkXAdapter:
        packed, legacy = await self.redis.hmget(self.keyspace.graph(name), [_PACKED, _LEGACY])
        if packed is None and legacy is None:
            raise GraphNotFound(name, await self.names())
        try:
            with self.cache.collector.building():
                if packed is not None:
                    return await asyncio.to_thread(load_packed, packed)
                return await asyncio.to_thread(load_legacy, legacy)
        except GraphFormatError as exc:
            raise GraphUnreadable(name, stamp[0], f"the stored graph: {exc}") from exc
        except Exception as exc:  # a legacy blob that no longer parses
            raise GraphUnreadable(name, stamp[0], f"its stored GraphML: {exc}") from exc

    @staticmethod
    def _stored(name: str, row: builtins.list[Any] | None) -> StoredVersion | None:
        """The store a hash's store fields name; None for a graph an older postel stored."""
        if not row or row[0] is None or row[1] is None:
            return None
        version, sha, size, chunks, engine, location = (_text(v) for v in row)
        return StoredVersion(name, int(version), sha, int(size), int(chunks), engine, location)

    @staticmethod
    def _info(name: str, meta: dict[str, Any]) -> GraphInfo:
        values = {k: _text(v) if isinstance(v, bytes) else v for k, v in meta.items()}
        values["directed"] = bool(int(values["directed"]))
        if values.get("engine") is None:
            values.pop("engine", None)
        return GraphInfo.model_validate({"name": name, **values})
