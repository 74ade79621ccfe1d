"""The graph behind FIND and NEIGHBORS: a small protocol and its NetworkX implementation.

Every search is bounded by the caps and the deadline it is handed. When a cap or the time
budget stops a search early the result says which one (`caps_hit`), and the executor reports
the step as `partial`: a big question gets a truncated answer quickly, never a hang.

The adapter holds no per-job settings: one adapter is cached per process and shared by every
job (and thread) that reads the same graph, so caps travel with each call.
"""

from __future__ import annotations

import bisect
import gc
import itertools
from collections import ChainMap, deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Protocol

import networkx as nx
from postel.services.gasl import ast
from postel.services.gasl.budget import Deadline
from postel.services.gasl.conditions import MISSING, evaluate
from postel.services.gasl.errors import BudgetSpent, InvalidCap, UnknownCap
from postel.services.gasl.loaders import PARALLEL, load_graphml, relations_of
from postel.services.gasl.overlay import Overlay

# How far a plan may raise each cap with SET: the searches stay within the time budgets'
# reach on a graph of some hundred thousand nodes, and the results within a message's size.
HARD_MAXIMA: dict[str, int] = {
    "max_results": 10_000,
    "max_path_length": 6,
    "max_paths": 10_000,
    "max_expansions": 2_000_000,
    "max_depth": 6,
}


@dataclass(frozen=True)
class Caps:
    """Limits on what one command may return or explore.

    Caps belong to one job's executor, never to the (shared, cached) adapter: the adapter's
    searches are handed the caps of the command that asks. A plan changes them with
    `SET adapter.caps.<key>=<n>` (`with_value`): lowered freely, raised at most to
    HARD_MAXIMA. Code that builds an executor may pass any caps (benchmarks do)."""

    max_results: int = 1000
    max_path_length: int = 3
    max_paths: int = 1000
    max_expansions: int = 200_000
    max_depth: int = 3

    def __post_init__(self) -> None:
        for name, value in self.as_dict().items():
            _check_value(name, value)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Caps:
        """Caps from their dict form (a state document, a replay artifact)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise UnknownCap(f"unknown cap {unknown[0]!r}; caps are {', '.join(sorted(names))}")
        return cls(**values)

    def with_value(self, key: str, value: Any) -> Caps:
        """A copy with one cap changed: any lower value, a higher one up to its hard maximum."""
        names = [f.name for f in fields(self)]
        if key not in names:
            raise UnknownCap(f"unknown cap {key!r}; caps are {', '.join(names)}")
        _check_value(key, value)
        return replace(self, **{key: min(value, HARD_MAXIMA[key])})

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _check_value(key: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidCap(f"cap {key} needs a positive integer, got {value!r}")


DEFAULT_CAPS = Caps()
# Records a scan tests between two reads of the clock.
_SCAN_CHUNK = 4096


@dataclass
class Found:
    """Items found by one search, and what limited it."""

    items: list[dict[str, Any]]
    caps_hit: list[str] = field(default_factory=list)
    examined: int = 0
    used_index: bool = False


class GraphAdapter(Protocol):
    """What the executor needs from a graph backend. Ids are strings."""

    def find_nodes(
        self,
        where: ast.Condition | None,
        limit: int | None,
        *,
        caps: Caps = DEFAULT_CAPS,
        deadline: Deadline | None = None,
    ) -> Found: ...

    def find_edges(
        self,
        where: ast.Condition | None,
        limit: int | None,
        *,
        caps: Caps = DEFAULT_CAPS,
        deadline: Deadline | None = None,
    ) -> Found: ...

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
    ) -> Found: ...

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
    ) -> Found: ...

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
    ) -> Found: ...

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
    ) -> Found: ...

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
    ) -> Found: ...

    def get_node(self, node_id: str) -> dict[str, Any] | None: ...

    def attribute_names(self) -> set[str]: ...

    def overlaid(self, overlay: Overlay) -> OverlayView:
        """This graph with a job's overlay added; this adapter stays as it is."""
        ...


class OverlayView(GraphAdapter, Protocol):
    """A graph read with a job's overlay, following the overlay as it grows."""

    def catch_up(self) -> None:
        """Take in what the overlay gained since the view was built or last caught up."""
        ...


@dataclass
class _Selection:
    ordinals: list[int]
    caps_hit: list[str]
    examined: int
    used_index: bool


