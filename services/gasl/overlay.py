"""The job-local overlay: nodes, edges and groups a plan creates (CREATE_NODES, CREATE_EDGES,
CREATE_GROUPS). The registered graph is shared by every job and never changes; a job's later
commands see the graph and its overlay together. The overlay is kept in the job's state
document (like its caps), so it lasts for the job's later plans and rounds, and a round
started from an earlier round's state (a pivot) has that round's overlay, no later one.

The overlay is never merged into a copy of the graph: commands read the graph through a
view (`OverlaidAdapter`, services/gasl/engines/overlay_view.py) that answers from the shared
graph and the overlay's own small tables, so a write costs what it adds, not the size of the
graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from postel.services.gasl.combine import row_of
from postel.services.gasl.conditions import MISSING, lookup

OVERLAY = "overlay"  # the attribute that marks an overlay item
GROUP_TYPE = "GROUP"
MEMBER_OF = "member_of"


@dataclass
class Overlay:
    """What one job added to its view of the graph."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Overlay:
        return cls(list(doc.get("nodes", [])), list(doc.get("edges", [])))

    def as_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "edges": self.edges}

    @property
    def size(self) -> tuple[int, int]:
        return len(self.nodes), len(self.edges)


def node_of(row: Any, id_field: tuple[str, ...], entity_type: str | None) -> dict[str, Any] | None:
    """The overlay node a row describes; None when it names no id."""
    row = row_of(row)
    node_id = lookup(row, id_field)
    if node_id is MISSING or not isinstance(node_id, str | int) or isinstance(node_id, bool):
        return None
    node = {k: v for k, v in row.items() if not k.startswith("_") and k != "extraction"}
    node["id"] = str(node_id)
    node["entity_type"] = (entity_type or str(row.get("entity_type") or "DERIVED")).upper()
    node["description"] = _texts(row.get("description"))
    node["source_ids"] = _texts(row.get("source_ids"))
    node[OVERLAY] = True
    return node


def edge_of(source: str, target: str, relation: str, row: Any) -> dict[str, Any]:
    extra = row if isinstance(row, dict) else {}
    return {
        "source": source,
        "target": target,
        "weight": 1.0,
        "keywords": [relation],
        "description": _texts(extra.get("description")) or [relation],
        "source_ids": _texts(extra.get("source_ids")),
        OVERLAY: True,
    }


def _texts(value: Any) -> list[str]:
    if value is None or value is MISSING:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]
