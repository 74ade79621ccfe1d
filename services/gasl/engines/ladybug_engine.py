"""The GraphAdapter over a LadybugDB store (built by ladybug_store.py), opened read-only.

Every command goes to the engine as whole Cypher queries, never one node at a time:

- FIND nodes and edges: one query, the condition's exact part as WHERE (cypher_where.py),
  in graph order, `LIMIT cap+1` so `caps_hit` is exact; a part the columns cannot answer
  exactly (an attribute kept in `extra`) is tested in Python over pages of that query.
- NEIGHBORS, GRAPHWALK, SUBGRAPH, GRAPHCONNECT and FIND paths: one query per hop, from the
  whole frontier at once (`MATCH (a:Node)-[r:Rel]->(b:Node) WHERE a.id IN $frontier`), the
  direction in the pattern and VIA as a WHERE on the relation. GASL defines which node a
  walk reaches first and which start it comes from (breadth first, neighbours in the order
  their edge was added), and caps cut results in that order; the hop query returns the
  relations' places (`pord`), and the walk picks in that order, as networkx's does, so both
  engines return the same rows and hit the same caps. A breadth-first walk's hop query
  returns its rows in that order (`WALK_HOP_QUERY`) and the walk reads back only the rows it
  takes: reading rows back, not the engine's query, is most of a hub's cost.

Deadlines: each query runs under the engine's query timeout, set to what is left of the
command's deadline; a query that runs out ends the search as networkx's does when its clock
runs out (the rows so far, the budget's name in `caps_hit`). A plan stopped by its caller
interrupts its running query at once (`_Watch`).

A job's overlay (`overlaid`) is read with the store: the overlay's nodes and relations
(OverlayRows, engine-free) are merged into each query's rows in Python; the store is opened
read-only and never written.
"""

from __future__ import annotations

import itertools
import json
import math
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from postel.services.gasl import ast
from postel.services.gasl.budget import Deadline
from postel.services.gasl.conditions import evaluate
from postel.services.gasl.engines.adjacency_search import (
    Walk,
    edge_matches,
    made_rows,
    sources_of,
)
from postel.services.gasl.engines.caps import DEFAULT_CAPS, Bound, Caps, held
from postel.services.gasl.engines.cypher_where import Column, split, taken
from postel.services.gasl.engines.ladybug_store import (
    DATABASE_NAME,
    EDGE_FLOATS,
    EDGE_LISTS,
    NODE_LISTS,
    NODE_TEXTS,
    StoreInfo,
)
from postel.services.gasl.engines.overlay_view import OverlayRows
from postel.services.gasl.engines.protocol import Found
from postel.services.gasl.errors import BudgetSpent
from postel.services.gasl.loaders import PARALLEL, relations_of
from postel.services.gasl.overlay import Overlay

# The buffer pool of a store opened to read (bytes): what one process's engine may hold.
READ_BUFFER_POOL = 64 * 1024 * 1024
# How many nodes, first in graph order, `attribute_names` reads (networkx's adapter's).
NAMES_FROM = 1000
# How often the watch looks for queries whose deadline passed (a cancelled plan's).
WATCH_EVERY_S = 0.05
# Frontier nodes the first hop query of a walk reads (each next one twice as many).
FIRST_HOP_BATCH = 4
# Rows one page of a scan reads when part of a condition is tested in Python.
PAGE = 4096

_NODE_COLUMNS = ("id", "ord", "shape", *NODE_TEXTS, *NODE_LISTS, "extra")
_REL_COLUMNS = ("rord", "pord", "shape", *EDGE_FLOATS, *EDGE_LISTS, "extra")
NODE_RETURN = ", ".join(f"n.{c}" for c in _NODE_COLUMNS)
REL_RETURN = "a.id, b.id, " + ", ".join(f"r.{c}" for c in _REL_COLUMNS)
# FIND reads items in graph order, range by range of node places (`$lo` to `$hi`, each
# range twice the last, up to LAST_RANGE places): a query sorts only its range's rows, so a
# FIND holds a bounded buffer pool whatever the graph's size. A FIND of nodes the database
# answers whole reads all places in one query: its ORDER BY ... LIMIT is the engine's top-k,
# which holds only LIMIT rows, and each query scans the whole table (one query instead of
# three halves a FIND of 10^6 relations' nodes). Nodes are in place order;
# relations in networkx's `edges()` order: each pair at its end first in graph order (the
# key `k`), a node's pairs in the order they were added (`pord`), a pair's relations in
# input order (`rord`). An undirected graph's relations are read in two parts, by the end
# the relation was stored from and by the other.
NODE_PARTS = [("n.ord >= $lo AND n.ord < $hi", "n.ord")]
EDGE_PARTS = {
    True: [("a.ord >= $lo AND a.ord < $hi", "a.ord")],
    False: [
        ("a.ord >= $lo AND a.ord < $hi AND a.ord <= b.ord", "a.ord"),
        ("b.ord >= $lo AND b.ord < $hi AND b.ord < a.ord", "b.ord"),
    ],
}
EDGE_ORDER = "r.pord, r.rord"
# The hop query: the relations from a frontier, one pattern per way a walk takes them.
HOP_PATTERN = {
    "out": "(a)-[r:Rel]->(b:Node)",
    "in": "(a)<-[r:Rel]-(b:Node)",
    "undirected": "(a)-[r:Rel]-(b:Node)",
}
# Nodes are found by their ids one lookup of the primary key each (`UNWIND ... {id: i}`): a
# WHERE id IN a list would scan every node.
BY_IDS = "UNWIND $ids AS i MATCH ({var}:Node {{id: i}})"
HOP_QUERY = "{taken}{by_ids} OPTIONAL MATCH {pattern} RETURN a.id, b.id, r.pord, {matched}"
# A walk's hop query: the frontier's relations in the order the walk takes them (its place
# in the frontier `hop.j`, then `pord`), so the walk reads back only the rows it takes, and
# each neighbour's degrees ({degrees}: its relations out and in, stored by the build) so
# the walk knows a hub before it asks for its relations.
WALK_HOP_QUERY = (
    "{taken}UNWIND $frontier AS hop MATCH (a:Node {{id: hop.i}}) OPTIONAL MATCH {pattern} "
    "RETURN a.id, b.id, r.pord, {degrees}, {matched} ORDER BY hop.j, r.pord"
)
# A hub, a node of more than HUB_DEGREE relations the ways walked, is read alone and in pages:
# the engine's plan for a list of nodes (UNWIND) joins all of a batch's relations by hash
# and sorts them with their neighbours' ids, 5-10x slower on a hub than one node's lookup
# and scan, and a walk that fills its results on a hub's first relations needs few of them.
# A page is the relations up to a cut, the `pord` of the `rows`-th next relation (each page
# twice the rows of the last); the cut is found on `pord` alone (the engine's top-k of
# integers costs a tenth of one carrying the neighbours' ids), then the page's rows are the
# relations past the last cut up to this one (a pair's relations share their `pord`, so
# they are on one page). A batch of nodes that are not hubs stops before its relations pass
# HUB_DEGREE, so every hop query sorts a bounded number of rows.
HUB_DEGREE = 256
_ONE_HOP = "{taken}MATCH (a:Node {{id: $i}}) MATCH {pattern} "
HUB_CUT_QUERY = (
    _ONE_HOP + "WITH r.pord AS p WHERE p > $after "
    "WITH p ORDER BY p LIMIT $rows RETURN max(p), count(p)"
)
HUB_HOP_QUERY = (
    _ONE_HOP + "WHERE r.pord > $after AND r.pord <= $cut "
    "RETURN a.id, b.id, r.pord, {degrees}, {matched} ORDER BY r.pord"
)


