"""A graph file streamed into the shared attribute model with bounded memory, whatever its size.

`postel graph add` and the API's upload read GraphML (services/gasl/graphml.py's streaming
reader) or CSV / Parquet edge and node lists (services/gasl/tables_input.py), gzip-compressed
or not, a chunk at a time. Nothing builds the graph in memory: each node and edge goes to a
spool, an SQLite file on disk, and the graph comes back out of it in the order networkx's
reader would give it, nodes then edges, with the merges the attribute model makes
(services/gasl/loaders.py: nodes whose ids normalise alike are one node; the further
relations of a pair of nodes go in its edge's PARALLEL list), done by SQLite's sorts on disk.

The limits (GraphLimits) are counted as the input streams: decompressed bytes, nodes, edges,
and relations between one pair of nodes. Past one the input is refused with a GraphTooLarge
naming the setting, before the memory it would take is spent.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from postel.messages.errors import InvalidInput, LimitExceeded
from postel.services.gasl.graphml import StreamedElement, stream_graphml
from postel.services.gasl.loaders import PARALLEL, normalise_edge, normalise_node, unquote
from postel.services.gasl.tables_input import csv_rows, parquet_rows

InputKind = Literal["graphml", "csv", "tsv", "parquet"]
GraphFormat = Literal["nano-graphrag", "LightRAG", "GraphML", "edge list"]

_BATCH = 5_000

Relation = tuple[int, int, str, str, dict[str, Any]]
"""(source number, target number, source id, target id, attributes): a relation or an edge,
its ends also as their numbers in the stored node order."""
_GZIP_MAGIC = b"\x1f\x8b"


class GraphTooLarge(LimitExceeded):
    """An input past one of GraphLimits; nothing was stored."""


class GraphFileError(InvalidInput):
    """The file cannot be read or is not a usable graph; nothing was stored."""


@dataclass(frozen=True)
class GraphLimits:
    """What one graph input may hold, counted while it streams. Each is a setting
    (infra/runtime/settings.py, `POSTEL_GRAPH_MAX_*`); 0 means no limit."""

    max_bytes: int = 16 * 1024**3
    max_nodes: int = 50_000_000
    max_edges: int = 200_000_000
    max_parallel: int = 10_000

    def check(self, what: str, setting: str, allowed: int, seen: int, label: str) -> None:
        if allowed and seen > allowed:
            raise GraphTooLarge(
                f"{setting} (the {what} of one graph)",
                allowed,
                f"{label} holds more; nothing was stored",
            )


def input_kind(name: str) -> InputKind:
    """The reader a file's name asks for (a `.gz` ending is looked through)."""
    lowered = name.lower().removesuffix(".gz")
    for suffix, kind in ((".csv", "csv"), (".tsv", "tsv"), (".parquet", "parquet")):
        if lowered.endswith(suffix):
            return kind  # type: ignore[return-value]
    return "graphml"


class CountedReader:
    """`read(n)` of a binary stream, gunzipped when it starts with gzip's magic, counting the
    bytes it gives against the byte limit."""

    def __init__(self, raw: IO[bytes], limits: GraphLimits, label: str, digest: Any = None) -> None:
        self.digest = digest or hashlib.sha256()
        head = raw.read(2)
        self._head = head
        self._raw = raw
        self._stream: IO[bytes] = raw
        if head == _GZIP_MAGIC:
            raw.seek(0)
            self._head = b""
            self._stream = gzip.GzipFile(fileobj=raw, mode="rb")
        self.limits = limits
        self.label = label
        self.bytes = 0

    def whole(self) -> IO[bytes]:
        """The raw stream itself, rewound, for a reader that seeks (Parquet); its size is
        counted against the byte limit at once."""
        self._raw.seek(0)
        while block := self._raw.read(1 << 20):
            self._count(block)
        self._raw.seek(0)
        return self._raw

    def _count(self, data: bytes) -> None:
        self.bytes += len(data)
        self.digest.update(data)
        self.limits.check(
            "decompressed bytes",
            "POSTEL_GRAPH_MAX_BYTES",
            self.limits.max_bytes,
            self.bytes,
            self.label,
        )

    def read(self, size: int = -1) -> bytes:
        size = 1 << 16 if size is None or size < 0 else size
        if self._head:
            data, self._head = self._head, b""
            data += self._stream.read(max(0, size - len(data)))
        else:
            try:
                data = self._stream.read(size)
            except (OSError, EOFError) as exc:  # a broken gzip stream
                raise GraphFileError(f"{self.label} is not readable gzip data: {exc}") from exc
        self._count(data)
        return data


