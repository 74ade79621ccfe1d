"""A graph version's name index and schema card together (`GraphAids`), built in one pass over
its nodes and then its relations (`AidsBuilder`, fed as a graph streams by), and their stored
form: two compressed fields kept beside the graph's version."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from postel.services.gasl.loaders import relations_of
from postel.services.linking.card import SchemaCardBuilder
from postel.services.linking.names import NameIndex, NameIndexBuilder

if TYPE_CHECKING:
    import networkx as nx

NAME_INDEX_FIELD = "name_index"
SCHEMA_CARD_FIELD = "schema_card"


@dataclass(frozen=True)
class GraphAids:
    names: NameIndex
    card: dict[str, Any]

    def to_fields(self) -> dict[str, bytes]:
        card = gzip.compress(json.dumps(self.card, ensure_ascii=False).encode())
        return {NAME_INDEX_FIELD: self.names.to_bytes(), SCHEMA_CARD_FIELD: card}

    @classmethod
    def from_fields(cls, names: bytes, card: bytes) -> GraphAids:
        return cls(NameIndex.from_bytes(names), json.loads(gzip.decompress(card)))


class AidsBuilder:
    """Fed every node, then every relation (each relation's ends fed before it)."""

    def __init__(self, directed: bool) -> None:
        self._names = NameIndexBuilder()
        self._card = SchemaCardBuilder(directed)

    def add_node(self, node_id: str, attrs: dict[str, Any]) -> None:
        self._names.add(node_id, attrs)
        self._card.add_node(node_id, attrs)

    def add_relation(self, source: str, target: str, attrs: dict[str, Any]) -> None:
        """One relation in the shared attribute model: its `keywords` are its names."""
        self._card.add_relation(source, target, [str(k) for k in attrs.get("keywords") or []])

    def build(self) -> GraphAids:
        return GraphAids(self._names.build(), self._card.build())


def build_aids(
    nodes: Iterable[tuple[str, dict[str, Any]]],
    relations: Iterable[tuple[str, str, list[str]]],
    directed: bool,
) -> GraphAids:
    """`nodes` as (id, attributes); `relations` as (source, target, relation names), read
    after the nodes."""
    builder = AidsBuilder(directed)
    for node_id, attrs in nodes:
        builder.add_node(node_id, attrs)
    for source, target, names in relations:
        builder.add_relation(source, target, {"keywords": names})
    return builder.build()


def aids_of_graph(graph: nx.Graph) -> GraphAids:
    """The name index and schema card of a graph held whole (one stored without them)."""
    aids = AidsBuilder(graph.is_directed())
    for node_id, attrs in graph.nodes(data=True):
        aids.add_node(node_id, attrs)
    for source, target, attrs in graph.edges(data=True):
        for relation in relations_of(attrs):
            aids.add_relation(source, target, relation)
    return aids.build()
