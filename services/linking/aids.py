"""A graph version's name index and schema card together (`GraphAids`), built in one pass over
its nodes and then its relations, and their stored form: two compressed fields kept beside the
graph's version."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from postel.services.linking.card import SchemaCardBuilder
from postel.services.linking.names import NameIndex, NameIndexBuilder

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


def build_aids(
    nodes: Iterable[tuple[str, dict[str, Any]]],
    relations: Iterable[tuple[str, str, list[str]]],
    directed: bool,
) -> GraphAids:
    """`nodes` as (id, attributes); `relations` as (source, target, relation names), read
    after the nodes."""
    names = NameIndexBuilder()
    card = SchemaCardBuilder(directed)
    for node_id, attrs in nodes:
        names.add(node_id, attrs)
        card.add_node(node_id, attrs)
    for source, target, relation_names in relations:
        card.add_relation(source, target, relation_names)
    return GraphAids(names.build(), card.build())