class Records:
    """Rows of a store read back as the records networkx holds: NULL columns left out,
    `extra` merged in, the attributes in the item's order (its `shape`)."""

    def __init__(self, info: StoreInfo) -> None:
        self.node_shapes = info.node_shapes
        self.edge_shapes = info.edge_shapes

    def node(self, row: list[Any]) -> dict[str, Any]:
        """A node row (NODE_RETURN)."""
        values = dict(zip(_NODE_COLUMNS, row, strict=True))
        return _shaped(values, self.node_shapes, ("ord",))

    def relation(self, row: list[Any]) -> dict[str, Any]:
        """A relation row (REL_RETURN): its own source and target."""
        values = {
            "source": row[0],
            "target": row[1],
            **dict(zip(_REL_COLUMNS, row[2:], strict=True)),
        }
        return _shaped(values, self.edge_shapes, ("rord", "pord"))


def _shaped(
    values: dict[str, Any], shapes: list[list[str]], hidden: tuple[str, ...]
) -> dict[str, Any]:
    shape, extra = values.pop("shape"), values.pop("extra")
    for name in hidden:
        del values[name]
    record = {k: v for k, v in values.items() if v is not None}
    if extra:
        record.update(json.loads(extra))
    if shape is None:
        return record
    ordered = {k: record[k] for k in shapes[shape] if k in record}
    return ordered if len(ordered) == len(record) else {**ordered, **record}


def node_columns(info: StoreInfo) -> dict[str, Column]:
    """The node fields a WHERE can read from columns exactly."""
    columns = {"id": Column("n.id", "text", info.folds("node", "id"))}
    for name in NODE_TEXTS:
        columns[name] = Column(f"n.{name}", "text", info.folds("node", name))
    for name in NODE_LISTS:
        columns[name] = Column(f"n.{name}", "texts", info.folds("node", name))
    return {k: v for k, v in columns.items() if k == "id" or info.exact("node", k)}


def edge_columns(info: StoreInfo) -> dict[str, Column]:
    """The relation fields a WHERE can read from columns exactly."""
    ends = info.folds("node", "id")
    columns = {"source": Column("a.id", "text", ends), "target": Column("b.id", "text", ends)}
    for name in EDGE_FLOATS:
        columns[name] = Column(f"r.{name}", "float", False)
    for name in EDGE_LISTS:
        columns[name] = Column(f"r.{name}", "texts", info.folds("edge", name))
    return {k: v for k, v in columns.items() if k in ("source", "target") or info.exact("edge", k)}


class LadybugStore:
    """A store opened read-only: its database, one connection per thread, and its info.
    Shared by the adapter and every overlay view of it."""

    def __init__(self, folder: Path, buffer_pool_size: int = READ_BUFFER_POOL) -> None:
        import ladybug

        self.folder = Path(folder)
        self.info = StoreInfo.read(self.folder)
        path = self.folder / DATABASE_NAME
        self.database = ladybug.Database(
            str(path),
            buffer_pool_size=buffer_pool_size,
            read_only=True,
            max_db_size=_reserved(path),
        )
        self._local = threading.local()
        self._end: int | None = None
        self._connect = lambda: ladybug.Connection(self.database)
        self._watch = _Watch()

    def query(
        self, cypher: str, params: dict[str, Any] | None = None, deadline: Deadline | None = None
    ) -> list[list[Any]]:
        """The rows of one query, run under the engine's timeout set to what is left of the
        deadline; BudgetSpent (the deadline's budget) when the time runs out."""
        rows: list[list[Any]] = self._run(cypher, params, deadline).get_all()
        return rows

    def _run(self, cypher: str, params: dict[str, Any] | None, deadline: Deadline | None) -> Any:
        """The engine's result of one query (see `query`)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        timeout_ms = 0
        if deadline is not None and math.isfinite(deadline.at):
            deadline.check()
            timeout_ms = max(1, int(deadline.remaining() * 1000))
        conn.set_query_timeout(timeout_ms)
        watched = timeout_ms > 0 and self._watch.add(conn, deadline)  # type: ignore[arg-type]
        try:
            return conn.execute(cypher, params or {})
        except RuntimeError as error:
            if deadline is not None and "interrupt" in str(error).lower():
                raise BudgetSpent(deadline.cap, deadline.seconds) from error
            raise
        finally:
            if watched:
                self._watch.remove(conn)

    def rows(
        self, cypher: str, params: dict[str, Any] | None = None, deadline: Deadline | None = None
    ) -> Iterator[list[Any]]:
        """The rows of one query, run as `query` runs it, read back only as far as they are
        taken (the engine has answered the query whole; reading each row back is the cost
        this saves)."""
        result = self._run(cypher, params, deadline)
        return iter(result)

    def end(self) -> int:
        """One past the last node's place in graph order (places may skip: see `ord`)."""
        if self._end is None:
            rows = self.query("MATCH (n:Node) RETURN max(n.ord)")
            self._end = 0 if rows[0][0] is None else int(rows[0][0]) + 1
        return self._end

    def close(self) -> None:
        self._watch.stop()
        self.database.close()


class _Watch:
    """Interrupts a running query whose deadline passed before the engine's timeout fires:
    a plan stopped by its caller (a cancelled job) reads every deadline as passed at once.
    One thread per store, started by the first query with a deadline, looks every
    WATCH_EVERY_S at the queries running."""

    def __init__(self) -> None:
        self._running: dict[int, tuple[Any, Deadline]] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, conn: Any, deadline: Deadline) -> bool:
        with self._lock:
            self._running[id(conn)] = (conn, deadline)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="lbug-watch")
                self._thread.start()
        return True

    def remove(self, conn: Any) -> None:
        with self._lock:
            self._running.pop(id(conn), None)

    def stop(self) -> None:
        self._stopped.set()

    def _run(self) -> None:
        while not self._stopped.wait(WATCH_EVERY_S):
            with self._lock:
                running = list(self._running.values())
            for conn, deadline in running:
                if deadline.remaining() <= 0:
                    conn.interrupt()


def _reserved(path: Path) -> int:
    """The address space to reserve for reading a store: a power of two past its size."""
    size = sum(f.stat().st_size for f in path.rglob("*")) if path.is_dir() else path.stat().st_size
    return max(1 << 30, 1 << (2 * size).bit_length())


