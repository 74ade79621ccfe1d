"""A graph in the shared attribute model written to a LadybugDB store, streamed, in bounded
memory at any size.

`build_ladybug_store(nodes, edges, directed, folder)` takes node and edge dicts as the
loaders give them (services/gasl/loaders.py): a node has `id` and its attributes; an edge
has `source`, `target` and its relation's attributes, its further relations between the
same two nodes in its PARALLEL list (or given as further edge dicts of the same pair: both
read the same). It writes them in one pass to spool files in the folder and loads those
with COPY; nothing but one row at a time is held in Python. The folder then holds:

- `graph.lbdb`, the database (opened read-only by `LadybugAdapter`, never written again);
- `store.json`, the `StoreInfo` of the build (format version, direction, counts, and which
  fields a query can filter on in the database exactly).

Schema. `Node(id STRING PRIMARY KEY, ord INT64, shape INT64, entity_type STRING,
description STRING[], source_ids STRING[], file_paths STRING[], extra STRING, odeg INT64,
ideg INT64)`, and `Rel(FROM Node TO Node, rord INT64, pord INT64, shape INT64, weight
DOUBLE, description STRING[], keywords STRING[], source_ids STRING[], file_paths STRING[],
extra STRING)`, one
`Rel` per relation stored from its own source to its own target:

- `ord` is a node's place in graph order: the order nodes were given, then the endpoints no
  node dict named, in the order edges first name them (as networkx adds them);
- `odeg` and `ideg` are a node's relations out and in (a self-loop counts in both): a walk
  knows a hub from them before it asks for its relations (ladybug_engine.py, HUB_DEGREE);
- `rord` is a relation's place in the input, `pord` the `rord` of the first relation of its
  pair (a pair is unordered on an undirected graph): the order networkx visits a node's
  neighbours is by `pord`, and FIND edges lists the relations of a pair together;
- `shape` numbers the order of an item's attribute names among the orders seen
  (`StoreInfo.node_shapes`, `edge_shapes`), so a record reads back with its attributes in
  the order networkx holds them (records are rendered into prompts); past MAX_SHAPES
  distinct orders an item's is not kept (NULL: columns first, then `extra`);
- the common fields above are columns, NULL where an item lacks the field; every other
  attribute is in `extra`, one JSON object per item. A common field's value that its column
  cannot hold as it is (a weight that is not a float, a list holding a non-string, an empty
  string, text holding a line break or the spool's separators) goes to `extra` instead, and
  the field is named in `StoreInfo.spilled`: a condition on it is then tested in Python, as
  one on an `extra` attribute is;
- text is matched in the database by comparing `lower()` of a column with the casefolded
  needle, which is exactly Python's casefold wherever the column holds only characters the
  two fold alike; a column holding another character is named in `StoreInfo.unfolded`, and
  its text matches are tested in Python.

So every FIND condition can filter: in the database where the columns answer it exactly,
else in Python over the rows the database narrowed (see ladybug_engine.py).

A node id repeated in the input keeps its first occurrence (COPY skips the later ones);
the networkx loader merges repeats, so give each node once for both engines to agree.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import structlog
from postel.services.gasl.graphml import read_graphml_bytes
from postel.services.gasl.loaders import PARALLEL, GraphTables, normalise, relations_of

log = structlog.get_logger(__name__)

STORE_FORMAT = 1
DATABASE_NAME = "graph.lbdb"
INFO_NAME = "store.json"
# The buffer pool COPY may use while building (bytes): building stays within it at any size.
BUILD_BUFFER_POOL = 512 * 1024 * 1024
# Relations one COPY loads (one spool file each): a COPY holds its rows in the buffer pool
# (10^6 fit the build's 512 MiB, 3x10^6 do not), and a COPY into a table already holding
# relations costs more the more it holds (5.7 s for the first 2^19, 61 s for the fourth), so
# chunks are as large as fit.
REL_CHUNK = 1 << 20
# The address space a database reserves (the engine's default, 8 TiB, lets a process hold
# only a few open at once): a store larger than this cannot be built.
MAX_STORE_BYTES = 1 << 40

NODE_LISTS = ("description", "source_ids", "file_paths")
NODE_TEXTS = ("entity_type",)
EDGE_LISTS = ("description", "keywords", "source_ids", "file_paths")
EDGE_FLOATS = ("weight",)
# Spool files are delimited by GS with no quoting (the engine's reader, quoting, misreads
# some quoted fields when COPY reads them through a query): a text with a line break or
# one of these separators is not spooled into a column. A list column is its elements
# joined by US after a leading RS (RS alone: the empty list; an empty field: NULL).
_GS, _RS, _US, _FS = "\x1d", "\x1e", "\x1f", "\x1c"
_UNSPOOLABLE = re.compile("[\x00\n\r" + _FS + _GS + _RS + _US + "]")
# a list's elements joined by US: unspoolable if an element holds any of the above but US
_UNSPOOLABLE_JOINED = re.compile("[\x00\n\r" + _FS + _GS + _RS + "]")

NODE_SCHEMA = (
    "CREATE NODE TABLE Node(id STRING, ord INT64, shape INT64, entity_type STRING, "
    "description STRING[], "
    "source_ids STRING[], file_paths STRING[], extra STRING, PRIMARY KEY(id))"
)
REL_SCHEMA = (
    "CREATE REL TABLE Rel(FROM Node TO Node, rord INT64, pord INT64, shape INT64, "
    "weight DOUBLE, "
    "description STRING[], keywords STRING[], source_ids STRING[], file_paths STRING[], "
    "extra STRING)"
)

# Degrees are added once the relations are copied (COPY fills a table's columns all at once;
# a node with no relation one way keeps the default 0).
DEGREES = {"odeg": "(a:Node)-[r:Rel]->(:Node)", "ideg": "(a:Node)<-[r:Rel]-(:Node)"}


@dataclass(frozen=True)
class StoreInfo:
    """What a build wrote: read back by the adapter that opens the folder."""

    directed: bool
    nodes: int
    relations: int
    format: int = STORE_FORMAT
    # fields of which some value went to `extra` (Node: "node.<f>", Rel: "edge.<f>")
    spilled: list[str] = field(default_factory=list)
    # text columns holding characters `lower()` folds unlike Python's casefold
    unfolded: list[str] = field(default_factory=list)
    # the orders of attribute names items have, numbered by their `shape` column
    node_shapes: list[list[str]] = field(default_factory=list)
    edge_shapes: list[list[str]] = field(default_factory=list)
    # attribute name -> the kind of its values (schema_summary's kinds), nodes and relations
    node_attributes: dict[str, str] = field(default_factory=dict)
    edge_attributes: dict[str, str] = field(default_factory=dict)
    # whether nodes hold their degrees (`odeg`, `ideg`; stores built before them do not)
    degrees: bool = False

    def exact(self, kind: Literal["node", "edge"], name: str) -> bool:
        """Does the column of field `name` hold every value of it (none in `extra`)?"""
        return f"{kind}.{name}" not in self.spilled

    def folds(self, kind: Literal["node", "edge"], name: str) -> bool:
        """Does `lower()` of the column fold exactly as Python's casefold?"""
        return self.exact(kind, name) and f"{kind}.{name}" not in self.unfolded

    @classmethod
    def read(cls, folder: Path) -> StoreInfo:
        return cls(**json.loads((folder / INFO_NAME).read_text()))

    def write(self, folder: Path) -> None:
        (folder / INFO_NAME).write_text(json.dumps(asdict(self), sort_keys=True))


