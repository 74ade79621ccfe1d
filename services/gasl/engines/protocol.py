"""What the executor needs of a graph, whatever engine holds it, and what a search returns.

Ids are strings. Every search is handed the caps of the command that asks and its deadline;
an adapter keeps no per-job settings, so one adapter serves every job reading its graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from postel.services.gasl import ast
from postel.services.gasl.budget import Deadline
from postel.services.gasl.engines.caps import DEFAULT_CAPS, Caps
from postel.services.gasl.overlay import Overlay


@dataclass
class Found:
    """Items found by one search, and what limited it."""

    items: list[dict[str, Any]]
    caps_hit: list[str] = field(default_factory=list)
    examined: int = 0
    used_index: bool = False


class GraphAdapter(Protocol):
    """What the executor needs from a graph backend. Ids are strings."""

    def find_nodes(
        self,
        where: ast.Condition | None,
        limit: int | None,
        *,
        caps: Caps = DEFAULT_CAPS,
        deadline: Deadline | None = None,
    ) -> Found: ...

    def find_edges(
        self,
        where: ast.Condition | None,
        limit: int | None,
        *,
        caps: Caps = DEFAULT_CAPS,
        deadline: Deadline | None = None,
    ) -> Found: ...

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
    ) -> Found: ...

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
    ) -> Found: ...

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
    ) -> Found: ...

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
    ) -> Found: ...

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
    ) -> Found: ...

    def get_node(self, node_id: str) -> dict[str, Any] | None: ...

    def attribute_names(self) -> set[str]: ...

    def overlaid(self, overlay: Overlay) -> OverlayView:
        """This graph with a job's overlay added; this adapter stays as it is."""
        ...


class OverlayView(GraphAdapter, Protocol):
    """A graph read with a job's overlay, following the overlay as it grows."""

    def catch_up(self) -> None:
        """Take in what the overlay gained since the view was built or last caught up."""
        ...
