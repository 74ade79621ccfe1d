"""GraphML from nano-graphrag and LightRAG, normalised to one attribute model.

Both tools write knowledge graphs with the same ideas in different spellings:
nano-graphrag quotes ids and values (`"PERSON"`) and joins several descriptions and chunk
ids with `<SEP>`; LightRAG writes plain ids, lower-case types, an `entity_id` copy of the
id, a `file_path` and comma-separated edge `keywords`. After loading, every graph reads:

node: id (str, unquoted), entity_type (upper case), description (list[str]),
      source_ids (list[str]), file_paths (list[str]), plus any other attribute unquoted
edge: source, target, weight (float), description (list[str]), keywords (list[str]),
      source_ids (list[str]), file_paths (list[str]), plus any other attribute unquoted
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
from postel.services.gasl.graphml import RawGraph, read_graphml_bytes

SEP = "<SEP>"
PARALLEL = "parallel"  # an edge's further relations between the same two nodes
# the MMWR knowledge graph nano-graphrag built, shipped for the demo, the CLI and the tests
DEMO_GRAPH = Path(__file__).parent / "data" / "mmwr_nano_graphrag.graphml"


def unquote(value: str) -> str:
    text = value.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].strip()
    return text


def split_parts(value: Any, extra_separator: str | None = None) -> list[str]:
    """`"a"<SEP>"b"` -> ["a", "b"]: unquoted, without blanks or repeats, in order."""
    if value is None:
        return []
    if (
        type(value) is str
        and SEP not in value
        and not (extra_separator and extra_separator in value)
    ):
        text = unquote(value)  # one part: most values, worth the shortcut on big graphs
        return [text] if text else []
    raw = [str(v) for v in value] if isinstance(value, list) else str(value).split(SEP)
    if extra_separator:
        raw = [piece for part in raw for piece in part.split(extra_separator)]
    seen: dict[str, None] = {}
    for part in raw:
        text = unquote(part)
        if text:
            seen.setdefault(text, None)
    return list(seen)


def _common(attrs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in attrs.items():
        if name == "description":
            out["description"] = split_parts(value)
        elif name in ("source_id", "source_ids"):
            out["source_ids"] = split_parts(value)
        elif name in ("file_path", "file_paths"):
            out["file_paths"] = split_parts(value)
        elif isinstance(value, str):
            out[name] = unquote(value)
        else:
            out[name] = value
    return out


def normalise_node(node_id: Any, attrs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """One node of either format in the shared model; returns (id, attributes)."""
    out = _common({k: v for k, v in attrs.items() if k != "entity_id"})
    new_id = unquote(str(attrs.get("entity_id", node_id)))
    if "entity_type" in out:
        out["entity_type"] = str(out["entity_type"]).upper()
    clusters = out.get("clusters")
    if isinstance(clusters, str):
        try:
            out["clusters"] = json.loads(clusters)
        except ValueError:
            out["clusters"] = clusters
    out.setdefault("description", [])
    out.setdefault("source_ids", [])
    out["id"] = new_id
    return new_id, out


def normalise_edge(source: str, target: str, attrs: dict[str, Any]) -> dict[str, Any]:
    """One edge of either format in the shared model (endpoints already normalised)."""
    out = _common({k: v for k, v in attrs.items() if k != "keywords"})
    out["keywords"] = split_parts(attrs.get("keywords"), extra_separator=",")
    if "weight" in out:
        try:
            out["weight"] = float(out["weight"])
        except (TypeError, ValueError):
            out["weight"] = 1.0
    out.setdefault("description", [])
    out.setdefault("source_ids", [])
    out["source"], out["target"] = source, target
    return out


@dataclass
class GraphTables:
    """A graph in the shared attribute model as the tables it is built from: its nodes and
    its edges in the order they are added (which fixes the order neighbours are visited),
    one edge per pair of nodes, further relations of a pair in the edge's PARALLEL list."""

    directed: bool
    nodes: dict[str, dict[str, Any]]
    edges: list[tuple[str, str, dict[str, Any]]]

    @property
    def relations(self) -> int:
        return sum(1 + len(attrs.get(PARALLEL, ())) for _, _, attrs in self.edges)


def normalise(raw: RawGraph) -> GraphTables:
    """The shared attribute model of a graph as networkx read it.

    Traversal needs one edge per pair of nodes, but a multigraph may relate a pair several
    times (a film's director who also stars in it): the first relation is the edge's own
    attributes, each further one a dict in the edge's PARALLEL list, so every relation stays
    queryable (FIND edges returns one row per relation; a `via` filter matches any of them)
    and `relation_count` counts them all. Two nodes whose ids normalise alike are one node."""
    nodes: dict[str, dict[str, Any]] = {}
    ids: dict[str, str] = {}
    for node, attrs in raw.nodes.items():
        new_id, normalised = normalise_node(node, attrs)
        ids[node] = new_id
        if new_id in nodes:
            nodes[new_id].update(normalised)
        else:
            nodes[new_id] = normalised
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    for u, v, attrs in raw.edges:
        source, target = ids[u], ids[v]
        relation = normalise_edge(source, target, attrs)
        edge = pairs.get((source, target))
        if edge is None and not raw.directed:
            edge = pairs.get((target, source))
        if edge is None:
            pairs[source, target] = relation
        else:
            edge.setdefault(PARALLEL, []).append(relation)
    return GraphTables(raw.directed, nodes, [(u, v, attrs) for (u, v), attrs in pairs.items()])


def build_graph(tables: GraphTables) -> nx.Graph:
    """A new simple graph (directed if the tables are), its edges added in the tables' order."""
    graph: nx.Graph = nx.DiGraph() if tables.directed else nx.Graph()
    graph.add_nodes_from(tables.nodes.items())
    graph.add_edges_from(tables.edges)
    return graph


def normalise_graph(raw: nx.Graph) -> nx.Graph:
    """A new simple graph (directed if `raw` is) in the shared attribute model."""
    return build_graph(normalise(RawGraph.of(raw)))


def relations_of(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    """Every relation an edge stands for: its own attributes, then its parallel ones. An
    edge of one relation is its attributes themselves (no copy: traversals ask per edge)."""
    parallel = attrs.get(PARALLEL)
    if parallel is None:
        return [attrs]
    return [{k: v for k, v in attrs.items() if k != PARALLEL}, *parallel]


def relation_count(graph: nx.Graph) -> int:
    """The graph's relations (edges, parallel ones included): what its file held."""
    return sum(1 + len(attrs.get(PARALLEL, [])) for _, _, attrs in graph.edges(data=True))


def load_graphml(path: str | Path) -> nx.Graph:
    """Read a nano-graphrag or LightRAG GraphML file into the shared attribute model."""
    return build_graph(normalise(read_graphml_bytes(Path(path).read_bytes())))