# Distinct orders of attribute names a store keeps (see `shape` in the module docstring).
MAX_SHAPES = 4096


class _Shapes:
    """The distinct orders of attribute names items have, numbered as first seen."""

    def __init__(self) -> None:
        self.orders: list[list[str]] = []
        self._numbers: dict[tuple[str, ...], int] = {}
        self.kinds: dict[str, str] = {}

    def of(self, item: dict[str, Any], ends: tuple[str, ...] = ()) -> int | str:
        """The number of the item's order ("" once MAX_SHAPES are numbered: not kept); the
        kinds of its attributes noted. `ends` are text attributes the item is read with
        after its own ones where it lacks them (a relation's source and target)."""
        names = tuple(item)
        if PARALLEL in item:
            names = tuple(k for k in names if k != PARALLEL)
        kinds = self.kinds
        for name in names:
            value = item[name]
            kind = _KINDS.get(type(value)) or value_kind(value)
            if kinds.get(name) != kind:
                kinds[name] = "mixed" if name in kinds else kind
        for name in ends:
            if name not in item:
                names += (name,)
                if kinds.get(name) != "text":
                    kinds[name] = "mixed" if name in kinds else "text"
        number = self._numbers.get(names)
        if number is None:
            if len(self.orders) >= MAX_SHAPES:
                return ""
            number = self._numbers[names] = len(self.orders)
            self.orders.append(list(names))
        return number


