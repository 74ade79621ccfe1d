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
from pathlib import Path
from typing import Any

import networkx as nx

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


def normalise_graph(raw: nx.Graph) -> nx.Graph:
    """A new simple graph (directed if `raw` is) in the shared attribute model.

    Traversal needs one edge per pair of nodes, but a multigraph may relate a pair several
    times (a film's director who also stars in it): the first relation is the edge's own
    attributes, each further one a dict in the edge's PARALLEL list, so every relation stays
    queryable (FIND edges returns one row per relation; a `via` filter matches any of them)
    and `relation_count` counts them all."""
    graph: nx.Graph = nx.DiGraph() if raw.is_directed() else nx.Graph()
    ids: dict[Any, str] = {}
    for node, attrs in raw.nodes(data=True):
        new_id, normalised = normalise_node(node, attrs)
        ids[node] = new_id
        graph.add_node(new_id, **normalised)
    for u, v, attrs in raw.edges(data=True):
        source, target = ids[u], ids[v]
        relation = normalise_edge(source, target, attrs)
        if graph.has_edge(source, target):
            graph.edges[source, target].setdefault(PARALLEL, []).append(relation)
        else:
            graph.add_edge(source, target, **relation)
    return graph


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
    return normalise_graph(nx.read_graphml(str(path)))