class _Table:
    """Attribute dicts in a fixed order, with equality indexes built on first use.

    An index maps a value to the ordinals of the records holding it; list values are
    indexed per element, matching the any-element semantics of conditions. An attribute
    holding an unhashable value somewhere gets no index (those searches scan). An index
    build cut short by a deadline is dropped, never kept half-built.

    A scan tests each record with the WHERE compiled once into a test of its ordinal
    (`matcher`): equality reads the attribute's column, and CONTAINS, STARTS_WITH and
    ENDS_WITH read a lower-cased copy of it, each built on first use and kept (a build cut
    short by the deadline is dropped too). Records added later (`extend`, an overlay's)
    update what was built, so nothing is built twice.
    """

    def __init__(self, records: list[dict[str, Any]], use_indexes: bool) -> None:
        self.records = records
        self.use_indexes = use_indexes
        self._indexes: dict[str, dict[Hashable, list[int]] | None] = {}
        self._columns: dict[str, list[Any]] = {}
        self._folded: dict[str, list[Any]] = {}

    def __len__(self) -> int:
        return len(self.records)

    def record(self, ordinal: int) -> dict[str, Any]:
        return self.records[ordinal]

    def first(self, count: int) -> list[dict[str, Any]]:
        return self.records[:count]

    def extend(self, records: list[dict[str, Any]]) -> None:
        """Add records at the end, updating the columns and indexes built so far."""
        start = len(self.records)
        self.records.extend(records)
        for name, column in self._columns.items():
            column.extend(attrs.get(name, MISSING) for attrs in records)
        for name, folded in self._folded.items():
            folded.extend(_fold(attrs.get(name, MISSING)) for attrs in records)
        for name, index in self._indexes.items():
            if index is not None and not _index_into(index, name, records, start):
                self._indexes[name] = None

    def column(self, name: str, deadline: Deadline | None = None) -> list[Any]:
        """Each record's value of `name` (MISSING where it has none), by ordinal."""
        if name not in self._columns:
            self._columns[name] = _chunked(
                self.records, lambda attrs: attrs.get(name, MISSING), deadline
            )
        return self._columns[name]

    def folded(self, name: str, deadline: Deadline | None = None) -> list[Any]:
        """The column lower-cased for text matches: a str, a tuple of the strs of a list
        value, or None where no text can match."""
        if name not in self._folded:
            self._folded[name] = _chunked(self.column(name, deadline), _fold, deadline)
        return self._folded[name]

    def matcher(
        self, where: ast.Condition, deadline: Deadline | None = None
    ) -> Callable[[int], bool]:
        """`where` as a test of a record's ordinal, with the same meaning as `evaluate`."""
        match where:
            case ast.Compare(ast.Field(path), "=", ast.Value(value)) | ast.Compare(
                ast.Value(value), "=", ast.Field(path)
            ) if len(path) == 1 and not isinstance(value, list):
                column = self.column(path[0], deadline)
                return lambda o: (x := column[o]) == value or (type(x) is list and value in x)
            case ast.Compare(ast.Field(path), "!=", ast.Value(value)) | ast.Compare(
                ast.Value(value), "!=", ast.Field(path)
            ) if len(path) == 1 and not isinstance(value, list):
                # `!=` is true exactly where `=` is false (a missing field, every element of a
                # list differing): compiled too, so an AND chain of exclusions scans columns
                # as an OR chain of equalities does, not through the interpreter
                equal = self.matcher(ast.Compare(ast.Field(path), "=", ast.Value(value)))
                return lambda o: not equal(o)
            case ast.TextMatch(ast.Field(path), op, ast.Value(str() as text)) if len(path) == 1:
                return _text_matcher(self.folded(path[0], deadline), op, text.casefold())
            case ast.And(items):
                tests = [self.matcher(item, deadline) for item in items]
                return lambda o: all(test(o) for test in tests)
            case ast.Or(items):
                tests = [self.matcher(item, deadline) for item in items]
                return lambda o: any(test(o) for test in tests)
            case ast.Not(inner):
                test = self.matcher(inner, deadline)
                return lambda o: not test(o)
        records = self.records
        return lambda o: evaluate(where, records[o])

    def index(
        self, name: str, deadline: Deadline | None = None
    ) -> dict[Hashable, list[int]] | None:
        if name not in self._indexes:
            self._indexes[name] = self._build(name, deadline or Deadline.never())
        return self._indexes[name]

    def _build(self, name: str, deadline: Deadline) -> dict[Hashable, list[int]] | None:
        index: dict[Hashable, list[int]] = {}
        for start in range(0, len(self.records), _SCAN_CHUNK):
            deadline.check()
            if not _index_into(index, name, self.records[start : start + _SCAN_CHUNK], start):
                return None
        return index

    def candidates(self, where: ast.Condition, deadline: Deadline) -> list[int] | None:
        """Ordinals that may match, from indexes; None when the condition needs a scan."""
        found = self._plan(where, deadline)
        return None if found is None else sorted(found)

    def _plan(self, where: ast.Condition, deadline: Deadline) -> set[int] | None:
        match where:
            case ast.Compare(ast.Field(path), "=", ast.Value(value)) if len(path) == 1:
                return self._lookup(path[0], [value], deadline)
            case ast.Compare(ast.Value(value), "=", ast.Field(path)) if len(path) == 1:
                return self._lookup(path[0], [value], deadline)
            case ast.In(ast.Field(path), ast.Value(options), False) if len(path) == 1 and (
                isinstance(options, list)
            ):
                return self._lookup(path[0], options, deadline)
            case ast.And(items):
                parts = [p for p in (self._plan(i, deadline) for i in items) if p is not None]
                if not parts:
                    return None
                smallest = min(parts, key=len)
                return smallest.intersection(*[p for p in parts if p is not smallest])
            case ast.Or(items):
                planned = [self._plan(i, deadline) for i in items]
                if any(p is None for p in planned):
                    return None
                return set().union(*[p for p in planned if p is not None])
        return None

    def _lookup(self, name: str, values: Iterable[Any], deadline: Deadline) -> set[int] | None:
        # indexes hold no None (an attribute set to null is not indexed): those scan
        if not all(
            isinstance(v, Hashable) and not isinstance(v, tuple) and v is not None for v in values
        ):
            return None
        index = self.index(name, deadline)
        if index is None:
            return None
        out: set[int] = set()
        for v in values:
            deadline.tick()
            out.update(index.get(v, ()))
        return out

    def select(
        self, where: ast.Condition | None, limit: int | None, cap: int, deadline: Deadline
    ) -> _Selection:
        """Records matching `where`, at most `limit` and `cap` of them, found by the deadline."""
        return _select([self], where, limit, cap, deadline)