class _Spool:
    """Rows of one table written to spool files as they come (fields joined by GS; no field
    holds a separator or a line break), a new file every `chunk` rows, and how many."""

    def __init__(self, path: Path, header: list[str], chunk: int | None = None) -> None:
        self._base = path
        self.paths: list[Path] = []
        self.header = header
        self.chunk = chunk
        self.rows = 0
        self._open()

    def _open(self) -> None:
        path = self._base.with_name(f"{self._base.stem}-{len(self.paths)}{self._base.suffix}")
        self.paths.append(path)
        self._file = path.open("w", newline="", encoding="utf-8")
        self._file.write(_GS.join(self.header) + "\n")

    def write(self, row: list[Any]) -> None:
        if self.chunk and self.rows and self.rows % self.chunk == 0:
            self._file.close()
            self._open()
        self._file.write(_GS.join(map(str, row)) + "\n")
        self.rows += 1

    def close(self) -> None:
        self._file.close()


class _Columns:
    """Splits items into their column values and `extra`, noting spilled fields and the
    characters each text column holds beyond ASCII."""

    def __init__(self, kind: str, lists: tuple[str, ...], texts: tuple[str, ...]) -> None:
        self.kind = kind
        self.lists = lists
        self.texts = texts
        self.spilled: set[str] = set()
        self.chars: dict[str, set[str]] = {name: set() for name in (*lists, *texts, "id")}

    def split(
        self, item: dict[str, Any], skip: tuple[str, ...], floats: tuple[str, ...] = ()
    ) -> list[str]:
        """The item's cells: its texts, `floats`, lists, then `extra` (JSON, "" if none)."""
        extra = {k: v for k, v in item.items() if k not in skip}
        cells: list[str] = []
        for name in self.texts:
            value = extra.get(name)
            if _spoolable_text(value):
                del extra[name]
                cells.append(value)
                self._note(name, value)
            else:
                cells.append("")
                self._spill_if(name, extra)
        for name in floats:
            value = extra.get(name)
            if type(value) is float and math.isfinite(value):
                del extra[name]
                cells.append(repr(value))
            else:
                cells.append("")
                self._spill_if(name, extra)
        for name in self.lists:
            joined = _spoolable_list(extra.get(name))
            if joined is not None:
                del extra[name]
                cells.append(_RS + joined)
                self._note(name, joined)
            else:
                cells.append("")
                self._spill_if(name, extra)
        cells.append(_json(extra) if extra else "")
        return cells

    def _spill_if(self, name: str, extra: dict[str, Any]) -> None:
        if name in extra:
            self.spilled.add(f"{self.kind}.{name}")

    def _note(self, name: str, text: str) -> None:
        if not text.isascii():
            self.chars[name].update(ch for ch in text if not ch.isascii())


def value_kind(value: Any) -> str:
    """The kind of an attribute's value a planner is told: text, number, bool, list, dict."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return "text"


# the kinds of values of the common types, by type (value_kind answers the rest)
_KINDS = {str: "text", bool: "bool", int: "number", float: "number", list: "list"}
_KINDS.update({tuple: "list", dict: "dict"})


def _spoolable_text(value: Any) -> bool:
    return isinstance(value, str) and value != "" and _UNSPOOLABLE.search(value) is None


def _spoolable_list(value: Any) -> str | None:
    """A list of spoolable texts joined by US (the text its column is spooled as), else
    None."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    if not value:
        return ""
    joined = _US.join(value)
    fine = "" not in value and joined.count(_US) == len(value) - 1
    return joined if fine and _UNSPOOLABLE_JOINED.search(joined) is None else None


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False)


def _list_cast(name: str) -> str:
    """The COPY expression reading a spooled list column back into a STRING[]."""
    return (
        f"CASE WHEN {name} IS NULL THEN NULL WHEN {name} = $rs THEN CAST([] AS STRING[]) "
        f"ELSE string_split(substring({name}, 2, size({name})), $us) END AS {name}"
    )


def _text_cast(name: str) -> str:
    return f"CASE WHEN {name} = '' THEN NULL ELSE {name} END AS {name}"


def _load(spool: _Spool, types: dict[str, str], paths: list[Path] | None = None) -> str:
    """LOAD of spool files (all of the spool's, or `paths`) with their columns' types stated
    (never inferred: an id "007" stays a string), delimited by GS, with a quote character
    no field holds."""
    columns = ", ".join(f"{name} {types.get(name, 'STRING')}" for name in spool.header)
    files = ", ".join(f"'{path.as_posix()}'" for path in (paths or spool.paths))
    options = f"HEADER=true, DELIM='{_GS}', QUOTE='{_FS}', ESCAPE='{_FS}'"
    return f"LOAD WITH HEADERS ({columns}) FROM [{files}] ({options})"


# How the engine's COPY of relations reports an endpoint that is no node (lower case).
_MISSING_END = "unable to find primary key value"
_ENDS = ("source", "target")
_EDGE_SKIP = (*_ENDS, PARALLEL)