@dataclass
class Spooled:
    """What the spool learnt of the input while it streamed."""

    directed: bool = False
    format: GraphFormat = "GraphML"
    quoted_ids: bool = False
    entity_ids: bool = False
    decode: Callable[[Any], dict[str, Any]] = field(default=dict)


class Spool:
    """Nodes and edges as read, in an SQLite file in `folder`, counted against the limits."""

    def __init__(self, folder: Path, limits: GraphLimits, label: str) -> None:
        self.folder = folder
        self.limits = limits
        self.label = label
        # sqlite3's implicit transaction spans the whole spool (nothing here needs to be
        # durable): a transaction per row would cost 100 us each
        self.db = sqlite3.connect(folder / "spool.sqlite")
        self.db.create_function("unquote", 1, unquote, deterministic=True)
        for pragma in (
            "journal_mode=OFF",
            "synchronous=OFF",
            "temp_store=FILE",
            "cache_size=-32000",  # KiB: SQLite's own memory stays at 32 MB
        ):
            self.db.execute(f"PRAGMA {pragma}")
        self.db.execute(
            "CREATE TABLE raw_nodes (seq INTEGER PRIMARY KEY, raw TEXT NOT NULL, data TEXT)"
        )
        self.db.execute(
            "CREATE TABLE raw_edges (seq INTEGER PRIMARY KEY, u TEXT NOT NULL, v TEXT NOT NULL,"
            " key TEXT, data TEXT)"
        )
        self.nodes = 0
        self.edges = 0
        self._node_rows: list[tuple[str, str]] = []
        self._edge_rows: list[tuple[str, str, str | None, str]] = []
        self.info = Spooled()
        # the pair the latest edges relate, source to target, and how many in a row: a file
        # repeating one pair past the limit is refused as it streams (the spool checks every
        # pair, either way round, once it is read)
        self._run_pair: tuple[str, str] | None = None
        self._run = 0

    def add_node(self, raw: str, data: Any) -> None:
        self.nodes += 1
        self.limits.check(
            "nodes", "POSTEL_GRAPH_MAX_NODES", self.limits.max_nodes, self.nodes, self.label
        )
        if not self.info.quoted_ids and len(raw) >= 2 and raw[0] == raw[-1] == '"':
            self.info.quoted_ids = True
        self._node_rows.append((raw, _dumps(data)))
        if len(self._node_rows) >= _BATCH:
            self._flush()

    def add_edge(self, u: str, v: str, key: str | None, data: Any) -> None:
        self.edges += 1
        self.limits.check(
            "edges", "POSTEL_GRAPH_MAX_EDGES", self.limits.max_edges, self.edges, self.label
        )
        pair = (u, v)
        if pair == self._run_pair:
            self._run += 1
            if self.limits.max_parallel and self._run > self.limits.max_parallel:
                self._refuse_parallel(u, v, f"{self._run:,} times in a row")
        else:
            self._run_pair, self._run = pair, 1
        self._edge_rows.append((u, v, key, _dumps(data)))
        if len(self._edge_rows) >= _BATCH:
            self._flush()

    def _flush(self) -> None:
        if self._node_rows:
            self.db.executemany("INSERT INTO raw_nodes (raw, data) VALUES (?, ?)", self._node_rows)
            self._node_rows = []
        if self._edge_rows:
            self.db.executemany(
                "INSERT INTO raw_edges (u, v, key, data) VALUES (?, ?, ?, ?)", self._edge_rows
            )
            self._edge_rows = []

    def close(self) -> None:
        self.db.close()

    # reading the graph back

    def finish(self) -> SpooledGraph:
        """The spooled graph, merged and ordered (blocking; SQLite works on disk)."""
        self._flush()
        db = self.db
        decode = self.info.decode
        db.execute("CREATE INDEX raw_nodes_raw ON raw_nodes (raw, seq)")
        # every node, declared or only an edge's end (after the declared ones, in the order
        # the edges name them, as networkx adds them)
        db.execute(
            "CREATE TABLE nodes (seq INTEGER PRIMARY KEY, raw TEXT NOT NULL, id TEXT, attrs TEXT)"
        )
        rows = db.execute("SELECT seq, raw, data FROM raw_nodes ORDER BY seq")
        writer = self.db.cursor()
        batch: list[tuple[int, str, str, str]] = []
        for seq, raw, data in rows:
            attrs = decode(json.loads(data))
            if "entity_id" in attrs:
                self.info.entity_ids = True
            new_id, normalised = normalise_node(raw, attrs)
            batch.append((seq, raw, new_id, _dumps(normalised)))
            if len(batch) >= _BATCH:
                writer.executemany("INSERT INTO nodes VALUES (?, ?, ?, ?)", batch)
                batch = []
        writer.executemany("INSERT INTO nodes VALUES (?, ?, ?, ?)", batch)
        base = self.nodes + 1
        db.execute(
            "INSERT INTO nodes (seq, raw, id, attrs) SELECT ? + MIN(pos), raw, unquote(raw), NULL"
            " FROM (SELECT seq * 2 AS pos, u AS raw FROM raw_edges"
            "       UNION ALL SELECT seq * 2 + 1, v FROM raw_edges)"
            " WHERE raw NOT IN (SELECT raw FROM raw_nodes) GROUP BY raw",
            (base,),
        )
        # a raw id's order among the nodes, and the id it normalises to
        db.execute("CREATE TABLE idmap (raw TEXT PRIMARY KEY, ord INTEGER, id TEXT) WITHOUT ROWID")
        db.execute(
            "INSERT INTO idmap SELECT raw, seq, id FROM"
            " (SELECT raw, seq, id, ROW_NUMBER() OVER (PARTITION BY raw ORDER BY seq) AS k"
            "  FROM nodes) WHERE k = 1"
        )
        # the graph's nodes: their number in the stored order, by id
        db.execute("CREATE TABLE numbers (num INTEGER PRIMARY KEY, id TEXT UNIQUE)")
        db.execute(
            "INSERT INTO numbers (num, id) SELECT ROW_NUMBER() OVER (ORDER BY first) - 1, id"
            " FROM (SELECT id, MIN(seq) AS first FROM nodes GROUP BY id)"
        )
        self.info.format = _format(self.info)
        node_count = db.execute("SELECT COUNT(*) FROM numbers").fetchone()[0]
        injective = node_count == db.execute("SELECT COUNT(*) FROM idmap").fetchone()[0]
        pairs = self._pairs()
        self._check_parallel(pairs)
        multigraph = bool(
            db.execute(
                f"SELECT EXISTS (SELECT 1 FROM ({pairs}) GROUP BY p1, p2 HAVING COUNT(*) > 1)"
            ).fetchone()[0]
        )
        return SpooledGraph(self, node_count, self._numbered(pairs), injective, multigraph)

    def _pairs(self) -> str:
        """The edges with their pair of raw ends: directed, (u, v); undirected, the end
        networkx reaches first, then the other (the orientation its edge view gives)."""
        if self.info.directed:
            ends = "e.u AS p1, e.v AS p2, iu.ord AS o1, iu.id AS s1, iv.id AS s2"
        else:
            ends = (
                "CASE WHEN iu.ord <= iv.ord THEN e.u ELSE e.v END AS p1,"
                " CASE WHEN iu.ord <= iv.ord THEN e.v ELSE e.u END AS p2,"
                " MIN(iu.ord, iv.ord) AS o1,"
                " CASE WHEN iu.ord <= iv.ord THEN iu.id ELSE iv.id END AS s1,"
                " CASE WHEN iu.ord <= iv.ord THEN iv.id ELSE iu.id END AS s2"
            )
        return (
            f"SELECT e.seq, e.key, e.data, {ends} FROM raw_edges e"
            " JOIN idmap iu ON iu.raw = e.u JOIN idmap iv ON iv.raw = e.v"
        )

    def _numbered(self, pairs: str) -> str:
        return (
            f"SELECT q.*, n1.num AS n1, n2.num AS n2 FROM ({pairs}) q"
            " JOIN numbers n1 ON n1.id = q.s1 JOIN numbers n2 ON n2.id = q.s2"
        )

    def _check_parallel(self, pairs: str) -> None:
        limit = self.limits.max_parallel
        if not limit:
            return
        crowded = self.db.execute(
            f"SELECT p1, p2, COUNT(*) FROM ({pairs}) GROUP BY p1, p2 HAVING COUNT(*) > ? LIMIT 1",
            (limit,),
        ).fetchone()
        if crowded is not None:
            u, v, count = crowded
            self._refuse_parallel(u, v, f"{count:,} times")

    def _refuse_parallel(self, u: str, v: str, times: str) -> None:
        raise GraphTooLarge(
            "POSTEL_GRAPH_MAX_PARALLEL (the relations between one pair of nodes)",
            self.limits.max_parallel,
            f"{self.label} relates {u!r} and {v!r} {times}; nothing was stored",
        )


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _format(info: Spooled) -> GraphFormat:
    """LightRAG writes an `entity_id` per node; nano-graphrag quotes its node ids."""
    if info.format == "edge list":
        return "edge list"
    if info.entity_ids:
        return "LightRAG"
    return "nano-graphrag" if info.quoted_ids else "GraphML"