class _Layers:
    """The records of `base` followed by those of `top`, read without copying either: a
    job's overlay records after the shared graph's. Ordinals run on from base into top, so
    results come in the order a graph holding both would give."""

    def __init__(self, base: _Table, top: _Table) -> None:
        self.base = base
        self.top = top

    def __len__(self) -> int:
        return len(self.base) + len(self.top)

    def record(self, ordinal: int) -> dict[str, Any]:
        cut = len(self.base)
        return self.base.record(ordinal) if ordinal < cut else self.top.record(ordinal - cut)

    def first(self, count: int) -> list[dict[str, Any]]:
        return [*self.base.first(count), *self.top.first(max(0, count - len(self.base)))]

    def matcher(
        self, where: ast.Condition, deadline: Deadline | None = None
    ) -> Callable[[int], bool]:
        cut = len(self.base)
        below, above = self.base.matcher(where, deadline), self.top.matcher(where, deadline)
        return lambda o: below(o) if o < cut else above(o - cut)

    def index(self, name: str, deadline: Deadline | None = None) -> None:
        self.base.index(name, deadline)
        self.top.index(name, deadline)

    def select(
        self, where: ast.Condition | None, limit: int | None, cap: int, deadline: Deadline
    ) -> _Selection:
        return _select([self.base, self.top], where, limit, cap, deadline)


def _select(
    layers: list[_Table],
    where: ast.Condition | None,
    limit: int | None,
    cap: int,
    deadline: Deadline,
) -> _Selection:
    """Records of the layers, in order, matching `where`: at most `limit` and `cap` of
    them, found by the deadline. Each layer answers from its own indexes, or is scanned."""
    bound = _Bound.of(limit, cap, "max_results")
    wanted = bound.count
    hits: list[int] = []
    examined = done = 0
    indexed = where is not None
    try:
        offset = 0
        for table in layers:
            planned = None
            if where is not None and table.use_indexes:
                planned = table.candidates(where, deadline)
            indexed = indexed and planned is not None
            pool: Sequence[int] = range(len(table)) if planned is None else planned
            test = None if where is None else _test_of(table, where, planned, deadline)
            # in chunks: the deadline is read once per chunk, not per record
            for start in range(0, len(pool), _SCAN_CHUNK):
                deadline.check()
                chunk = pool[start : start + _SCAN_CHUNK]
                found = chunk if test is None else [o for o in chunk if test(o)]
                hits.extend(o + offset for o in found)
                if len(hits) > wanted:
                    # examined up to the first hit past those wanted (pools are ascending)
                    del hits[wanted + 1 :]
                    examined = done + start + bisect.bisect_left(chunk, hits[-1] - offset) + 1
                    return _Selection(hits[:wanted], bound.cut(), examined, indexed)
                examined = done + start + len(chunk)
            done += len(pool)
            offset += len(table)
    except BudgetSpent as spent:
        return _Selection(hits[:wanted], [spent.cap], examined, indexed)
    return _Selection(hits, [], examined, indexed)


def _test_of(
    table: _Table, where: ast.Condition, planned: list[int] | None, deadline: Deadline
) -> Callable[[int], bool]:
    """The test of each record of a pool: compiled over columns for a scan; for the few
    records an index chose, `evaluate` on each (building a column of the whole table would
    cost more than the lookup)."""
    if planned is None:
        return table.matcher(where, deadline)
    records = table.records
    return lambda o: evaluate(where, records[o])


def _index_into(
    index: dict[Hashable, list[int]], name: str, records: list[dict[str, Any]], start: int
) -> bool:
    """Add records (the first has ordinal `start`) to an index of `name`; False when one
    holds a value no index can hold."""
    for ordinal, attrs in enumerate(records, start):
        value = attrs.get(name)
        if value is None:
            continue
        values = value if isinstance(value, list) else (value,)
        for v in values:
            if not isinstance(v, Hashable) or isinstance(v, tuple):
                return False
            bucket = index.setdefault(v, [])
            if not bucket or bucket[-1] != ordinal:
                bucket.append(ordinal)
    return True


