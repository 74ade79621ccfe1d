"""The searches of a graph held in memory, answered by walking its adjacency: FIND nodes and
edges, paths, NEIGHBORS, GRAPHWALK, SUBGRAPH and GRAPHCONNECT.

`AdjacencySearches` reads a graph only through `AdjacencyReads`: its node table and ordinals,
its relation rows, one edge's attributes and a node's neighbours. A networkx graph
(networkx_engine.py) and a shared graph read with a job's overlay (overlay_view.py) each
supply those reads; the searches are written once, over either.

Every search is bounded by the caps and the deadline it is handed. When a cap or the time
budget stops a search early the result says which one (`caps_hit`), and the executor reports
the step as `partial`: a big question gets a truncated answer quickly, never a hang.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from postel.services.gasl import ast
from postel.services.gasl.budget import Deadline
from postel.services.gasl.engines.caps import DEFAULT_CAPS, Bound, Caps, held
from postel.services.gasl.engines.protocol import Found
from postel.services.gasl.engines.table import Layers, Table
from postel.services.gasl.errors import BudgetSpent
from postel.services.gasl.loaders import relations_of


class AdjacencyReads(Protocol):
    """What the searches read of a graph. Node ordinals index `nodes`; `side` is `adj` on an
    undirected graph, `succ` or `pred` on a directed one."""

    directed: bool
    nodes: Table | Layers
    ordinal: Mapping[str, int]

    def edges(self, deadline: Deadline | None = None) -> Table | Layers:
        """One row per relation of every edge."""
        ...

    def edge(self, u: str, v: str) -> dict[str, Any]:
        """The attributes of edge u-v (its other relations under PARALLEL)."""
        ...

    def adjacent(self, node: str, side: str) -> Iterable[tuple[str, dict[str, Any]]]:
        """The neighbours of `node` on one side, each with its edge's attributes."""
        ...


