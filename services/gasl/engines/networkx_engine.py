"""A networkx graph as the reads the in-memory searches walk, and its adapter.

The graph is in the shared attribute model (services/gasl/loaders.py): nodes carry `id`,
edges `source`/`target` and their relations (the first inline, the others under PARALLEL).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import networkx as nx
from postel.services.gasl.budget import Deadline
from postel.services.gasl.engines.adjacency_search import AdjacencySearches
from postel.services.gasl.engines.overlay_view import OverlaidAdapter
from postel.services.gasl.engines.table import SCAN_CHUNK, Table
from postel.services.gasl.loaders import load_graphml, relations_of
from postel.services.gasl.overlay import Overlay


class NetworkXReads:
    """What the searches read of one networkx graph: its nodes as a table (each node's
    attributes, given its `id`), their ordinals in graph order, the relation rows (built on
    first use) and the adjacency of each side."""

    def __init__(self, graph: nx.Graph, use_indexes: bool) -> None:
        self.graph = graph
        self.use_indexes = use_indexes
        self.directed: bool = graph.is_directed()
        self._sides: dict[str, Any] = (
            {"succ": graph.succ, "pred": graph.pred} if self.directed else {"adj": graph.adj}
        )
        node_ids: list[str] = list(graph.nodes)
        node_attrs = [graph.nodes[n] for n in node_ids]
        for node_id, attrs in zip(node_ids, node_attrs, strict=True):
            attrs.setdefault("id", node_id)
        self.ordinal: Mapping[str, int] = {n: i for i, n in enumerate(node_ids)}
        self.nodes: Table = Table(node_attrs, use_indexes)
        self._edge_table: Table | None = None

    def edges(self, deadline: Deadline | None = None) -> Table:
        """One row per relation of every edge, built on first use (in chunks, against the
        deadline: a build cut short is dropped)."""
        if self._edge_table is None:
            deadline = deadline or Deadline.never()
            records = []
            edges = iter(self.graph.edges(data=True))
            while chunk := list(itertools.islice(edges, SCAN_CHUNK)):
                deadline.check()
                for u, v, attrs in chunk:
                    for relation in relations_of(attrs):  # one row per relation
                        relation.setdefault("source", u)
                        relation.setdefault("target", v)
                        records.append(relation)
            self._edge_table = Table(records, self.use_indexes)
        return self._edge_table

    def edge(self, u: str, v: str) -> dict[str, Any]:
        attrs: dict[str, Any] = self.graph.edges[u, v]
        return attrs

    def has_edge(self, u: str, v: str) -> bool:
        return bool(self.graph.has_edge(u, v))

    def adjacent(self, node: str, side: str) -> Iterable[tuple[str, dict[str, Any]]]:
        """The neighbours of `node` on one side (`adj` of an undirected graph, `succ` or
        `pred` of a directed one), each with its edge's attributes."""
        items: Iterable[tuple[str, dict[str, Any]]] = self._sides[side][node].items()
        return items


class NetworkXAdapter(AdjacencySearches):
    """GraphAdapter over a networkx graph whose nodes carry `id` and edges `source`/`target`.

    Build it with `from_graphml` for files, or `from_graph` for a graph already in the
    shared attribute model. Indexes are built lazily per attribute, `entity_type` at load.
    (The process holding it decides what the garbage collector does with it:
    infra/runtime/memory.py.) Searches only read the graph (the lazy index and edge table are filled
    idempotently), so jobs in several threads may share one adapter.
    """

    reads: NetworkXReads

    def __init__(self, graph: nx.Graph, use_indexes: bool = True) -> None:
        self.graph = graph
        super().__init__(NetworkXReads(graph, use_indexes))
        if use_indexes:
            self.build_index("entity_type")

    @classmethod
    def from_graphml(cls, path: str | Path) -> NetworkXAdapter:
        return cls(load_graphml(path))

    @classmethod
    def from_graph(cls, graph: nx.Graph, use_indexes: bool = True) -> NetworkXAdapter:
        return cls(graph, use_indexes)

    def overlaid(self, overlay: Overlay) -> OverlaidAdapter:
        """A view of this graph with a job's overlay: nothing is copied, and this adapter
        stays as it is."""
        return OverlaidAdapter(self, overlay)

    def build_index(self, name: str) -> None:
        """Build the equality index of a node attribute now rather than on first use."""
        self.reads.nodes.index(name)
