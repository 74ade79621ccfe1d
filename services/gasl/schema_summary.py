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

from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.loaders import relations_of

MAX_KEYWORDS = 30
EXAMPLE_TYPES = 10
EXAMPLES_PER_TYPE = 2

_CACHE: WeakKeyDictionary[NetworkXAdapter, dict[str, Any]] = WeakKeyDictionary()


def summarize_graph(adapter: NetworkXAdapter) -> dict[str, Any]:
    """The graph's schema summary (see the module docstring); computed once per adapter."""
    summary = _CACHE.get(adapter)
    if summary is None:
        summary = _summarize(adapter)
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


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return "text"


def _attribute_kinds(records: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Attribute name -> the kind of its values ("mixed" when they differ), names sorted."""
    kinds: dict[str, str] = {}
    for attrs in records:
        for name, value in attrs.items():
            kind = _kind(value)
            seen = kinds.setdefault(name, kind)
            if seen != kind:
                kinds[name] = "mixed"
    return dict(sorted(kinds.items()))