@dataclass
class SpooledGraph:
    """A spooled graph, read back in order: `nodes()` then `edges()`, each once."""

    spool: Spool
    node_count: int
    pairs: str
    injective: bool
    multigraph: bool
    relations: int = 0
    edge_count: int = 0

    @property
    def directed(self) -> bool:
        return self.spool.info.directed

    @property
    def format(self) -> GraphFormat:
        return self.spool.info.format

    def nodes(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(id, attributes) of every node, in the stored order: nodes whose ids normalise
        alike are one, their attributes updated in the order they were read."""
        rows = self.spool.db.execute(
            "SELECT n.id, n.raw, n.attrs FROM nodes n JOIN numbers m ON m.id = n.id"
            " ORDER BY m.num, n.seq"
        )
        current: str | None = None
        attrs: dict[str, Any] = {}
        for node_id, raw, data in rows:
            found = json.loads(data) if data is not None else normalise_node(raw, {})[1]
            if node_id == current:
                attrs.update(found)
                continue
            if current is not None:
                yield current, attrs
            current, attrs = node_id, found
        if current is not None:
            yield current, attrs

    def _raw_relations(self) -> Iterator[Relation]:
        """Every relation (a Relation), in the order networkx's reader gives a multigraph's
        edges: by the first end's node order, then
        the pair's first edge, then the key's first edge; edges of one GraphML id in a pair
        are one relation, their data updated in order."""
        decode = self.spool.info.decode
        rows = self.spool.db.execute(
            "SELECT p1, p2, s1, s2, n1, n2, key, data, seq,"
            " MIN(seq) OVER (PARTITION BY p1, p2) AS first,"
            " CASE WHEN key IS NULL THEN seq ELSE MIN(seq) OVER (PARTITION BY p1, p2, key) END"
            f" AS keyed FROM ({self.pairs}) ORDER BY o1, first, keyed, seq"
        )
        held: tuple[Any, ...] | None = None
        attrs: dict[str, Any] = {}
        for p1, p2, s1, s2, n1, n2, key, data, _, _, keyed in rows:
            found = decode(json.loads(data))
            if not self.multigraph and key is not None and "id" not in found:
                found["id"] = key
            group = (p1, p2, keyed)
            if held is not None and group == held[:3]:
                attrs.update(found)
                continue
            if held is not None:
                yield held[3], held[4], held[5], held[6], attrs
            held, attrs = (p1, p2, keyed, n1, n2, s1, s2), found
        if held is not None:
            yield held[3], held[4], held[5], held[6], attrs

    def edges(self) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """(source id, target id, attributes) of every edge: one per pair of nodes, the pair's
        first relation its attributes, the others in its PARALLEL list."""
        for _, _, source, target, attrs in self.numbered_edges():
            yield source, target, attrs

    def numbered_edges(self) -> Iterator[Relation]:
        """`edges()` with the numbers of their ends in the node order."""
        relations = self._raw_relations()
        if not self.injective:
            relations = self._regrouped(relations)
        limit = self.spool.limits.max_parallel
        current: tuple[str, ...] | None = None
        edge: dict[str, Any] = {}
        ends = (0, 0)
        for n1, n2, source, target, attrs in relations:
            pair = (source, target) if self.directed else tuple(sorted((source, target)))
            relation = normalise_edge(source, target, attrs)
            self.relations += 1
            if pair == current:
                parallel = edge.setdefault(PARALLEL, [])
                parallel.append(relation)
                if limit and len(parallel) >= limit:
                    self.spool.limits.check(
                        "relations between one pair of nodes",
                        "POSTEL_GRAPH_MAX_PARALLEL",
                        limit,
                        len(parallel) + 1,
                        self.spool.label,
                    )
                continue
            if current is not None:
                self.edge_count += 1
                yield ends[0], ends[1], edge["source"], edge["target"], edge
            current, edge, ends = pair, relation, (n1, n2)
        if current is not None:
            self.edge_count += 1
            yield ends[0], ends[1], edge["source"], edge["target"], edge

    def each_relation(self) -> Iterator[dict[str, Any]]:
        """Every relation on its own, in the shared model, a pair's relations one after the
        other: the edges for an engine that keeps a row per relation, so no pair's PARALLEL
        list is ever built in memory (the relations per pair were checked in the spool)."""
        relations = self._raw_relations()
        if not self.injective:
            relations = self._regrouped(relations)
        current: tuple[str, ...] | None = None
        for _, _, source, target, attrs in relations:
            pair = (source, target) if self.directed else tuple(sorted((source, target)))
            if pair != current:
                self.edge_count += 1
                current = pair
            self.relations += 1
            yield normalise_edge(source, target, attrs)

    def _regrouped(self, relations: Iterator[Relation]) -> Iterator[Relation]:
        """Relations whose normalised ends meet (two raw ids normalise alike), brought
        together, each pair at its first relation's place (spooled again, on disk)."""
        db = self.spool.db
        db.execute(
            "CREATE TABLE rel (rank INTEGER PRIMARY KEY, a INTEGER, b INTEGER, s TEXT, t TEXT,"
            " attrs TEXT)"
        )
        insert = "INSERT INTO rel (a, b, s, t, attrs) VALUES (?, ?, ?, ?, ?)"
        batch: list[tuple[int, int, str, str, str]] = []
        for n1, n2, source, target, attrs in relations:
            batch.append((n1, n2, source, target, _dumps(attrs)))
            if len(batch) >= _BATCH:
                db.executemany(insert, batch)
                batch = []
        db.executemany(insert, batch)
        rows = db.execute(
            "SELECT a, b, s, t, attrs FROM (SELECT *, MIN(rank) OVER (PARTITION BY"
            f" {'a, b' if self.directed else 'MIN(a, b), MAX(a, b)'}) AS first FROM rel)"
            " ORDER BY first, rank"
        )
        for a, b, source, target, attrs in rows:
            yield a, b, source, target, json.loads(attrs)


def _spool_graphml(spool: Spool, reader: CountedReader) -> None:
    def sink(element: StreamedElement) -> None:
        if element.kind == "node":
            spool.add_node(str(element.attrs.get("id")), element.pairs)
        else:
            attrs = element.attrs
            spool.add_edge(
                str(attrs.get("source")),
                str(attrs.get("target")),
                attrs.get("id") or None,
                element.pairs,
            )

    streamed = stream_graphml(reader.read, sink)
    spool.info.directed = streamed.directed
    spool.info.decode = streamed.decoder()


def _spool_tables(
    spool: Spool, kind: InputKind, edges: CountedReader, nodes: CountedReader | None, directed: bool
) -> None:
    spool.info.directed = directed
    spool.info.format = "edge list"

    def rows(reader: CountedReader, role: str) -> Iterator[tuple[list[str], dict[str, Any]]]:
        if kind == "parquet":  # read by pyarrow, which seeks: its size counts whole
            return parquet_rows(reader.whole(), role, reader.label)
        return csv_rows(reader.read, role, reader.label, "\t" if kind == "tsv" else ",")

    if nodes is not None:
        for (node,), attrs in rows(nodes, "nodes"):
            spool.add_node(node, attrs)
    for (u, v), attrs in rows(edges, "edges"):
        spool.add_edge(u, v, None, attrs)


@dataclass
class GraphInput:
    """A graph file (or an upload's body) and how to read it."""

    edges: IO[bytes]
    label: str
    kind: InputKind = "graphml"
    nodes: IO[bytes] | None = None
    nodes_label: str = ""
    directed: bool = False
    bytes_read: int = 0
    """The bytes read from the input(s), after gunzip, once it is spooled."""
    digest: Any = field(default_factory=hashlib.sha256)
    """The SHA-256 of those bytes (the edges' input, then the nodes')."""


def spool_input(source: GraphInput, limits: GraphLimits, folder: Path) -> SpooledGraph:
    """Stream `source` into a spool in `folder` and read it back merged and ordered
    (blocking). GraphTooLarge past a limit, GraphFileError for anything unreadable."""
    spool = Spool(folder, limits, source.label)
    try:
        edges = CountedReader(source.edges, limits, source.label, source.digest)
        if source.kind == "graphml":
            _spool_graphml(spool, edges)
        else:
            nodes = None
            if source.nodes is not None:
                label = source.nodes_label or source.label
                nodes = CountedReader(source.nodes, limits, label, source.digest)
            _spool_tables(spool, source.kind, edges, nodes, source.directed)
            source.bytes_read = nodes.bytes if nodes is not None else 0
        source.bytes_read += edges.bytes
        if spool.nodes == 0 and spool.edges == 0:
            raise GraphFileError(f"{source.label} holds no nodes")
        return spool.finish()
    except (GraphTooLarge, GraphFileError):
        spool.close()
        raise
    except Exception as exc:  # any reader's failure means the file is unusable
        spool.close()
        what = "GraphML graph" if source.kind == "graphml" else f"{source.kind.upper()} table"
        raise GraphFileError(f"{source.label} is not a readable {what}: {exc}") from exc


class SpoolFolder:
    """A scratch folder for one input's spool, removed on exit."""

    def __init__(self, parent: Path | None) -> None:
        if parent is not None:
            parent.mkdir(parents=True, exist_ok=True)
        self.path = Path(tempfile.mkdtemp(prefix="postel-spool-", dir=parent))

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *_: object) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