def _chunked(
    items: Sequence[Any], each: Callable[[Any], Any], deadline: Deadline | None
) -> list[Any]:
    """`each` of every item, the deadline read between chunks: a column of a large graph
    is built within the command's budget or not at all."""
    deadline = deadline or Deadline.never()
    out: list[Any] = []
    for start in range(0, len(items), _SCAN_CHUNK):
        deadline.check()
        out.extend(map(each, items[start : start + _SCAN_CHUNK]))
    return out


def _fold(value: Any) -> Any:
    if isinstance(value, str):
        return value.casefold()
    if isinstance(value, list):
        return tuple(_flat_texts(value))
    return None


def _flat_texts(values: list[Any]) -> Iterator[str]:
    for value in values:
        if isinstance(value, str):
            yield value.casefold()
        elif isinstance(value, list):
            yield from _flat_texts(value)


def _text_matcher(column: list[Any], op: str, needle: str) -> Callable[[int], bool]:
    """A text match on a folded column: a str, or any str of a list value."""
    if op == "CONTAINS":
        return lambda o: (
            (s := column[o]) is not None
            and (needle in s if type(s) is str else any(needle in e for e in s))
        )
    if op == "STARTS_WITH":
        return lambda o: (
            (s := column[o]) is not None
            and (s.startswith(needle) if type(s) is str else any(e.startswith(needle) for e in s))
        )
    return lambda o: (
        (s := column[o]) is not None
        and (s.endswith(needle) if type(s) is str else any(e.endswith(needle) for e in s))
    )


def _edge_matches(attrs: dict[str, Any], via: str) -> bool:
    """Does any relation of the edge name `via` in its keywords or description?"""
    needle = via.casefold()
    return any(
        needle in str(text).casefold()
        for relation in relations_of(attrs)
        for text in (*relation.get("keywords", []), *relation.get("description", []))
    )