def build_ladybug_store(
    nodes: Iterable[dict[str, Any]],
    edges: Iterable[dict[str, Any]],
    directed: bool,
    folder: Path,
    *,
    buffer_pool_size: int = BUILD_BUFFER_POOL,
    rel_chunk: int = REL_CHUNK,
) -> StoreInfo:
    """Write a graph to a new LadybugDB store in `folder` (created; must not hold a store).

    `nodes` is consumed before `edges`, each once, one item at a time: both may be
    generators over files of any size. Node dicts need `id` (a non-empty str); edge dicts
    `source` and `target` (node ids; an id no node dict gave becomes a node holding only its
    id). The spool files are removed when the store is built. Returns the StoreInfo, also
    written to the folder. See the module docstring for the schema."""
    import ladybug  # the engine is loaded only by what builds or opens a store

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if (folder / DATABASE_NAME).exists():
        raise FileExistsError(f"{folder / DATABASE_NAME} exists: a store is built once")
    spool_dir = folder / "spool"
    spool_dir.mkdir(exist_ok=True)
    node_cols = _Columns("node", NODE_LISTS, NODE_TEXTS)
    edge_cols = _Columns("edge", EDGE_LISTS, ())
    header = ["id", "ord", "shape", *NODE_TEXTS, *NODE_LISTS, "extra"]
    node_spool = _Spool(spool_dir / "nodes.csv", header)
    node_shapes, edge_shapes = _Shapes(), _Shapes()
    try:
        for node in nodes:
            node_id = node.get("id")
            if not _spoolable_text(node_id):
                raise ValueError(
                    f"a node needs a non-empty string id without line breaks or control "
                    f"separators, got {node_id!r}"
                )
            cells = node_cols.split(node, ("id",))
            node_cols._note("id", node_id)
            node_spool.write([node_id, node_spool.rows, node_shapes.of(node), *cells])
    finally:
        node_spool.close()
    header = ["src", "dst", "rord", "pord", "shape", *EDGE_FLOATS, *EDGE_LISTS, "extra"]
    edge_spool = _Spool(spool_dir / "edges.csv", header, chunk=rel_chunk)
    try:
        # the last relation's pair and its place: a pair's relations one after the other,
        # in one edge dict or in several, take the first one's place here
        last: tuple[tuple[str, ...], int] = ((), 0)
        for edge in edges:
            # the first relation of each pair among this edge's: the place its pair takes
            firsts: dict[tuple[str, ...], int] = {}
            for relation in relations_of(edge):
                source, target = (
                    relation.get("source", edge["source"]),
                    relation.get("target", edge["target"]),
                )
                for end in (source, target):
                    if not _spoolable_text(end):
                        raise ValueError(f"an edge needs ends that are node ids, got {end!r}")
                cells = edge_cols.split(relation, _EDGE_SKIP, floats=EDGE_FLOATS)
                shape = edge_shapes.of(relation, _ENDS)
                ends = (source, target) if directed else tuple(sorted((source, target)))
                pord = firsts.get(ends)
                if pord is None:
                    pord = firsts[ends] = last[1] if ends == last[0] else edge_spool.rows
                last = (ends, pord)
                row = [source, target, edge_spool.rows, pord, shape, *cells]
                edge_spool.write(row)
    finally:
        edge_spool.close()

    database = ladybug.Database(
        str(folder / DATABASE_NAME),
        buffer_pool_size=buffer_pool_size,
        max_db_size=MAX_STORE_BYTES,
    )
    try:
        conn = ladybug.Connection(database)
        marks = {"rs": _RS, "us": _US}
        conn.execute(NODE_SCHEMA)
        conn.execute(REL_SCHEMA)
        node_load = _load(node_spool, {"ord": "INT64", "shape": "INT64"})
        edge_types = {"rord": "INT64", "pord": "INT64", "shape": "INT64", "weight": "DOUBLE"}
        edge_load = _load(edge_spool, edge_types)
        conn.execute(
            f"COPY Node FROM ({node_load} RETURN id, ord, shape, "
            + ", ".join([*map(_text_cast, NODE_TEXTS), *map(_list_cast, NODE_LISTS), "extra"])
            + ")",
            marks,
        )
        # one COPY per spool file (see REL_CHUNK)
        named = False
        for path in edge_spool.paths:
            copy_rel = (
                f"COPY Rel FROM ({_load(edge_spool, edge_types, [path])} "
                "RETURN src, dst, rord, pord, shape, weight, "
                + ", ".join([*map(_list_cast, EDGE_LISTS), "extra"])
                + ")"
            )
            try:
                conn.execute(copy_rel, marks)
            except RuntimeError as error:
                # an endpoint no node dict gave (the COPY stored nothing): every such
                # endpoint becomes a node, in the order edges first name them (networkx's),
                # and the COPY is run again; a graph naming every node is read once
                if named or _MISSING_END not in str(error).lower():
                    raise
                conn.execute(
                    f"COPY Node(id, ord) FROM ({edge_load} "
                    "UNWIND [[src, '0'], [dst, '1']] AS e "
                    "WITH e[1] AS id, min(2 * rord + CAST(e[2] AS INT64)) + $base AS ord "
                    "RETURN id, ord) (IGNORE_ERRORS=true)",
                    {"base": node_spool.rows},
                )
                named = True
                conn.execute(copy_rel, marks)
        _set_pair_places(conn, directed)
        # each node's relations out and in: a walk reads a hub's relations apart, in pages
        for column, pattern in DEGREES.items():
            conn.execute(f"ALTER TABLE Node ADD {column} INT64 DEFAULT 0")
            conn.execute(f"MATCH {pattern} WITH a, count(r) AS d SET a.{column} = d")
        node_count = _scalar(conn, "MATCH (n:Node) RETURN count(n)")
        unfolded = [
            *_unfolded(conn, "node", node_cols.chars),
            *_unfolded(conn, "edge", edge_cols.chars),
        ]
        conn.close()
    finally:
        database.close()
    shutil.rmtree(spool_dir)
    info = StoreInfo(
        directed=directed,
        nodes=node_count,
        relations=edge_spool.rows,
        spilled=sorted(node_cols.spilled | edge_cols.spilled),
        node_shapes=node_shapes.orders,
        edge_shapes=edge_shapes.orders,
        node_attributes=dict(sorted({"id": "text", **node_shapes.kinds}.items())),
        edge_attributes=dict(sorted(edge_shapes.kinds.items())),
        unfolded=sorted(unfolded),
        degrees=True,
    )
    info.write(folder)
    log.info("ladybug_store_built", folder=str(folder), nodes=info.nodes, relations=info.relations)
    return info