class _GraphIds(Mapping[str, int]):
    """The store's node ids and places (`ord`) an overlay asked about, learned in batches:
    what OverlayRows reads to tell a node the graph has from one only the overlay has. Its
    length is past every place, so the overlay's nodes come after the graph's."""

    def __init__(self, store: LadybugStore) -> None:
        self.store = store
        self.known: dict[str, int] = {}
        self.absent: set[str] = set()
        self._end = store.end()

    def learn(self, ids: Iterable[str]) -> None:
        asked = [i for i in dict.fromkeys(ids) if i not in self.known and i not in self.absent]
        for start in range(0, len(asked), PAGE):
            chunk = asked[start : start + PAGE]
            found = self.store.query(BY_IDS.format(var="n") + " RETURN n.id, n.ord", {"ids": chunk})
            self.known.update((i, int(o)) for i, o in found)
            self.absent.update(set(chunk) - self.known.keys())

    def __getitem__(self, node_id: str) -> int:
        self.learn([node_id])
        return self.known[node_id]

    def __contains__(self, node_id: object) -> bool:
        if not isinstance(node_id, str):
            return False
        self.learn([node_id])
        return node_id in self.known

    def __len__(self) -> int:
        return self._end

    def __iter__(self) -> Iterator[str]:
        return iter(self.known)


@dataclass
class _Pair:
    """An edge a walk may take: its neighbour, the way walked, whether it names what the
    walk follows; `base` says the store has it, `overlay` the relations a job added."""

    nxt: str
    way: str
    matched: bool
    base: bool
    overlay: list[dict[str, Any]]