class NetworkXAdapter:
    """GraphAdapter over a networkx graph whose nodes carry `id` and edges `source`/`target`.

    Build it with `from_graphml` for files, or `from_graph` for a graph already in the
    shared attribute model. Indexes are built lazily per attribute, `entity_type` at load.
    Building one freezes what the process holds out of the garbage collector's reach (see
    `__init__`). Searches only read the graph (the lazy index and edge table are filled
    idempotently), so jobs in several threads may share one adapter.
    """

    def __init__(self, graph: nx.Graph, use_indexes: bool = True) -> None:
        self.graph = graph
        self.use_indexes = use_indexes
        self._directed = graph.is_directed()
        self._sides: dict[str, Any] = (
            {"succ": graph.succ, "pred": graph.pred} if self._directed else {"adj": graph.adj}
        )
        node_ids: list[str] = list(graph.nodes)
        node_attrs = [graph.nodes[n] for n in node_ids]
        for node_id, attrs in zip(node_ids, node_attrs, strict=True):
            attrs.setdefault("id", node_id)
        self._ordinal: Mapping[str, int] = {n: i for i, n in enumerate(node_ids)}
        self._nodes: _Table | _Layers = _Table(node_attrs, use_indexes)
        self._edge_table: _Table | None = None
        if use_indexes:
            self.build_index("entity_type")
        # A graph is held for the life of the process and changes no more. Left in the
        # collector's generations, every full collection (which some command's allocations
        # set off at a moment no budget controls) would walk all of its objects: seconds on
        # a graph of 10^6 nodes. Frozen, collections walk only what commands allocate.
        gc.freeze()

    @classmethod
    def from_graphml(cls, path: str | Path) -> NetworkXAdapter:
        return cls(load_graphml(path))

    @classmethod
    def from_graph(cls, graph: nx.Graph, use_indexes: bool = True) -> NetworkXAdapter:
        return cls(graph, use_indexes)

    def _edges(self, deadline: Deadline | None = None) -> _Table | _Layers:
        """One row per relation of every edge, built on first use (in chunks, against the
        deadline: a build cut short is dropped)."""
        if self._edge_table is None:
            deadline = deadline or Deadline.never()
            records = []
            edges = iter(self.graph.edges(data=True))
            while chunk := list(itertools.islice(edges, _SCAN_CHUNK)):
                deadline.check()
                for u, v, attrs in chunk:
                    for relation in relations_of(attrs):  # one row per relation
                        relation.setdefault("source", u)
                        relation.setdefault("target", v)
                        records.append(relation)
            self._edge_table = _Table(records, self.use_indexes)
        return self._edge_table

    def overlaid(self, overlay: Overlay) -> OverlaidAdapter:
        """A view of this graph with a job's overlay: nothing is copied, and this adapter
        stays as it is."""
        return OverlaidAdapter(self, overlay)

    def build_index(self, name: str) -> None:
        """Build the equality index of a node attribute now rather than on first use."""
        self._nodes.index(name)

    def attribute_names(self) -> set[str]:
        names: set[str] = set()
        for attrs in self._nodes.first(1000):
            names.update(attrs)
        return names

    def get_node(self, node_id: str) -> dict[str, Any] | None:
        if node_id not in self._ordinal:
            return None
        return dict(self._node(node_id))

    def _node(self, node_id: str) -> dict[str, Any]:
        return self._nodes.record(self._ordinal[node_id])

    def _edge(self, u: str, v: str) -> dict[str, Any]:
        attrs: dict[str, Any] = self.graph.edges[u, v]
        return attrs

    def _has_edge(self, u: str, v: str) -> bool:
        return bool(self.graph.has_edge(u, v))

    def _adjacent(self, node: str, side: str) -> Iterable[tuple[str, dict[str, Any]]]:
        """The neighbours of `node` on one side (`adj` of an undirected graph, `succ` or
        `pred` of a directed one), each with its edge's attributes."""
        items: Iterable[tuple[str, dict[str, Any]]] = self._sides[side][node].items()
        return items

    def find_nodes(
        self,
        where: ast.Condition | None,
        limit: int | None,
        *,
        caps: Caps = DEFAULT_CAPS,
        deadline: Deadline | None = None,
    ) -> Found:
        chosen = self._nodes.select(where, limit, caps.max_results, deadline or Deadline.never())
        items = [dict(self._nodes.record(i)) for i in chosen.ordinals]
        return Found(items, chosen.caps_hit, chosen.examined, chosen.used_index)

    def find_edges(
        self,
        where: ast.Condition | None,
        limit: int | None,
        *,
        caps: Caps = DEFAULT_CAPS,
        deadline: Deadline | None = None,
    ) -> Found:
        deadline = deadline or Deadline.never()
        try:
            table = self._edges(deadline)
        except BudgetSpent as spent:
            return Found([], [spent.cap], 0, False)
        chosen = table.select(where, limit, caps.max_results, deadline)
        items = [dict(table.record(i)) for i in chosen.ordinals]
        return Found(items, chosen.caps_hit, chosen.examined, chosen.used_index)

    def _steps(self, node: str, direction: ast.Direction) -> Iterator[tuple[str, Any, str]]:
        """The edges a walk may take from `node`, each with the way it is walked: on a
        directed graph `out` (along the edge) and/or `in` (against it); an undirected
        graph's edges are `undirected`, taken whatever the direction asked."""
        if not self._directed:
            for nxt, attrs in self._adjacent(node, "adj"):
                yield nxt, attrs, "undirected"
            return
        if direction != "in":
            for nxt, attrs in self._adjacent(node, "succ"):
                yield nxt, attrs, "out"
        if direction != "out":
            for nxt, attrs in self._adjacent(node, "pred"):
                yield nxt, attrs, "in"

    def _path_record(self, nodes: list[str], walked: list[str]) -> dict[str, Any]:
        edges = [
            {**(self._edge(b, a) if way == "in" else self._edge(a, b)), "walked": way}
            for (a, b), way in zip(itertools.pairwise(nodes), walked, strict=True)
        ]
        return {
            "start": nodes[0],
            "end": nodes[-1],
            "nodes": list(nodes),
            "length": len(nodes) - 1,
            "edges": edges,
            "source_ids": _sources_of(edges),
        }

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
        deadline = deadline or Deadline.never()
        length, caps_hit = _held(
            max_length, caps.max_path_length, caps.max_path_length, "max_path_length"
        )
        bound = _Bound.of(limit, caps.max_paths, "max_paths")
        wanted = bound.count
        start_ids = [s for s in dict.fromkeys(starts) if s in self._ordinal]
        end_set = {e for e in ends if e in self._ordinal}
        start_set = set(start_ids)
        # walked both ways, a path between two nodes of both sets is found from either end
        either_way = direction == "both" or not self._directed
        paths: list[tuple[list[str], list[str]]] = []
        expansions = 0
        stopped = ""
        try:
            passes = None if where is None else self._nodes.matcher(where, deadline)
            for start in start_ids:
                if stopped:
                    break
                path, walked = [start], []
                on_path = {start}
                stack = [self._steps(start, direction)]
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
                    nxt, attrs, way = step
                    if nxt in on_path or (via is not None and not _edge_matches(attrs, via)):
                        continue
                    # A path between two nodes of both sets, walked either way, is reported
                    # once, from the endpoint that comes first in graph order.
                    if nxt in end_set and not (
                        either_way
                        and start in end_set
                        and nxt in start_set
                        and self._ordinal[nxt] < self._ordinal[start]
                    ):
                        paths.append(([*path, nxt], [*walked, way]))
                        if len(paths) > wanted:
                            stopped = "max_paths" if bound.by_cap else "limit"
                            break
                    deeper = len(path) < length and (passes is None or passes(self._ordinal[nxt]))
                    if deeper:
                        if expansions >= caps.max_expansions:
                            stopped = "max_expansions"
                            break
                        expansions += 1
                        path.append(nxt)
                        walked.append(way)
                        on_path.add(nxt)
                        stack.append(self._steps(nxt, direction))
        except BudgetSpent as spent:
            stopped = spent.cap
        if stopped and stopped != "limit":
            caps_hit.append(stopped)
        items, cut = _made(lambda found: self._path_record(*found), paths[:wanted], deadline)
        return Found(items, sorted({*caps_hit, *cut}), expansions, False)

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
        rows = walk.rows(self._node, deadline, paths=False)
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
        """Nodes reached along edges naming any of `follow` (every edge when empty), within
        `depth` hops (default 2), each with the path that reached it first (`_path`, the
        ways its edges were walked in `_walked`)."""
        walk = self._breadth_first(starts, follow, depth, 2, limit, caps, deadline, direction)
        rows = walk.rows(self._node, deadline, paths=True)
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
        """One item: the start nodes and those within `depth` hops (default 1), at most
        `limit` nodes in all, and every edge among them (only those naming `via`, if given)."""
        deadline = deadline or Deadline.never()
        seeds = [s for s in dict.fromkeys(starts) if s in self._ordinal]
        bound = _Bound.of(limit, caps.max_results, "max_results")
        room = None if limit is None else max(limit - len(seeds), 0)
        walk = self._breadth_first(
            seeds, () if via is None else (via,), depth, 1, room, caps, deadline, direction
        )
        caps_hit = list(walk.caps_hit)
        members = [*seeds, *walk.order]
        if len(members) > bound.count:
            members = members[: bound.count]
            caps_hit = sorted({*caps_hit, *bound.cut()})
        inside = set(members)
        edges: list[dict[str, Any]] = []
        try:
            for u in members:
                for v, attrs, way in self._steps(u, "out"):
                    deadline.tick()
                    if v not in inside or (
                        way == "undirected" and self._ordinal[v] < self._ordinal[u]
                    ):
                        continue
                    if via is None or _edge_matches(attrs, via):
                        edges.extend({**r, "source": u, "target": v} for r in relations_of(attrs))
        except BudgetSpent as spent:
            caps_hit = sorted({*caps_hit, spent.cap})
        if len(edges) > caps.max_results:
            del edges[caps.max_results :]
            caps_hit = sorted({*caps_hit, "max_results"})
        nodes = [dict(self._node(n)) for n in members]
        item = {
            "nodes": nodes,
            "edges": edges,
            "node_count": len(nodes),
            "edge_count": len(edges),
            "source_ids": _sources_of(edges),
        }
        return Found([item] if nodes else [], caps_hit, walk.expansions, False)

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
        """A shortest path (at most `max_length` edges) from each left node to each right
        node it reaches, shortest first; a pair walked either way is reported once."""
        deadline = deadline or Deadline.never()
        length, caps_hit = _held(
            max_length, caps.max_path_length, caps.max_path_length, "max_path_length"
        )
        bound = _Bound.of(limit, caps.max_paths, "max_paths")
        targets = {r for r in rights if r in self._ordinal}
        either_way = direction == "both" or not self._directed
        follow = () if via is None else (via,)
        pairs: dict[tuple[str, str] | frozenset[str], tuple[list[str], list[str]]] = {}
        expansions = 0
        for left in dict.fromkeys(lefts):
            if left not in self._ordinal:
                continue
            # the walks of all left nodes share one expansion budget; MAX_LENGTH is their depth
            room = replace(
                caps,
                max_expansions=max(caps.max_expansions - expansions, 1),
                max_depth=max(length, 1),
            )
            walk = self._breadth_first([left], follow, length, 1, None, room, deadline, direction)
            expansions += walk.expansions
            for right in walk.order:
                key = frozenset((left, right)) if either_way else (left, right)
                if right in targets and key not in pairs:
                    pairs[key] = walk.path_to(right)
            caps_hit = sorted({*caps_hit, *walk.caps_hit})
            if set(walk.caps_hit) - {"max_results"}:
                break  # out of expansions or time: no further walk would get far
        ranked = sorted(pairs.values(), key=lambda found: len(found[0]))
        if len(ranked) > bound.count:
            caps_hit = sorted({*caps_hit, *bound.cut()})
        made = ranked[: bound.count]
        items, cut = _made(lambda found: self._path_record(*found), made, deadline)
        return Found(items, sorted({*caps_hit, *cut}), expansions, False)

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
    ) -> _Walk:
        """Nodes reached from `starts` (not counting them) within the depth, first reached
        first, along edges that name one of `follow` (any edge when empty)."""
        deadline = deadline or Deadline.never()
        max_depth, caps_hit = _held(depth, default_depth, caps.max_depth, "max_depth")
        bound = _Bound.of(limit, caps.max_results, "max_results")
        wanted = bound.count
        seeds = [s for s in dict.fromkeys(starts) if s in self._ordinal]
        walk = _Walk({s: (0, s, None, "") for s in seeds})
        queue = deque((s, 0) for s in seeds)
        full = False
        try:
            while queue and not full:
                deadline.tick()
                node, level = queue.popleft()
                if level >= max_depth:
                    continue
                if walk.expansions >= caps.max_expansions:
                    caps_hit.append("max_expansions")
                    break
                walk.expansions += 1
                origin = walk.reached[node][1]
                for nxt, attrs, way in self._steps(node, direction):
                    deadline.tick()
                    if nxt in walk.reached or (
                        follow and not any(_edge_matches(attrs, f) for f in follow)
                    ):
                        continue
                    walk.reached[nxt] = (level + 1, origin, node, way)
                    queue.append((nxt, level + 1))
                    walk.order.append(nxt)
                    if len(walk.order) > wanted:
                        full = True
                        caps_hit.extend(bound.cut())
                        break
        except BudgetSpent as spent:
            caps_hit.append(spent.cap)
        del walk.order[wanted:]
        walk.caps_hit = caps_hit
        return walk