def _set_pair_places(conn: Any, directed: bool) -> None:
    """A pair's relations take the place of its first one (unordered on an undirected
    graph): spooled so where an edge dict holds them all (the loaders' edges) or they come
    one after the other (`postel graph add`'s, one per edge dict), set here where one
    pair's relations came apart (nothing is written where none did)."""
    pair = "->" if directed else "-"
    keep = "" if directed else "WHERE a.ord <= b.ord "
    conn.execute(
        f"MATCH (a:Node)-[r:Rel]{pair}(b:Node) {keep}"
        "WITH a, b, min(r.rord) AS first, count(r) AS relations WHERE relations > 1 "
        f"MATCH (a)-[s:Rel]{pair}(b) WHERE s.pord <> first SET s.pord = first"
    )


def _scalar(conn: Any, query: str) -> int:
    rows = conn.execute(query).get_all()
    return int(rows[0][0])


def _unfolded(conn: Any, kind: str, chars: dict[str, set[str]]) -> list[str]:
    """The text columns holding a character the engine's `lower()` folds unlike casefold."""
    seen = sorted(set().union(*chars.values()))
    if not seen:
        return []
    lowered = dict(conn.execute("UNWIND $cs AS c RETURN c, lower(c)", {"cs": seen}).get_all())
    differs = {c for c in seen if lowered.get(c) != c.casefold()}
    return [f"{kind}.{name}" for name, held in chars.items() if held & differs]


def table_items(
    tables: GraphTables,
) -> tuple[Iterator[dict[str, Any]], Iterator[dict[str, Any]]]:
    """The node and edge dicts of a graph's tables (loaders.normalise) in the order networkx
    adds them: a store built from them reads as `build_graph(tables)` does."""
    nodes = ({**attrs, "id": attrs.get("id", node_id)} for node_id, attrs in tables.nodes.items())
    edges = (
        {**attrs, "source": attrs.get("source", u), "target": attrs.get("target", v)}
        for u, v, attrs in tables.edges
    )
    return nodes, edges


def build_from_graphml(path: Path, folder: Path, **options: Any) -> StoreInfo:
    """A store of a GraphML file (nano-graphrag's or LightRAG's), read as `load_graphml`
    reads it. The file is read whole: `postel graph add` streams big ones."""
    tables = normalise(read_graphml_bytes(Path(path).read_bytes()))
    nodes, edges = table_items(tables)
    return build_ladybug_store(nodes, edges, tables.directed, folder, **options)