class AdjacencySearches:
    """The GraphAdapter searches over a graph's `reads`. Searches only read (the lazy
    indexes, columns and edge rows are filled idempotently), so jobs in several threads may
    share one instance. Subclasses add how the reads are made, and `overlaid`."""

    def __init__(self, reads: AdjacencyReads) -> None:
        self.reads = reads

    def attribute_names(self) -> set[str]:
        names: set[str] = set()
        for attrs in self.reads.nodes.first(1000):
            names.update(attrs)
        return names

    def get_node(self, node_id: str) -> dict[str, Any] | None:
        if node_id not in self.reads.ordinal:
            return None
        return dict(self._node(node_id))

    def _node(self, node_id: str) -> dict[str, Any]:
        return self.reads.nodes.record(self.reads.ordinal[node_id])

    def find_nodes(
        self,
        where: ast.Condition | None,
        limit: int | None,
        *,
        caps: Caps = DEFAULT_CAPS,
        deadline: Deadline | None = None,
    ) -> Found:
        nodes = self.reads.nodes
        chosen = nodes.select(where, limit, caps.max_results, deadline or Deadline.never())
        items = [dict(nodes.record(i)) for i in chosen.ordinals]
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
            table = self.reads.edges(deadline)
        except BudgetSpent as spent:
            return Found([], [spent.cap], 0, False)
        chosen = table.select(where, limit, caps.max_results, deadline)
        items = [dict(table.record(i)) for i in chosen.ordinals]
        return Found(items, chosen.caps_hit, chosen.examined, chosen.used_index)

    def _steps(self, node: str, direction: ast.Direction) -> Iterator[tuple[str, Any, str]]:
        """The edges a walk may take from `node`, each with the way it is walked: on a
        directed graph `out` (along the edge) and/or `in` (against it); an undirected
        graph's edges are `undirected`, taken whatever the direction asked."""
        if not self.reads.directed:
            for nxt, attrs in self.reads.adjacent(node, "adj"):
                yield nxt, attrs, "undirected"
            return
        if direction != "in":
            for nxt, attrs in self.reads.adjacent(node, "succ"):
                yield nxt, attrs, "out"
        if direction != "out":
            for nxt, attrs in self.reads.adjacent(node, "pred"):
                yield nxt, attrs, "in"

    def _path_record(self, nodes: list[str], walked: list[str]) -> dict[str, Any]:
        edges = [
            {**(self.reads.edge(b, a) if way == "in" else self.reads.edge(a, b)), "walked": way}
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
        length, caps_hit = held(
            max_length, caps.max_path_length, caps.max_path_length, "max_path_length"
        )
        bound = Bound.of(limit, caps.max_paths, "max_paths")
        wanted = bound.count
        ordinal = self.reads.ordinal
        start_ids = [s for s in dict.fromkeys(starts) if s in ordinal]
        end_set = {e for e in ends if e in ordinal}
        start_set = set(start_ids)
        # walked both ways, a path between two nodes of both sets is found from either end
        either_way = direction == "both" or not self.reads.directed
        paths: list[tuple[list[str], list[str]]] = []
        expansions = 0
        stopped = ""
        try:
            passes = None if where is None else self.reads.nodes.matcher(where, deadline)
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
                    if nxt in on_path or (via is not None and not edge_matches(attrs, via)):
                        continue
                    # A path between two nodes of both sets, walked either way, is reported
                    # once, from the endpoint that comes first in graph order.
                    if nxt in end_set and not (
                        either_way
                        and start in end_set
                        and nxt in start_set
                        and ordinal[nxt] < ordinal[start]
                    ):
                        paths.append(([*path, nxt], [*walked, way]))
                        if len(paths) > wanted:
                            stopped = "max_paths" if bound.by_cap else "limit"
                            break
                    deeper = len(path) < length and (passes is None or passes(ordinal[nxt]))
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
        items, cut = made_rows(lambda found: self._path_record(*found), paths[:wanted], deadline)
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
        ordinal = self.reads.ordinal
        seeds = [s for s in dict.fromkeys(starts) if s in ordinal]
        bound = Bound.of(limit, caps.max_results, "max_results")
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
                    if v not in inside or (way == "undirected" and ordinal[v] < ordinal[u]):
                        continue
                    if via is None or edge_matches(attrs, via):
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
            "source_ids": sources_of(edges),
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
        length, caps_hit = held(
            max_length, caps.max_path_length, caps.max_path_length, "max_path_length"
        )
        bound = Bound.of(limit, caps.max_paths, "max_paths")
        targets = {r for r in rights if r in self.reads.ordinal}
        either_way = direction == "both" or not self.reads.directed
        follow = () if via is None else (via,)
        pairs: dict[tuple[str, str] | frozenset[str], tuple[list[str], list[str]]] = {}
        expansions = 0
        for left in dict.fromkeys(lefts):
            if left not in self.reads.ordinal:
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
        items, cut = made_rows(lambda found: self._path_record(*found), made, deadline)
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
    ) -> Walk:
        """Nodes reached from `starts` (not counting them) within the depth, first reached
        first, along edges that name one of `follow` (any edge when empty)."""
        deadline = deadline or Deadline.never()
        max_depth, caps_hit = held(depth, default_depth, caps.max_depth, "max_depth")
        bound = Bound.of(limit, caps.max_results, "max_results")
        wanted = bound.count
        seeds = [s for s in dict.fromkeys(starts) if s in self.reads.ordinal]
        walk = Walk({s: (0, s, None, "") for s in seeds})
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
                        follow and not any(edge_matches(attrs, f) for f in follow)
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


def edge_matches(attrs: dict[str, Any], via: str) -> bool:
    """Does any relation of the edge name `via` in its keywords or description?"""
    needle = via.casefold()
    return any(
        needle in str(text).casefold()
        for relation in relations_of(attrs)
        for text in (*relation.get("keywords", []), *relation.get("description", []))
    )


@dataclass
class Walk:
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

        rows, cut = made_rows(row, self.order, deadline)
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


def made_rows(
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


def sources_of(edges: list[dict[str, Any]]) -> list[str]:
    sources: dict[str, None] = {}
    for edge in edges:
        for sid in edge.get("source_ids", []):
            sources.setdefault(sid, None)
    return list(sources)