class OverlaidAdapter(NetworkXAdapter):
    """A shared graph and one job's overlay, read together without copying either.

    The base adapter (its graph, tables and indexes, shared by every job of the process)
    is never changed. The overlay's nodes and relations are small tables of their own,
    read after the graph's; an overlay edge between two nodes already linked becomes one
    more relation of that edge (as a graph's own parallel relations are), in a copy of
    that one edge's attributes kept here. `catch_up` takes in what the overlay gained
    since, updating the overlay's tables and indexes: a write costs what it adds,
    whatever the size of the graph."""

    def __init__(self, base: NetworkXAdapter, overlay: Overlay) -> None:
        if not isinstance(base._nodes, _Table):
            raise TypeError("an overlay view is built on a graph's own adapter")
        self.base = base
        self.overlay = overlay
        self.use_indexes = base.use_indexes
        self._directed = base._directed
        self._top_nodes = _Table([], base.use_indexes)
        self._top_edges = _Table([], base.use_indexes)
        self._nodes = _Layers(base._nodes, self._top_nodes)
        self._top_ordinal: dict[str, int] = {}
        self._ordinal = ChainMap(base._ordinal, self._top_ordinal)  # type: ignore[arg-type]
        sides = ("succ", "pred") if self._directed else ("adj",)
        # per side, node -> neighbour -> attributes: the graph's edges the overlay added
        # relations to (`_replaced`), and the edges only the overlay has (`_added`)
        self._replaced: dict[str, dict[str, dict[str, dict[str, Any]]]] = {s: {} for s in sides}
        self._added: dict[str, dict[str, dict[str, dict[str, Any]]]] = {s: {} for s in sides}
        self._seen = (0, 0)
        self.catch_up()

    def catch_up(self) -> None:
        """Take in the nodes and edges the overlay gained since the last call."""
        if self._seen == self.overlay.size:
            return
        seen_nodes, seen_edges = self._seen
        self._seen = self.overlay.size
        fresh: list[dict[str, Any]] = []
        for node in self.overlay.nodes[seen_nodes:]:
            node_id = str(node["id"])
            # CREATE_* never makes an id the graph has; an overlay kept from another
            # version of the graph yields to the graph's own node
            if node_id in self._ordinal:
                continue
            self._top_ordinal[node_id] = len(self._nodes) + len(fresh)
            fresh.append(dict(node))
        self._top_nodes.extend(fresh)
        relations = [self._link(edge) for edge in self.overlay.edges[seen_edges:]]
        self._top_edges.extend([r for r in relations if r is not None])

    def _link(self, edge: dict[str, Any]) -> dict[str, Any] | None:
        """Add one overlay edge to the view; its relation row, or None when an end is
        missing (CREATE_EDGES links existing nodes only)."""
        u, v = str(edge["source"]), str(edge["target"])
        if u not in self._ordinal or v not in self._ordinal:
            return None
        relation = dict(edge)
        known = self._pair(u, v)
        if known is not None:
            known[PARALLEL] = [*known.get(PARALLEL, []), relation]
        elif self.base._has_edge(u, v):
            attrs = self.base._edge(u, v)
            merged = {**attrs, PARALLEL: [*attrs.get(PARALLEL, []), relation]}
            self._register(self._replaced, u, v, merged)
        else:
            self._register(self._added, u, v, dict(edge))
        return relation

    def _register(
        self, table: dict[str, dict[str, dict[str, dict[str, Any]]]], u: str, v: str, attrs: Any
    ) -> None:
        if self._directed:
            table["succ"].setdefault(u, {})[v] = attrs
            table["pred"].setdefault(v, {})[u] = attrs
        else:
            table["adj"].setdefault(u, {})[v] = attrs
            table["adj"].setdefault(v, {})[u] = attrs

    def _pair(self, u: str, v: str) -> dict[str, Any] | None:
        """The attributes of edge u-v where the overlay touched it, else None."""
        side = "succ" if self._directed else "adj"
        for table in (self._replaced, self._added):
            found = table[side].get(u, {}).get(v)
            if found is not None:
                return found
        return None

    def overlaid(self, overlay: Overlay) -> OverlaidAdapter:
        """This view with a further overlay: both overlays on the same graph."""
        both = Overlay([*self.overlay.nodes, *overlay.nodes], [*self.overlay.edges, *overlay.edges])
        return OverlaidAdapter(self.base, both)

    def _edges(self, deadline: Deadline | None = None) -> _Table | _Layers:
        base = self.base._edges(deadline)
        assert isinstance(base, _Table)  # a graph's own adapter has one table
        return _Layers(base, self._top_edges)

    def _edge(self, u: str, v: str) -> dict[str, Any]:
        found = self._pair(u, v)
        return self.base._edge(u, v) if found is None else found

    def _has_edge(self, u: str, v: str) -> bool:
        return self._pair(u, v) is not None or self.base._has_edge(u, v)

    def _adjacent(self, node: str, side: str) -> Iterable[tuple[str, dict[str, Any]]]:
        base = self.base._adjacent(node, side) if node in self.base._ordinal else ()
        replaced = self._replaced[side].get(node)
        added = self._added[side].get(node)
        if replaced is None and added is None:
            return base
        return _joined(base, replaced or {}, added or {})