class LadybugAdapter:
    """GraphAdapter over a LadybugDB store folder, read-only; with an overlay (`overlaid`),
    one job's view of it. Searches keep no per-job state, so threads may share one."""

    def __init__(self, store: LadybugStore, overlay: Overlay | None = None) -> None:
        self.store = store
        self.info = store.info
        self.directed = store.info.directed
        self._records = Records(store.info)
        self._node_columns = node_columns(store.info)
        self._edge_columns = edge_columns(store.info)
        self.overlay = overlay
        self.rows: OverlayRows | None = None
        # per side, node -> neighbour -> the overlay's relations of that pair (in order):
        # pairs the store has (`_replaced`) and pairs only the overlay has (`_added`)
        sides = ("succ", "pred") if self.directed else ("adj",)
        self._replaced: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {
            s: {} for s in sides
        }
        self._added: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {s: {} for s in sides}
        self._names: set[str] | None = None
        self._first = 0
        if overlay is not None:
            self._ids = _GraphIds(store)
            self.rows = OverlayRows(overlay, self._ids, use_indexes=True)
            self.catch_up()

    @classmethod
    def open(cls, folder: str | Path, buffer_pool_size: int = READ_BUFFER_POOL) -> LadybugAdapter:
        return cls(LadybugStore(Path(folder), buffer_pool_size))

    def overlaid(self, overlay: Overlay) -> LadybugAdapter:
        """This store with a job's overlay (over this view's overlay, if it has one)."""
        if self.overlay is not None:
            overlay = Overlay(
                [*self.overlay.nodes, *overlay.nodes], [*self.overlay.edges, *overlay.edges]
            )
        return LadybugAdapter(self.store, overlay)

    def close(self) -> None:
        self.store.close()

    # --- the overlay
    def catch_up(self) -> None:
        """Take in the nodes and edges the overlay gained since the last call."""
        if self.rows is None or self.overlay is None:
            return
        self._ids.learn(
            [
                *(str(n["id"]) for n in self.overlay.nodes),
                *(str(e[k]) for e in self.overlay.edges for k in ("source", "target")),
            ]
        )
        relations = self.rows.take_in()
        linked = self._store_pairs([(str(r["source"]), str(r["target"])) for r in relations])
        for relation in relations:
            u, v = str(relation["source"]), str(relation["target"])
            own = self._overlay_pair(u, v)
            if own is not None:
                own.append(relation)
            elif (u, v) in linked:
                self._register(self._replaced, u, v, [relation])
            else:
                self._register(self._added, u, v, [relation])

    def _register(
        self, table: dict[str, dict[str, dict[str, Any]]], u: str, v: str, found: list[Any]
    ) -> None:
        if self.directed:
            table["succ"].setdefault(u, {})[v] = found
            table["pred"].setdefault(v, {})[u] = found
        else:
            table["adj"].setdefault(u, {})[v] = found
            table["adj"].setdefault(v, {})[u] = found

    def _overlay_pair(self, u: str, v: str) -> list[dict[str, Any]] | None:
        side = "succ" if self.directed else "adj"
        for table in (self._replaced, self._added):
            found = table[side].get(u, {}).get(v)
            if found is not None:
                return found
        return None

    def _store_pairs(self, pairs: list[tuple[str, str]]) -> set[tuple[str, str]]:
        """The pairs the store links (either way round on an undirected graph)."""
        if not pairs:
            return set()
        ends = sorted({x for pair in pairs for x in pair if x in self._ids.known})
        rows = self.store.query(
            BY_IDS.format(var="a") + " OPTIONAL MATCH (a)-[r:Rel]->(b:Node) "
            "WHERE b.id IN $ids RETURN DISTINCT a.id, b.id",
            {"ids": ends},
        )
        linked = {(a, b) for a, b in rows if b is not None}
        if not self.directed:
            linked |= {(b, a) for a, b in rows}
        return linked

    def _ord(self, node_id: str, places: Mapping[str, int]) -> int:
        if self._has(node_id):
            assert self.rows is not None
            return self.rows.ordinal[node_id]
        return places[node_id]

    # --- nodes
    def get_node(self, node_id: str) -> dict[str, Any] | None:
        found = self._nodes([node_id])
        return found.get(node_id)

    def _nodes(
        self, ids: Iterable[str], deadline: Deadline | None = None
    ) -> dict[str, dict[str, Any]]:
        """The records of the nodes among `ids` (the overlay's too), by id."""
        wanted = list(dict.fromkeys(ids))
        out: dict[str, dict[str, Any]] = {}
        for start in range(0, len(wanted), PAGE):
            rows = self.store.query(
                BY_IDS.format(var="n") + f" RETURN {NODE_RETURN}",
                {"ids": wanted[start : start + PAGE]},
                deadline,
            )
            out.update((row[0], self._records.node(row)) for row in rows)
        if self.rows is not None:
            for node_id in wanted:
                if node_id not in out and self._has(node_id):
                    out[node_id] = dict(self.rows.nodes.record(self._own(node_id)))
        return out

    def _own(self, node_id: str) -> int:
        assert self.rows is not None
        return self.rows.ordinal[node_id] - len(self._ids)

    def _places(
        self,
        ids: Iterable[str],
        deadline: Deadline | None,
        degrees: dict[str, tuple[int, int]] | None = None,
    ) -> dict[str, int]:
        """Each node's place in graph order (the overlay's after the store's); the store's
        nodes' degrees noted in `degrees` when given."""
        wanted = list(dict.fromkeys(ids))
        out: dict[str, int] = {}
        for start in range(0, len(wanted), PAGE):
            rows = self.store.query(
                BY_IDS.format(var="n") + f" RETURN n.id, n.ord, {self._degrees('n')}",
                {"ids": wanted[start : start + PAGE]},
                deadline,
            )
            out.update((row[0], int(row[1])) for row in rows)
            if degrees is not None:
                degrees.update((row[0], (row[2], row[3])) for row in rows)
        if self.rows is not None:
            out.update((i, self.rows.ordinal[i]) for i in wanted if i not in out and self._has(i))
        return out

    def _degrees(self, var: str) -> str:
        """The columns of a node's degrees out and in (0, 0 in a store built without)."""
        return f"{var}.odeg, {var}.ideg" if self.info.degrees else "0, 0"

    @staticmethod
    def _degree(degrees: dict[str, tuple[int, int]], node: str, ways: list[str]) -> int:
        """The relations of `node` a walk takes the `ways` (0 where not known)."""
        out, into = degrees.get(node, (0, 0))
        both = "undirected" in ways
        return (out if both or "out" in ways else 0) + (into if both or "in" in ways else 0)

    def _batch(
        self, nodes: list[str], degrees: dict[str, tuple[int, int]], ways: list[str]
    ) -> list[str]:
        """The first of `nodes` alone if it is a hub, else as many of them as come before a
        hub and before their relations pass HUB_DEGREE (see HUB_DEGREE)."""
        taken_relations = 0
        for count, node in enumerate(nodes):
            degree = self._degree(degrees, node, ways)
            if count and (degree > HUB_DEGREE or taken_relations + degree > HUB_DEGREE):
                return nodes[:count]
            if degree > HUB_DEGREE:
                return nodes[:1]
            taken_relations += degree
        return nodes

    def _has(self, node_id: str) -> bool:
        return self.rows is not None and node_id in self.rows._own_ordinal

    def attribute_names(self) -> set[str]:
        """The attributes of the first 1000 nodes in graph order (as networkx's)."""
        if self._names is None:
            rows = self.store.query(
                f"MATCH (n:Node) RETURN {NODE_RETURN} ORDER BY n.ord LIMIT {NAMES_FROM}"
            )
            self._first = len(rows)
            self._names = set().union(*(self._records.node(row) for row in rows))
        names = set(self._names)
        if self.rows is not None:
            for attrs in self.rows.nodes.first(NAMES_FROM - self._first):
                names.update(attrs)
        return names

    # --- FIND
    def find_nodes(
        self,
        where: ast.Condition | None,
        limit: int | None,
        *,
        caps: Caps = DEFAULT_CAPS,
        deadline: Deadline | None = None,
    ) -> Found:
        return self._find(
            where, limit, caps, deadline, NODE_READING, self._node_columns,
            self._records.node, self.rows.nodes if self.rows else None,
        )  # fmt: skip

    def find_edges(
        self,
        where: ast.Condition | None,
        limit: int | None,
        *,
        caps: Caps = DEFAULT_CAPS,
        deadline: Deadline | None = None,
    ) -> Found:
        return self._find(
            where, limit, caps, deadline, EDGE_READING[self.directed], self._edge_columns,
            self._records.relation, self.rows.edges if self.rows else None,
        )  # fmt: skip

    def _find(
        self,
        where: ast.Condition | None,
        limit: int | None,
        caps: Caps,
        deadline: Deadline | None,
        reading: _Reading,
        columns: Mapping[str, Column],
        record: Callable[[list[Any]], dict[str, Any]],
        overlay_table: Any,
    ) -> Found:
        """Items of the store in graph order matching `where`, then the overlay's: at most
        `limit` and the max_results cap of them.

        Where the database answers the whole condition, each range's query returns only the
        items' identities and order (`LIMIT` what is still wanted), and the records of those
        chosen are read after by key; else each range's rows are read whole and the rest of
        the condition tested on them (smaller ranges)."""
        deadline = deadline or Deadline.never()
        bound = Bound.of(limit, caps.max_results, "max_results")
        wanted = bound.count
        cypher, params, rest = split(where, columns)
        exact = rest is None
        returned = reading.ident if exact else reading.returned
        queries = [
            f"{taken(params)}{reading.match} WHERE {within}"
            + (f" AND ({cypher})" if cypher else "")
            + f" RETURN {returned}, {key} AS k ORDER BY k"
            + (f", {reading.then}" if reading.then else "")
            + (" LIMIT $n" if exact else "")
            for within, key in reading.parts
        ]
        chosen: list[list[Any]] = []
        items: list[dict[str, Any]] = []
        examined = 0
        try:
            lo, end = 0, self.store.end()
            size, last = (reading.ranges or (end, end)) if exact else reading.tested_ranges
            while lo < end and len(chosen) + len(items) <= wanted:
                span = {"lo": lo, "hi": lo + size, "n": wanted + 1 - len(chosen)}
                rows = [
                    row
                    for q in queries
                    for row in self.store.query(q, {**params, **span}, deadline)
                ]
                rows.sort(key=reading.order if exact else reading.tested_order or reading.order)
                for row in rows:
                    examined += 1
                    if exact:
                        chosen.append(row)
                    else:
                        made = record(row[:-1])
                        if evaluate(rest, made):
                            items.append(made)
                    if len(chosen) + len(items) > wanted:
                        break
                lo, size = lo + size, min(size * 2, last)
            if exact:
                items = reading.read(self, chosen, deadline)
            if len(items) <= wanted and overlay_table is not None:
                room = wanted - len(items)
                picked = overlay_table.select(where, None, room + 1, deadline)
                items.extend(dict(overlay_table.record(i)) for i in picked.ordinals)
        except BudgetSpent as spent:
            return Found(items[:wanted], [spent.cap], examined, cypher is not None)
        caps_hit = bound.cut() if len(items) > wanted else []
        return Found(items[:wanted], caps_hit, examined, cypher is not None)

    def _nodes_in_order(
        self, chosen: list[list[Any]], deadline: Deadline | None
    ) -> list[dict[str, Any]]:
        """The records of the nodes FIND chose (rows of their id and place), in order."""
        found = self._nodes([row[0] for row in chosen], deadline)
        return [found[row[0]] for row in chosen]

    def _relations_in_order(
        self, chosen: list[list[Any]], deadline: Deadline | None
    ) -> list[dict[str, Any]]:
        """The records of the relations FIND chose (rows of their source id, `rord`,
        `pord` and key), in order: each read from its source by its `rord`."""
        keys = [{"a": row[0], "rord": row[1]} for row in chosen]
        found: dict[int, dict[str, Any]] = {}
        for start in range(0, len(keys), PAGE):
            rows = self.store.query(
                "UNWIND $keys AS x MATCH (a:Node {id: x.a}) OPTIONAL MATCH (a)-[r:Rel]->(b:Node) "
                f"WHERE r.rord = x.rord RETURN {REL_RETURN}",
                {"keys": keys[start : start + PAGE]},
                deadline,
            )
            found.update((row[2], self._records.relation(row)) for row in rows if row[1])
        return [found[row[1]] for row in chosen]

    # --- walks
    def _hops(
        self,
        nodes: list[str],
        direction: ast.Direction,
        follow: tuple[str, ...],
        deadline: Deadline,
    ) -> dict[str, list[_Pair]]:
        """Each node's edges a walk may take, in the order networkx's adjacency gives them
        (a directed graph's out-edges before its in-edges), by one query per way."""
        ways = ["undirected"] if not self.directed else []
        if self.directed:
            ways = [w for w in ("out", "in") if direction in (w, "both")]
        base_nodes = [n for n in nodes if not self._has(n)]
        matched, params = self._follow_test(follow)
        out: dict[str, list[_Pair]] = {n: [] for n in nodes}
        for way in ways:
            by_node: dict[str, dict[str, tuple[int, bool]]] = {}
            for start in range(0, len(base_nodes), PAGE):
                rows = self.store.query(
                    HOP_QUERY.format(
                        pattern=HOP_PATTERN[way],
                        matched=matched,
                        taken=taken(params),
                        by_ids=BY_IDS.format(var="a"),
                    ),
                    {**params, "ids": base_nodes[start : start + PAGE]},
                    deadline,
                )
                for row in rows:
                    a, b, pord = row[0], row[1], row[2]
                    if b is None:  # a node with no edge this way
                        continue
                    if matched == REL_RETURN:  # tested here: see _follow_test
                        hit = self._matches([self._records.relation(row[3:])], follow)
                    else:
                        hit = bool(row[3])
                    seen = by_node.setdefault(a, {})
                    place, before = seen.get(b, (pord, False))
                    seen[b] = (min(place, pord), before or hit)
            side = {"out": "succ", "in": "pred", "undirected": "adj"}[way]
            for node in nodes:
                replaced = self._replaced[side].get(node, {})
                found = sorted(by_node.get(node, {}).items(), key=lambda item: item[1][0])
                for nxt, (_, hit) in found:
                    extra = replaced.get(nxt, [])
                    hit = hit or (bool(follow) and self._matches(extra, follow))
                    out[node].append(_Pair(nxt, way, hit or not follow, True, extra))
                for nxt, relations in self._added[side].get(node, {}).items():
                    hit = not follow or self._matches(relations, follow)
                    out[node].append(_Pair(nxt, way, hit, False, relations))
        return out

    def _follow_test(self, follow: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
        """Cypher testing whether a relation names any of `follow` in its keywords or
        description (`edge_matches`), else the columns needed to test it in Python."""
        if not follow:
            return "true", {}
        if not all(self.info.folds("edge", name) for name in ("keywords", "description")):
            return REL_RETURN, {}
        tests = [
            f"any(x IN coalesce(r.keywords, []) + coalesce(r.description, []) "
            f"WHERE lower(x) CONTAINS f{i})"
            for i in range(len(follow))
        ]
        return " OR ".join(tests), {f"f{i}": f.casefold() for i, f in enumerate(follow)}

    @staticmethod
    def _matches(relations: list[dict[str, Any]], follow: tuple[str, ...]) -> bool:
        return any(edge_matches(r, f) for r in relations for f in follow)

    def _breadth_first(
        self,
        starts: list[str],
        follow: tuple[str, ...],
        depth: int | None,
        default_depth: int,
        limit: int | None,
        caps: Caps,
        deadline: Deadline | None,
        direction: ast.Direction,
        known: bool = False,
    ) -> Walk:
        """networkx's breadth-first walk (adjacency_search), its adjacency read one hop of
        the frontier at a time."""
        deadline = deadline or Deadline.never()
        max_depth, caps_hit = held(depth, default_depth, caps.max_depth, "max_depth")
        bound = Bound.of(limit, caps.max_results, "max_results")
        wanted = bound.count
        seeds = list(dict.fromkeys(starts))
        walk = Walk({})
        try:
            degrees: dict[str, tuple[int, int]] = {}
            ways = _ways(self.directed, direction)
            if not known:
                present = self._places(seeds, deadline, degrees)
                seeds = [s for s in seeds if s in present]
            walk.reached.update({s: (0, s, None, "") for s in seeds})
            queue = deque((s, 0) for s in seeds)
            steps: _Steps | None = None
            batch = FIRST_HOP_BATCH
            full = False
            while queue and not full:
                node, level = queue.popleft()
                if level >= max_depth:
                    continue
                if walk.expansions >= caps.max_expansions:
                    caps_hit.append("max_expansions")
                    break
                if steps is None or node not in steps:
                    # the hop of this node and the next of its level the walk may expand,
                    # twice as many as the last hop query read: a walk that fills its
                    # results early reads no further (a hub's relations are many)
                    room = min(caps.max_expansions - walk.expansions, batch)
                    level_nodes = [node, *(n for n, d in queue if d == level)][:room]
                    level_nodes = self._batch(level_nodes, degrees, ways)
                    rows = _first_hub_rows(wanted + 1 - len(walk.order))
                    steps = _Steps(self, level_nodes, direction, follow, deadline, degrees, rows)
                    batch = min(batch * 2, PAGE)
                walk.expansions += 1
                origin = walk.reached[node][1]
                for pair in steps.pairs(node):
                    if pair.nxt in walk.reached or not pair.matched:
                        continue
                    walk.reached[pair.nxt] = (level + 1, origin, node, pair.way)
                    queue.append((pair.nxt, level + 1))
                    walk.order.append(pair.nxt)
                    if len(walk.order) > wanted:
                        full = True
                        caps_hit.extend(bound.cut())
                        break
        except BudgetSpent as spent:
            caps_hit.append(spent.cap)
        del walk.order[wanted:]
        walk.caps_hit = caps_hit
        return walk

    def _walk_rows(self, walk: Walk, deadline: Deadline | None, paths: bool) -> list[Any]:
        try:
            records = self._nodes(walk.order, deadline)
        except BudgetSpent as spent:
            walk.caps_hit.append(spent.cap)
            return []
        return walk.rows(records.__getitem__, deadline, paths=paths)

    def neighbors(
        self,
        starts: list[str],
        via: str | None,
        depth: int | None,
        limit: int | None,
        *,
        caps: Caps = DEFAULT_CAPS,
        deadline: Deadline | None = None,
        direction: ast.Direction = "both",
    ) -> Found:
        walk = self._breadth_first(
            starts, () if via is None else (via,), depth, 1, limit, caps, deadline, direction
        )
        rows = self._walk_rows(walk, deadline, paths=False)
        return Found(rows, walk.caps_hit, walk.expansions, False)

    def walk(
        self,
        starts: list[str],
        follow: tuple[str, ...],
        depth: int | None,
        limit: int | None,
        *,
        caps: Caps = DEFAULT_CAPS,
        deadline: Deadline | None = None,
        direction: ast.Direction = "both",
    ) -> Found:
        walk = self._breadth_first(starts, follow, depth, 2, limit, caps, deadline, direction)
        rows = self._walk_rows(walk, deadline, paths=True)
        return Found(rows, walk.caps_hit, walk.expansions, False)

    def subgraph(
        self,
        starts: list[str],
        via: str | None,
        depth: int | None,
        limit: int | None,
        *,
        caps: Caps = DEFAULT_CAPS,
        deadline: Deadline | None = None,
        direction: ast.Direction = "both",
    ) -> Found:
        """As networkx's: the start nodes and those within `depth` hops, at most `limit`
        nodes, and every edge among them (only those naming `via`, if given), read by one
        query over the members."""
        deadline = deadline or Deadline.never()
        try:
            places = self._places(starts, deadline)
        except BudgetSpent as spent:
            return Found([], [spent.cap], 0, False)
        seeds = [s for s in dict.fromkeys(starts) if s in places]
        bound = Bound.of(limit, caps.max_results, "max_results")
        room = None if limit is None else max(limit - len(seeds), 0)
        follow = () if via is None else (via,)
        walk = self._breadth_first(
            seeds, follow, depth, 1, room, caps, deadline, direction, known=True
        )
        caps_hit = list(walk.caps_hit)
        members = [*seeds, *walk.order]
        if len(members) > bound.count:
            members = members[: bound.count]
            caps_hit = sorted({*caps_hit, *bound.cut()})
        edges: list[dict[str, Any]] = []
        try:
            places.update(self._places(walk.order, deadline))
            edges = self._edges_among(members, places, follow, deadline)
            nodes = self._nodes(members, deadline)
        except BudgetSpent as spent:
            return Found([], sorted({*caps_hit, spent.cap}), walk.expansions, False)
        if len(edges) > caps.max_results:
            del edges[caps.max_results :]
            caps_hit = sorted({*caps_hit, "max_results"})
        item = {
            "nodes": [dict(nodes[n]) for n in members],
            "edges": edges,
            "node_count": len(members),
            "edge_count": len(edges),
            "source_ids": sources_of(edges),
        }
        return Found([item] if members else [], caps_hit, walk.expansions, False)

    def _edges_among(
        self,
        members: list[str],
        places: Mapping[str, int],
        follow: tuple[str, ...],
        deadline: Deadline,
    ) -> list[dict[str, Any]]:
        """The relations of each pair of members, as networkx lists them walking each
        member's out-edges (undirected: each pair once, from its end first in graph order)."""
        inside = set(members)
        steps = self._hops(members, "out", follow, deadline)
        wanted: list[tuple[str, str, _Pair]] = []
        for u in members:
            for pair in steps[u]:
                v = pair.nxt
                if v not in inside or (
                    pair.way == "undirected" and self._ord(v, places) < self._ord(u, places)
                ):
                    continue
                if pair.matched:
                    wanted.append((u, v, pair))
        attrs = self._pair_attrs([(u, p.nxt, p) for u, _, p in wanted], deadline)
        return [
            {**r, "source": u, "target": v}
            for u, v, pair in wanted
            for r in relations_of(attrs[u, v])
        ]

    def _pair_attrs(
        self, pairs: list[tuple[str, str, _Pair]], deadline: Deadline
    ) -> dict[tuple[str, str], dict[str, Any]]:
        """The attributes of each edge u-v as networkx holds them (its first relation's,
        the others under PARALLEL), the overlay's relations after the store's: one query
        over the pairs' ends."""
        base = [(u, v) for u, v, p in pairs if p.base]
        relations: dict[tuple[str, str], list[tuple[int, dict[str, Any]]]] = {}
        ends = sorted({x for pair in base for x in pair})
        for start in range(0, len(ends), PAGE) if ends else ():
            chunk = ends[start : start + PAGE]
            rows = self.store.query(
                BY_IDS.format(var="a") + " OPTIONAL MATCH (a)-[r:Rel]->(b:Node) "
                f"WHERE b.id IN $others RETURN {REL_RETURN}",
                {"ids": chunk, "others": ends},
                deadline,
            )
            for row in rows:
                if row[1] is None:
                    continue
                relations.setdefault((row[0], row[1]), []).append(
                    (row[2], self._records.relation(row))
                )
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for u, v, pair in pairs:
            found = relations.get((u, v), []) if pair.base else []
            if pair.base and not self.directed and u != v:
                found = [*found, *relations.get((v, u), [])]
            ordered = [r for _, r in sorted(found, key=lambda x: x[0])] + pair.overlay
            first, *others = ordered
            out[u, v] = {**first, PARALLEL: others} if others else first
        return out

    def _path_records(
        self, found: list[tuple[list[str], list[str]]], deadline: Deadline | None
    ) -> tuple[list[dict[str, Any]], list[str]]:
        """Path records (adjacency_search's `_path_record`) of the paths found, their
        edges' attributes read by one query."""
        deadline = deadline or Deadline.never()
        pairs: list[tuple[str, str, _Pair]] = []
        for nodes, walked in found:
            for (a, b), way in zip(itertools.pairwise(nodes), walked, strict=True):
                u, v = (b, a) if way == "in" else (a, b)
                side = "succ" if self.directed else "adj"
                extra = self._overlay_of(u, v, side)
                base = extra is None or extra[1]
                pairs.append((u, v, _Pair(v, way, True, base, extra[0] if extra else [])))
        try:
            attrs = self._pair_attrs(pairs, deadline)
        except BudgetSpent as spent:
            return [], [spent.cap]

        def record(item: tuple[list[str], list[str]]) -> dict[str, Any]:
            nodes, walked = item
            edges = [
                {**(attrs[b, a] if way == "in" else attrs[a, b]), "walked": way}
                for (a, b), way in zip(itertools.pairwise(nodes), walked, strict=True)
            ]
            return {
                "start": nodes[0],
                "end": nodes[-1],
                "nodes": list(nodes),
                "length": len(nodes) - 1,
                "edges": edges,
                "source_ids": sources_of(edges),
            }

        return made_rows(record, found, deadline)

    def _overlay_of(self, u: str, v: str, side: str) -> tuple[list[dict[str, Any]], bool] | None:
        """The overlay's relations of pair u-v and whether the store has the pair too."""
        replaced = self._replaced[side].get(u, {}).get(v)
        if replaced is not None:
            return replaced, True
        added = self._added[side].get(u, {}).get(v)
        return None if added is None else (added, False)

    def connect(
        self,
        lefts: list[str],
        rights: list[str],
        via: str | None,
        max_length: int | None,
        limit: int | None,
        *,
        caps: Caps = DEFAULT_CAPS,
        deadline: Deadline | None = None,
        direction: ast.Direction = "both",
    ) -> Found:
        """As networkx's: a shortest path from each left node to each right node it reaches
        within `max_length`, shortest first; a pair walked either way is reported once."""
        deadline = deadline or Deadline.never()
        length, caps_hit = held(
            max_length, caps.max_path_length, caps.max_path_length, "max_path_length"
        )
        bound = Bound.of(limit, caps.max_paths, "max_paths")
        try:
            places = self._places([*lefts, *rights], deadline)
        except BudgetSpent as spent:
            return Found([], sorted({*caps_hit, spent.cap}), 0, False)
        targets = {r for r in rights if r in places}
        either_way = direction == "both" or not self.directed
        follow = () if via is None else (via,)
        pairs: dict[tuple[str, str] | frozenset[str], tuple[list[str], list[str]]] = {}
        expansions = 0
        for left in dict.fromkeys(lefts):
            if left not in places:
                continue
            room = replace(
                caps,
                max_expansions=max(caps.max_expansions - expansions, 1),
                max_depth=max(length, 1),
            )
            walk = self._breadth_first(
                [left], follow, length, 1, None, room, deadline, direction, known=True
            )
            expansions += walk.expansions
            for right in walk.order:
                key = frozenset((left, right)) if either_way else (left, right)
                if right in targets and key not in pairs:
                    pairs[key] = walk.path_to(right)
            caps_hit = sorted({*caps_hit, *walk.caps_hit})
            if set(walk.caps_hit) - {"max_results"}:
                break
        ranked = sorted(pairs.values(), key=lambda found: len(found[0]))
        if len(ranked) > bound.count:
            caps_hit = sorted({*caps_hit, *bound.cut()})
        items, cut = self._path_records(ranked[: bound.count], deadline)
        return Found(items, sorted({*caps_hit, *cut}), expansions, False)

    def find_paths(
        self,
        starts: list[str],
        ends: list[str],
        where: ast.Condition | None,
        max_length: int | None,
        limit: int | None,
        *,
        caps: Caps = DEFAULT_CAPS,
        deadline: Deadline | None = None,
        direction: ast.Direction = "both",
        via: str | None = None,
    ) -> Found:
        """As networkx's depth-first search of simple paths, over the adjacency of the
        nodes within reach read one hop at a time (the nodes passing `where` read by one
        query per hop)."""
        deadline = deadline or Deadline.never()
        length, caps_hit = held(
            max_length, caps.max_path_length, caps.max_path_length, "max_path_length"
        )
        bound = Bound.of(limit, caps.max_paths, "max_paths")
        wanted = bound.count
        follow = () if via is None else (via,)
        paths: list[tuple[list[str], list[str]]] = []
        expansions = 0
        stopped = ""
        try:
            places = self._places([*starts, *ends], deadline)
            start_ids = [s for s in dict.fromkeys(starts) if s in places]
            end_set = {e for e in ends if e in places}
            start_set = set(start_ids)
            either_way = direction == "both" or not self.directed
            adjacency, passing = self._reach(
                start_ids, length, where, follow, direction, caps, deadline
            )
            for start in start_ids:
                if stopped:
                    break
                path, walked = [start], []
                on_path = {start}
                stack = [iter(adjacency.get(start, []))]
                expansions += 1
                while stack and not stopped:
                    deadline.tick()
                    step = next(stack[-1], None)
                    if step is None:
                        stack.pop()
                        on_path.discard(path.pop())
                        if walked:
                            walked.pop()
                        continue
                    if step.nxt in on_path or not step.matched:
                        continue
                    nxt = step.nxt
                    if nxt in end_set and not (
                        either_way
                        and start in end_set
                        and nxt in start_set
                        and places[nxt] < places[start]
                    ):
                        paths.append(([*path, nxt], [*walked, step.way]))
                        if len(paths) > wanted:
                            stopped = "max_paths" if bound.by_cap else "limit"
                            break
                    deeper = len(path) < length and (where is None or nxt in passing)
                    if deeper:
                        if expansions >= caps.max_expansions:
                            stopped = "max_expansions"
                            break
                        if nxt not in adjacency:
                            adjacency.update(self._hops([nxt], direction, follow, deadline))
                        expansions += 1
                        path.append(nxt)
                        walked.append(step.way)
                        on_path.add(nxt)
                        stack.append(iter(adjacency[nxt]))
        except BudgetSpent as spent:
            stopped = spent.cap
        if stopped and stopped != "limit":
            caps_hit.append(stopped)
        items, cut = self._path_records(paths[:wanted], deadline)
        return Found(items, sorted({*caps_hit, *cut}), expansions, False)

    def _reach(
        self,
        starts: list[str],
        length: int,
        where: ast.Condition | None,
        follow: tuple[str, ...],
        direction: ast.Direction,
        caps: Caps,
        deadline: Deadline,
    ) -> tuple[dict[str, list[_Pair]], set[str]]:
        """The adjacency a depth-first search of paths up to `length` edges may read: of
        the starts, then hop by hop of the nodes it may go through (those passing `where`),
        at most max_expansions nodes; and the nodes found passing `where`."""
        adjacency: dict[str, list[_Pair]] = {}
        passing: set[str] = set()
        frontier = list(starts)
        for hop in range(length):
            frontier = [n for n in frontier if n not in adjacency]
            frontier = frontier[: max(caps.max_expansions - len(adjacency), 0)]
            if not frontier:
                break
            adjacency.update(self._hops(frontier, direction, follow, deadline))
            if hop == length - 1:
                break
            reached = list(
                dict.fromkeys(p.nxt for n in frontier for p in adjacency[n] if p.matched)
            )
            if where is not None:
                ok = self._passing(reached, where, deadline)
                passing |= ok
                reached = [n for n in reached if n in ok]
            frontier = reached
        return adjacency, passing

    def _passing(self, ids: list[str], where: ast.Condition, deadline: Deadline) -> set[str]:
        """The nodes among `ids` meeting `where`: the exact part in the query."""
        cypher, params, rest = split(where, self._node_columns)
        filtered = f" WHERE {cypher}" if cypher else ""
        out: set[str] = set()
        for start in range(0, len(ids), PAGE):
            rows = self.store.query(
                f"{taken(params)}{BY_IDS.format(var='n')}{filtered} RETURN {NODE_RETURN}",
                {**params, "ids": ids[start : start + PAGE]},
                deadline,
            )
            out.update(
                row[0] for row in rows if rest is None or evaluate(rest, self._records.node(row))
            )
        if self.rows is not None:
            out.update(
                i
                for i in ids
                if self._has(i) and evaluate(where, self.rows.nodes.record(self._own(i)))
            )
        return out


class _Steps:
    """The pairs a walk may take from a batch of frontier nodes (as `_hops` gives them), read
    back as the walk takes them, node by node in the batch's order, each node's in `pord`
    order: from one ordered query per way for the batch, or from a hub's own pages (a batch
    of one hub, see HUB_DEGREE). Each neighbour's degrees are noted in `degrees`."""

    def __init__(
        self,
        adapter: LadybugAdapter,
        nodes: list[str],
        direction: ast.Direction,
        follow: tuple[str, ...],
        deadline: Deadline,
        degrees: dict[str, tuple[int, int]],
        rows: int,
    ) -> None:
        self.adapter = adapter
        self.follow = follow
        self.degrees = degrees
        self.ways = _ways(adapter.directed, direction)
        self.nodes = set(nodes)
        base = [n for n in nodes if not adapter._has(n)]
        self.place = {n: j for j, n in enumerate(base)}
        self.matched, params = adapter._follow_test(follow)
        self.rows: dict[str, Iterator[list[Any]]] = {}
        self.next: dict[str, list[Any] | None] = {}
        shape = {"taken": taken(params), "degrees": adapter._degrees("b")}
        hub = len(base) == 1 and adapter._degree(degrees, base[0], self.ways) > HUB_DEGREE
        for way in self.ways if base else []:
            shape["pattern"] = HOP_PATTERN[way]
            if hub:
                self.rows[way] = _HubPages(
                    adapter.store,
                    HUB_CUT_QUERY.format(**shape),
                    HUB_HOP_QUERY.format(**shape, matched=self.matched),
                    {**params, "i": base[0]},
                    deadline,
                    max(rows, 1),
                )
            else:
                frontier = [{"i": n, "j": j} for j, n in enumerate(base)]
                self.rows[way] = adapter.store.rows(
                    WALK_HOP_QUERY.format(**shape, matched=self.matched),
                    {**params, "frontier": frontier},
                    deadline,
                )
            self.next[way] = next(self.rows[way], None)

    def __contains__(self, node: str) -> bool:
        return node in self.nodes

    def pairs(self, node: str) -> Iterator[_Pair]:
        """The node's pairs, each way in turn: the store's, then the overlay's."""
        adapter, follow = self.adapter, self.follow
        for way in self.ways:
            side = {"out": "succ", "in": "pred", "undirected": "adj"}[way]
            replaced = adapter._replaced[side].get(node, {})
            for nxt, hit in self._store_pairs(node, way):
                extra = replaced.get(nxt, [])
                hit = hit or (bool(follow) and adapter._matches(extra, follow))
                yield _Pair(nxt, way, hit or not follow, True, extra)
            for nxt, relations in adapter._added[side].get(node, {}).items():
                hit = not follow or adapter._matches(relations, follow)
                yield _Pair(nxt, way, hit, False, relations)

    def _store_pairs(self, node: str, way: str) -> Iterator[tuple[str, bool]]:
        """The node's neighbours one way in the store, in `pord` order, each with whether
        any relation of the pair names what the walk follows (a pair's relations share
        their `pord`, so they are read together). Rows are (a.id, b.id, `pord`, b's degrees
        out and in, the follow test's columns)."""
        place = self.place.get(node)
        if place is None or way not in self.rows:
            return
        rows, row = self.rows[way], self.next[way]
        while row is not None and self.place[row[0]] < place:
            row = next(rows, None)
        pair: list[Any] | None = None  # [neighbour, pord, hit]
        while row is not None and row[0] == node:
            if row[1] is not None:  # else the node has no relation this way
                self.degrees[row[1]] = (row[3], row[4])
                if self.matched == REL_RETURN:  # tested here: see _follow_test
                    hit = self.adapter._matches(
                        [self.adapter._records.relation(row[5:])], self.follow
                    )
                else:
                    hit = bool(row[5])
                if pair is not None and pair[1] == row[2]:
                    pair[2] = pair[2] or hit
                else:
                    if pair is not None:
                        self.next[way] = row
                        yield pair[0], pair[2]
                    pair = [row[1], row[2], hit]
            row = next(rows, None)
        self.next[way] = row
        if pair is not None:
            yield pair[0], pair[2]


def _first_hub_rows(still: int) -> int:
    """The relations a hub's first page reads when the walk takes `still` more nodes: twice
    that, so a page is seldom not enough (some neighbours are reached already) and a page
    past what is taken costs few ids read for nothing."""
    return 2 * still


def _ways(directed: bool, direction: ast.Direction) -> list[str]:
    """The hop patterns (HOP_PATTERN) a walk in `direction` takes, in networkx's order."""
    if not directed:
        return ["undirected"]
    return [w for w in ("out", "in") if direction in (w, "both")]


class _HubPages(Iterator[list[Any]]):
    """The rows of one hub's hop query one way, read page after page as one stream (see
    HUB_DEGREE): each page's queries run only when the walk reads past the last."""

    def __init__(
        self,
        store: LadybugStore,
        cut_query: str,
        rows_query: str,
        params: dict[str, Any],
        deadline: Deadline,
        rows: int,
    ) -> None:
        self.store = store
        self.cut_query = cut_query
        self.rows_query = rows_query
        self.params = params
        self.deadline = deadline
        self.wanted = rows
        self.after = -1  # below every `pord`
        self.done = False
        self.page: Iterator[list[Any]] = iter(())

    def __next__(self) -> list[Any]:
        while True:
            row = next(self.page, None)
            if row is not None:
                return row
            if self.done:
                raise StopIteration
            self._turn()

    def _turn(self) -> None:
        """Read the next page: up to the `wanted`-th next relation, all if fewer are left."""
        params = {**self.params, "after": self.after}
        [[cut, count]] = self.store.query(
            self.cut_query, {**params, "rows": self.wanted}, self.deadline
        )
        self.done = count < self.wanted
        if count:
            self.page = self.store.rows(self.rows_query, {**params, "cut": cut}, self.deadline)
            self.after = cut
        self.wanted *= 2


@dataclass(frozen=True)
class _Reading:
    """How FIND reads one kind of item: the MATCH, its parts (a range condition and the
    order key `k` of each), the order after the key, the identity columns returned when the
    database answers the whole condition and the whole rows returned when it does not, the
    order of merged identity rows (and of whole rows), the range sizes (first, largest) of
    each way (None: one query over all places), and how the chosen identities' records are
    read."""

    match: str
    parts: list[tuple[str, str]]
    then: str
    ident: str
    returned: str
    order: Callable[[list[Any]], Any]
    ranges: tuple[int, int] | None
    tested_ranges: tuple[int, int]
    read: Callable[[LadybugAdapter, list[list[Any]], Deadline | None], list[dict[str, Any]]]
    # the order of merged whole rows (default: as the identity rows)
    tested_order: Callable[[list[Any]], Any] | None = None


NODE_READING = _Reading(
    "MATCH (n:Node)", NODE_PARTS, "", "n.id", NODE_RETURN, lambda row: row[-1],
    None, (1 << 12, 1 << 14), LadybugAdapter._nodes_in_order,
)  # fmt: skip
EDGE_READING = {
    directed: _Reading(
        "MATCH (a:Node)-[r:Rel]->(b:Node)",
        EDGE_PARTS[directed],
        EDGE_ORDER,
        "a.id, r.rord, r.pord",
        REL_RETURN,
        lambda row: (row[-1], row[-2], row[-3]),
        (1 << 10, 1 << 14),
        (1 << 8, 1 << 11),
        LadybugAdapter._relations_in_order,
        lambda row: (row[-1], row[3], row[2]),
    )
    for directed in (True, False)
}
