"""The schema of a graph in a few numbers and names, for planning prompts.

A planner model writes better GASL when it knows which entity types exist (and how many of
each), which attributes a node or an edge carries, and which relation keywords edges use.
`summarize_graph` reads that off a loaded graph in one pass over its nodes and edges
(tens of milliseconds on the 3,261-node MMWR sample) and caches the answer per adapter
object, so a worker that keeps its adapters pays for it once per graph.

Shape (plain JSON):

    {"nodes": 3261, "edges": 1740, "directed": false,
     "entity_types": {"PERSON": 371, ...},          # every type, most frequent first
     "node_attributes": {"id": "text", "description": "list", ...},
     "edge_attributes": {"weight": "number", "keywords": "list", ...},
     "relation_keywords": {"co-author": 12, ...},   # the most used edge keywords
     "relation_directions": {"starred_actors": "FILM -> PERSON", ...},  # directed graphs
     "example_ids": {"PERSON": ["BRIANA MORELAND", ...], ...}}  # for the commonest types
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterable
from typing import Any
from weakref import WeakKeyDictionary

from postel.services.gasl.engines.caps import Caps
from postel.services.gasl.engines.ladybug_engine import LadybugAdapter
from postel.services.gasl.engines.ladybug_store import value_kind
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.engines.protocol import GraphAdapter
from postel.services.gasl.loaders import PARALLEL, relations_of

MAX_KEYWORDS = 30
# Caps that let a whole small store be read (a summary of fields the columns do not hold).
_ALL = Caps(max_results=2**62)
EXAMPLE_TYPES = 10
EXAMPLES_PER_TYPE = 2

_CACHE: WeakKeyDictionary[GraphAdapter, dict[str, Any]] = WeakKeyDictionary()


def summarize_graph(adapter: GraphAdapter) -> dict[str, Any]:
    """The graph's schema summary (see the module docstring); computed once per adapter,
    the same on either engine (a ladybug store's by a few aggregate queries)."""
    summary = _CACHE.get(adapter)
    if summary is None:
        if isinstance(adapter, LadybugAdapter):
            summary = _summarize_store(adapter)
        elif isinstance(adapter, NetworkXAdapter):
            summary = _summarize(adapter)
        else:
            raise TypeError(f"no schema summary for {type(adapter).__name__}")
        _CACHE[adapter] = summary
    # callers may trim or annotate their copy; the cached one must stay whole
    return copy.deepcopy(summary)


def _summarize(adapter: NetworkXAdapter) -> dict[str, Any]:
    graph = adapter.graph
    types: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    for node_id, attrs in graph.nodes(data=True):
        entity_type = str(attrs.get("entity_type") or "UNKNOWN")
        types[entity_type] += 1
        examples.setdefault(entity_type, [])
        if len(examples[entity_type]) < EXAMPLES_PER_TYPE:
            examples[entity_type].append(str(node_id))
    relations = [r for *_, attrs in graph.edges(data=True) for r in relations_of(attrs)]
    keywords: Counter[str] = Counter()
    ends: dict[str, Counter[str]] = {}
    for relation in relations:
        names = [str(k) for k in relation.get("keywords", []) or []]
        keywords.update(names)
        if graph.is_directed():
            source = graph.nodes[relation["source"]].get("entity_type") or "UNKNOWN"
            target = graph.nodes[relation["target"]].get("entity_type") or "UNKNOWN"
            for name in names:
                ends.setdefault(name, Counter())[f"{source} -> {target}"] += 1
    top = sorted(keywords.items(), key=lambda item: (-item[1], item[0]))[:MAX_KEYWORDS]
    ranked = sorted(types.items(), key=lambda item: (-item[1], item[0]))
    return {
        "nodes": graph.number_of_nodes(),
        "edges": len(relations),
        "directed": graph.is_directed(),
        "entity_types": dict(ranked),
        "node_attributes": _attribute_kinds(attrs for _, attrs in graph.nodes(data=True)),
        "edge_attributes": _attribute_kinds(relations),
        "relation_keywords": dict(top),
        # on a directed graph, the way each relation points (its commonest entity types)
        "relation_directions": {
            name: ends[name].most_common(1)[0][0] for name, _ in top if name in ends
        },
        "example_ids": {name: examples[name] for name, _ in ranked[:EXAMPLE_TYPES]},
    }


def _attribute_kinds(records: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Attribute name -> the kind of its values ("mixed" when they differ), names sorted."""
    kinds: dict[str, str] = {}
    for attrs in records:
        for name, value in attrs.items():
            kind = value_kind(value)
            seen = kinds.setdefault(name, kind)
            if seen != kind:
                kinds[name] = "mixed"
    return dict(sorted(kinds.items()))


def _summarize_store(adapter: LadybugAdapter) -> dict[str, Any]:
    """`_summarize` of a ladybug store: counts by aggregate queries, attribute kinds from
    the store's info; where a field is kept in `extra` (spilled), from every record."""
    info, query = adapter.info, adapter.store.query
    if {"node.entity_type", "edge.keywords"} & set(info.spilled):
        return _summarize(_as_networkx(adapter))
    typed = "coalesce(n.entity_type, 'UNKNOWN')"
    types = {str(t): int(c) for t, c in query(f"MATCH (n:Node) RETURN {typed}, count(*)")}
    ranked = sorted(types.items(), key=lambda item: (-item[1], item[0]))
    examples = {
        name: [
            row[0]
            for row in query(
                f"MATCH (n:Node) WHERE {typed} = $t RETURN n.id ORDER BY n.ord LIMIT $k",
                {"t": name, "k": EXAMPLES_PER_TYPE},
            )
        ]
        for name, _ in ranked[:EXAMPLE_TYPES]
    }
    top = [
        (str(k), int(c))
        for k, c in query(
            "MATCH (:Node)-[r:Rel]->(:Node) UNWIND r.keywords AS k "
            "RETURN k, count(*) AS c ORDER BY c DESC, k LIMIT $n",
            {"n": MAX_KEYWORDS},
        )
    ]
    directions: dict[str, str] = {}
    if info.directed and top:
        # the commonest ends of each keyword, ties to the first relation (Counter's order)
        rows = query(
            "MATCH (a:Node)-[r:Rel]->(b:Node) UNWIND r.keywords AS k WITH k, a, b, r "
            "WHERE k IN $top RETURN k, coalesce(a.entity_type, 'UNKNOWN'), "
            "coalesce(b.entity_type, 'UNKNOWN'), count(*), min(r.rord)",
            {"top": [k for k, _ in top]},
        )
        best: dict[str, tuple[int, int, str]] = {}
        for k, source, target, count, first in rows:
            candidate = (-int(count), int(first), f"{source} -> {target}")
            if k not in best or candidate < best[k]:
                best[k] = candidate
        directions = {k: best[k][2] for k, _ in top if k in best}
    return {
        "nodes": info.nodes,
        "edges": info.relations,
        "directed": info.directed,
        "entity_types": dict(ranked),
        "node_attributes": dict(info.node_attributes),
        "edge_attributes": dict(info.edge_attributes),
        "relation_keywords": dict(top),
        "relation_directions": directions,
        "example_ids": examples,
    }


def _as_networkx(adapter: LadybugAdapter) -> NetworkXAdapter:
    """A store read whole into networkx: only for a summary whose fields the columns do not
    hold (a store whose entity types or keywords were not all text)."""
    import networkx as nx

    graph: nx.Graph = nx.DiGraph() if adapter.info.directed else nx.Graph()
    for item in adapter.find_nodes(None, None, caps=_ALL).items:
        graph.add_node(item["id"], **item)
    for relation in adapter.find_edges(None, None, caps=_ALL).items:
        u, v = relation["source"], relation["target"]
        if graph.has_edge(u, v):
            attrs = graph.edges[u, v]
            attrs.setdefault(PARALLEL, []).append(relation)
        else:
            graph.add_edge(u, v, **relation)
    return NetworkXAdapter(graph, use_indexes=False)