def _joined(
    base: Iterable[tuple[str, dict[str, Any]]],
    replaced: dict[str, dict[str, Any]],
    added: dict[str, dict[str, Any]],
) -> Iterator[tuple[str, dict[str, Any]]]:
    """A node's neighbours in the graph (with the overlay's relations where it added
    some), then those only the overlay links it to: the order a merged graph gives."""
    for nxt, attrs in base:
        yield nxt, replaced.get(nxt, attrs)
    yield from added.items()


@dataclass
class _Walk:
    """A breadth-first walk: per node reached its (depth, start, previous node, way walked)."""

    reached: dict[str, tuple[int, str, str | None, str]]
    order: list[str] = field(default_factory=list)
    caps_hit: list[str] = field(default_factory=list)
    expansions: int = 0

    def rows(
        self,
        node_attrs: Callable[[str], dict[str, Any]],
        deadline: Deadline | None,
        *,
        paths: bool,
    ) -> list[dict[str, Any]]:
        """Each node reached, first reached first: its attributes with `_depth`, `_from` (the
        start it was reached from) and `_walked` (the way its last edge was walked); with
        `paths`, `_path` (the nodes from the start) and `_walked` for each of its edges."""

        def row(node: str) -> dict[str, Any]:
            depth, origin, _, way = self.reached[node]
            made = {**node_attrs(node), "_depth": depth, "_from": origin, "_walked": way}
            if paths:
                made["_path"], made["_walked"] = self.path_to(node)
            return made

        rows, cut = _made(row, self.order, deadline)
        self.caps_hit.extend(c for c in cut if c not in self.caps_hit)
        return rows

    def path_to(self, node: str) -> tuple[list[str], list[str]]:
        """The nodes from the walk's start to `node`, and the way each edge was walked."""
        nodes, ways = [node], []
        _, _, previous, way = self.reached[node]
        while previous is not None:
            nodes.append(previous)
            ways.append(way)
            _, _, previous, way = self.reached[previous]
        return nodes[::-1], ways[::-1]


