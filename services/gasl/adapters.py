"""The graph behind FIND and NEIGHBORS: a small protocol and its NetworkX implementation.

Every search is bounded by the caps and the deadline it is handed. When a cap or the time
budget stops a search early the result says which one (`caps_hit`), and the executor reports
the step as `partial`: a big question gets a truncated answer quickly, never a hang.

The adapter holds no per-job settings: one adapter is cached per process and shared by every
job (and thread) that reads the same graph, so caps travel with each call.
"""

from __future__ import annotations

import bisect
import itertools
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Protocol

import networkx as nx
from postel.services.gasl import ast
from postel.services.gasl.budget import Deadline
from postel.services.gasl.conditions import MISSING, evaluate
from postel.services.gasl.errors import BudgetSpent
from postel.services.gasl.loaders import load_graphml, relations_of
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
            raise KeyError(f"unknown cap {unknown[0]!r}; caps are {', '.join(sorted(names))}")
        return cls(**values)

    def with_value(self, key: str, value: Any) -> Caps:
        """A copy with one cap changed: any lower value, a higher one up to its hard maximum."""
        names = [f.name for f in fields(self)]
        if key not in names:
            raise KeyError(f"unknown cap {key!r}; caps are {', '.join(names)}")
        _check_value(key, value)
        return replace(self, **{key: min(value, HARD_MAXIMA[key])})

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _check_value(key: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"cap {key} needs a positive integer, got {value!r}")


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

    def overlaid(self, overlay: Overlay) -> GraphAdapter:
        """This graph with a job's overlay added; this adapter stays as it is."""
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
    ENDS_WITH read a lower-cased copy of it, each built on first use and kept.
    """

    def __init__(self, records: list[dict[str, Any]], use_indexes: bool) -> None:
        self.records = records
        self.use_indexes = use_indexes
        self._indexes: dict[str, dict[Hashable, list[int]] | None] = {}
        self._columns: dict[str, list[Any]] = {}
        self._folded: dict[str, list[Any]] = {}

    def column(self, name: str) -> list[Any]:
        """Each record's value of `name` (MISSING where it has none), by ordinal."""
        if name not in self._columns:
            self._columns[name] = [attrs.get(name, MISSING) for attrs in self.records]
        return self._columns[name]

    def folded(self, name: str) -> list[Any]:
        """The column lower-cased for text matches: a str, a tuple of the strs of a list
        value, or None where no text can match."""
        if name not in self._folded:
            self._folded[name] = [_fold(value) for value in self.column(name)]
        return self._folded[name]

    def matcher(self, where: ast.Condition) -> Callable[[int], bool]:
        """`where` as a test of a record's ordinal, with the same meaning as `evaluate`."""
        match where:
            case ast.Compare(ast.Field(path), "=", ast.Value(value)) | ast.Compare(
                ast.Value(value), "=", ast.Field(path)
            ) if len(path) == 1 and not isinstance(value, list):
                column = self.column(path[0])
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
                return _text_matcher(self.folded(path[0]), op, text.casefold())
            case ast.And(items):
                tests = [self.matcher(item) for item in items]
                return lambda o: all(test(o) for test in tests)
            case ast.Or(items):
                tests = [self.matcher(item) for item in items]
                return lambda o: any(test(o) for test in tests)
            case ast.Not(inner):
                test = self.matcher(inner)
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
        for ordinal, attrs in enumerate(self.records):
            deadline.tick()
            value = attrs.get(name)
            if value is None:
                continue
            values = value if isinstance(value, list) else (value,)
            for v in values:
                if not isinstance(v, Hashable) or isinstance(v, tuple):
                    return None
                bucket = index.setdefault(v, [])
                if not bucket or bucket[-1] != ordinal:
                    bucket.append(ordinal)
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
        bound = _Bound.of(limit, cap, "max_results")
        wanted = bound.count
        hits: list[int] = []
        examined = 0
        planned: list[int] | None = None
        try:
            if where is not None and self.use_indexes:
                planned = self.candidates(where, deadline)
            pool: Sequence[int] = range(len(self.records)) if planned is None else planned
            test = None if where is None else self.matcher(where)
            # in chunks: the deadline is read once per chunk, not per record
            for start in range(0, len(pool), _SCAN_CHUNK):
                deadline.check()
                chunk = pool[start : start + _SCAN_CHUNK]
                hits.extend(chunk if test is None else [o for o in chunk if test(o)])
                examined = start + len(chunk)
                if len(hits) > wanted:
                    # examined up to the first hit past those wanted (pools are ascending)
                    del hits[wanted + 1 :]
                    examined = start + bisect.bisect_left(chunk, hits[-1]) + 1
                    break
        except BudgetSpent as spent:
            return _Selection(hits[:wanted], [spent.cap], examined, planned is not None)
        cut = bound.cut() if len(hits) > wanted else []
        return _Selection(hits[:wanted], cut, examined, planned is not None)


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
    Searches only read the graph (the lazy index and edge table are filled idempotently),
    so jobs in several threads may share one adapter.
    """

    def __init__(self, graph: nx.Graph, use_indexes: bool = True) -> None:
        self.graph = graph
        self._node_ids: list[str] = list(graph.nodes)
        node_attrs = [graph.nodes[n] for n in self._node_ids]
        for node_id, attrs in zip(self._node_ids, node_attrs, strict=True):
            attrs.setdefault("id", node_id)
        self._ordinal = {n: i for i, n in enumerate(self._node_ids)}
        self._nodes = _Table(node_attrs, use_indexes)
        self._edge_table: _Table | None = None
        if use_indexes:
            self.build_index("entity_type")

    @classmethod
    def from_graphml(cls, path: str | Path) -> NetworkXAdapter:
        return cls(load_graphml(path))

    @classmethod
    def from_graph(cls, graph: nx.Graph, use_indexes: bool = True) -> NetworkXAdapter:
        return cls(graph, use_indexes)

    @property
    def _edges(self) -> _Table:
        if self._edge_table is None:
            records = []
            for u, v, attrs in self.graph.edges(data=True):
                for relation in relations_of(attrs):  # one row per relation
                    relation.setdefault("source", u)
                    relation.setdefault("target", v)
                    records.append(relation)
            self._edge_table = _Table(records, self._nodes.use_indexes)
        return self._edge_table

    def overlaid(self, overlay: Overlay) -> NetworkXAdapter:
        """A new adapter over a copy of this graph with the overlay added: building it costs
        a copy of the graph, so the executor builds it once per overlay change."""
        return NetworkXAdapter(overlay.on(self.graph), self._nodes.use_indexes)

    def build_index(self, name: str) -> None:
        """Build the equality index of a node attribute now rather than on first use."""
        self._nodes.index(name)

    def attribute_names(self) -> set[str]:
        names: set[str] = set()
        for attrs in self._nodes.records[:1000]:
            names.update(attrs)
        return names

    def get_node(self, node_id: str) -> dict[str, Any] | None:
        if node_id not in self._ordinal:
            return None
        return dict(self.graph.nodes[node_id])

    def find_nodes(
        self,
        where: ast.Condition | None,
        limit: int | None,
        *,
        caps: Caps = DEFAULT_CAPS,
        deadline: Deadline | None = None,
    ) -> Found:
        chosen = self._nodes.select(where, limit, caps.max_results, deadline or Deadline.never())
        items = [dict(self._nodes.records[i]) for i in chosen.ordinals]
        return Found(items, chosen.caps_hit, chosen.examined, chosen.used_index)

    def find_edges(
        self,
        where: ast.Condition | None,
        limit: int | None,
        *,
        caps: Caps = DEFAULT_CAPS,
        deadline: Deadline | None = None,
    ) -> Found:
        table = self._edges
        chosen = table.select(where, limit, caps.max_results, deadline or Deadline.never())
        items = [dict(table.records[i]) for i in chosen.ordinals]
        return Found(items, chosen.caps_hit, chosen.examined, chosen.used_index)

    def _steps(self, node: str, direction: ast.Direction) -> Iterator[tuple[str, Any, str]]:
        """The edges a walk may take from `node`, each with the way it is walked: on a
        directed graph `out` (along the edge) and/or `in` (against it); an undirected
        graph's edges are `undirected`, taken whatever the direction asked."""
        graph = self.graph
        if not graph.is_directed():
            for nxt, attrs in graph.adj[node].items():
                yield nxt, attrs, "undirected"
            return
        if direction != "in":
            for nxt, attrs in graph.succ[node].items():
                yield nxt, attrs, "out"
        if direction != "out":
            for nxt, attrs in graph.pred[node].items():
                yield nxt, attrs, "in"

    def _path_record(self, nodes: list[str], walked: list[str]) -> dict[str, Any]:
        edges = [
            {**self.graph.edges[(b, a) if way == "in" else (a, b)], "walked": way}
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
        either_way = direction == "both" or not self.graph.is_directed()
        passes = None if where is None else self._nodes.matcher(where)
        paths: list[tuple[list[str], list[str]]] = []
        expansions = 0
        stopped = ""
        try:
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
        items = [self._path_record(p, w) for p, w in paths[:wanted]]
        return Found(items, caps_hit, expansions, False)

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
        return Found(walk.rows(self.graph, paths=False), walk.caps_hit, walk.expansions, False)

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
        return Found(walk.rows(self.graph, paths=True), walk.caps_hit, walk.expansions, False)

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
        nodes = [dict(self.graph.nodes[n]) for n in members]
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
        either_way = direction == "both" or not self.graph.is_directed()
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
        items = [self._path_record(p, w) for p, w in ranked[: bound.count]]
        return Found(items, caps_hit, expansions, False)

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


@dataclass
class _Walk:
    """A breadth-first walk: per node reached its (depth, start, previous node, way walked)."""

    reached: dict[str, tuple[int, str, str | None, str]]
    order: list[str] = field(default_factory=list)
    caps_hit: list[str] = field(default_factory=list)
    expansions: int = 0

    def rows(self, graph: nx.Graph, *, paths: bool) -> list[dict[str, Any]]:
        """Each node reached, first reached first: its attributes with `_depth`, `_from` (the
        start it was reached from) and `_walked` (the way its last edge was walked); with
        `paths`, `_path` (the nodes from the start) and `_walked` for each of its edges."""
        rows = []
        for node in self.order:
            depth, origin, _, way = self.reached[node]
            row = {**graph.nodes[node], "_depth": depth, "_from": origin, "_walked": way}
            if paths:
                row["_path"], row["_walked"] = self.path_to(node)
            rows.append(row)
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
