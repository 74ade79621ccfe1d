"""A shared graph and one job's overlay, read together without copying either.

The graph (its adapter's tables and indexes, shared by every job of the process) is never
changed. Two parts:

- `OverlayRows`, which depends on no engine: the overlay's nodes the graph lacks and its
  relations whose two ends exist, as tables read after the graph's own, each taking in
  every write (a write costs what it adds, whatever the size of the graph);
- `OverlaidReads` and `OverlaidAdapter`, the view of a networkx graph's adapter: they hold
  the base adapter and its reads, and answer every read from those and the overlay's rows.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from postel.services.gasl.budget import Deadline
from postel.services.gasl.engines.adjacency_search import AdjacencySearches
from postel.services.gasl.engines.table import Layers, Table
from postel.services.gasl.loaders import PARALLEL
from postel.services.gasl.overlay import Overlay

if TYPE_CHECKING:
    from postel.services.gasl.engines.networkx_engine import NetworkXAdapter, NetworkXReads

# per side, node -> neighbour -> that edge's attributes
_Adjacency = dict[str, dict[str, dict[str, dict[str, Any]]]]


class OverlayRows:
    """What a job's overlay adds to a graph, as rows read after the graph's own.

    Its nodes take the ordinals after the graph's (`graph_ordinal` numbers the graph's nodes
    from 0); `ordinal` maps the ids of both. `take_in` follows the overlay as it grows, and
    the tables' columns and indexes take in each new row rather than being built again."""

    def __init__(
        self, overlay: Overlay, graph_ordinal: Mapping[str, int], use_indexes: bool
    ) -> None:
        self.overlay = overlay
        self.nodes = Table([], use_indexes)
        self.edges = Table([], use_indexes)
        self._graph_size = len(graph_ordinal)
        self._own_ordinal: dict[str, int] = {}
        self.ordinal: Mapping[str, int] = ChainMap(graph_ordinal, self._own_ordinal)  # type: ignore[arg-type]
        self._seen = (0, 0)

    def take_in(self) -> list[dict[str, Any]]:
        """Take in the nodes and edges the overlay gained since the last call; the new
        relation rows, for the engine to link into its adjacency."""
        if self._seen == self.overlay.size:
            return []
        seen_nodes, seen_edges = self._seen
        self._seen = self.overlay.size
        fresh: list[dict[str, Any]] = []
        for node in self.overlay.nodes[seen_nodes:]:
            node_id = str(node["id"])
            # CREATE_* never makes an id the graph has; an overlay kept from another
            # version of the graph yields to the graph's own node
            if node_id in self.ordinal:
                continue
            self._own_ordinal[node_id] = self._graph_size + len(self.nodes) + len(fresh)
            fresh.append(dict(node))
        self.nodes.extend(fresh)
        # CREATE_EDGES links existing nodes only: an edge missing an end is left out
        relations = [
            dict(edge)
            for edge in self.overlay.edges[seen_edges:]
            if str(edge["source"]) in self.ordinal and str(edge["target"]) in self.ordinal
        ]
        self.edges.extend(relations)
        return relations


class OverlaidReads:
    """A networkx graph's reads with a job's overlay. Node and relation rows are the graph's
    then the overlay's (`Layers`). An overlay edge between two nodes already linked becomes
    one more relation of that edge (as a graph's own parallel relations are), in a copy of
    that one edge's attributes kept here; an edge only the overlay has is kept here too."""

    def __init__(self, base: NetworkXReads, overlay: Overlay) -> None:
        self.base = base
        self.rows = OverlayRows(overlay, base.ordinal, base.use_indexes)
        self.directed = base.directed
        self.nodes = Layers(base.nodes, self.rows.nodes)
        self.ordinal = self.rows.ordinal
        sides = ("succ", "pred") if self.directed else ("adj",)
        # the graph's edges the overlay added relations to, and the edges only it has
        self._replaced: _Adjacency = {s: {} for s in sides}
        self._added: _Adjacency = {s: {} for s in sides}
        self.catch_up()

    def catch_up(self) -> None:
        for relation in self.rows.take_in():
            self._link(relation)

    def _link(self, relation: dict[str, Any]) -> None:
        u, v = str(relation["source"]), str(relation["target"])
        known = self._pair(u, v)
        if known is not None:
            known[PARALLEL] = [*known.get(PARALLEL, []), relation]
        elif self.base.has_edge(u, v):
            attrs = self.base.edge(u, v)
            merged = {**attrs, PARALLEL: [*attrs.get(PARALLEL, []), relation]}
            self._register(self._replaced, u, v, merged)
        else:
            self._register(self._added, u, v, dict(relation))

    def _register(self, table: _Adjacency, u: str, v: str, attrs: dict[str, Any]) -> None:
        if self.directed:
            table["succ"].setdefault(u, {})[v] = attrs
            table["pred"].setdefault(v, {})[u] = attrs
        else:
            table["adj"].setdefault(u, {})[v] = attrs
            table["adj"].setdefault(v, {})[u] = attrs

    def _pair(self, u: str, v: str) -> dict[str, Any] | None:
        """The attributes of edge u-v where the overlay touched it, else None."""
        side = "succ" if self.directed else "adj"
        for table in (self._replaced, self._added):
            found = table[side].get(u, {}).get(v)
            if found is not None:
                return found
        return None

    def edges(self, deadline: Deadline | None = None) -> Layers:
        return Layers(self.base.edges(deadline), self.rows.edges)

    def edge(self, u: str, v: str) -> dict[str, Any]:
        found = self._pair(u, v)
        return self.base.edge(u, v) if found is None else found

    def adjacent(self, node: str, side: str) -> Iterable[tuple[str, dict[str, Any]]]:
        base = self.base.adjacent(node, side) if node in self.base.ordinal else ()
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


class OverlaidAdapter(AdjacencySearches):
    """A networkx graph's adapter (`base`) and one job's overlay, read together: the same
    searches as the base's, over `OverlaidReads`. `catch_up` takes in what the overlay
    gained since."""

    reads: OverlaidReads

    def __init__(self, base: NetworkXAdapter, overlay: Overlay) -> None:
        if not isinstance(base.reads.nodes, Table):
            raise TypeError("an overlay view is built on a graph's own adapter")
        self.base = base
        self.overlay = overlay
        super().__init__(OverlaidReads(base.reads, overlay))

    def catch_up(self) -> None:
        """Take in the nodes and edges the overlay gained since the last call."""
        self.reads.catch_up()

    def overlaid(self, overlay: Overlay) -> OverlaidAdapter:
        """This view with a further overlay: both overlays on the same graph."""
        both = Overlay([*self.overlay.nodes, *overlay.nodes], [*self.overlay.edges, *overlay.edges])
        return OverlaidAdapter(self.base, both)