@dataclass(frozen=True)
class _Bound:
    """How many results a command may return: its LIMIT held to a cap. A result cut to that
    count was cut by the cap (named in caps_hit) unless the LIMIT asked for no more."""

    count: int
    cap: str
    by_cap: bool

    @classmethod
    def of(cls, limit: int | None, cap: int, name: str) -> _Bound:
        return cls(cap if limit is None else min(limit, cap), name, limit is None or limit > cap)

    def cut(self) -> list[str]:
        """The caps hit by cutting a result to `count`."""
        return [self.cap] if self.by_cap else []


def _made(
    make: Callable[[Any], dict[str, Any]], found: list[Any], deadline: Deadline | None
) -> tuple[list[dict[str, Any]], list[str]]:
    """The result rows of what a search found, made against the deadline: the rows made
    when it passed, and the budget's name (else no name)."""
    deadline = deadline or Deadline.never()
    rows: list[dict[str, Any]] = []
    try:
        for item in found:
            deadline.tick()
            rows.append(make(item))
    except BudgetSpent as spent:
        return rows, [spent.cap]
    return rows, []


def _held(requested: int | None, default: int, cap: int, name: str) -> tuple[int, list[str]]:
    """A depth or path length as requested (else `default`) but at most `cap`, and the cap's
    name in a list when it held the request back."""
    value = default if requested is None else requested
    return (cap, [name]) if value > cap else (value, [])


def _sources_of(edges: list[dict[str, Any]]) -> list[str]:
    sources: dict[str, None] = {}
    for edge in edges:
        for sid in edge.get("source_ids", []):
            sources.setdefault(sid, None)
    return list(sources)
