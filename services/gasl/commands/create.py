"""The commands that add to the job's overlay (services/gasl/overlay.py): CREATE_NODES,
CREATE_EDGES and CREATE_GROUPS. Later commands see the graph with what they made; the
registered graph never changes."""

from __future__ import annotations

from typing import Any

from postel.services.gasl import ast, combine
from postel.services.gasl.commands.table import Handlers
from postel.services.gasl.outcome import CommandOutcome, cut_short
from postel.services.gasl.overlay import GROUP_TYPE, MEMBER_OF, edge_of, node_of
from postel.services.gasl.scope import Scope, node_ids


def _add_nodes(scope: Scope, nodes: list[dict[str, Any]], rows: int) -> CommandOutcome:
    """Add the nodes whose ids are new; `rows` is how many rows were asked to give one."""
    created: dict[str, dict[str, Any]] = {}
    existing: list[str] = []
    for node in nodes:
        if node["id"] in created or scope.has_node(node["id"]):
            existing.append(node["id"])
        else:
            created[node["id"]] = node
    scope.overlay.nodes.extend(created.values())
    detail: dict[str, Any] = {"created": len(created), "without_id": rows - len(nodes)}
    if existing:
        detail["existing"] = len(existing)
        detail["hint"] = f"ids already in the graph are not created again: {existing[:5]}"
    return CommandOutcome(list(created.values()), detail=detail)


def create_nodes(scope: Scope, command: ast.CreateNodes) -> CommandOutcome:
    rows = scope.taken(command.source)
    nodes = [node_of(row, command.id_field.path, command.entity_type) for row in rows]
    made = _add_nodes(scope, [n for n in nodes if n is not None], len(nodes))
    return cut_short(made, [rows])


def create_edges(scope: Scope, command: ast.CreateEdges) -> CommandOutcome:
    created: list[dict[str, Any]] = []
    missing: list[str] = []
    skipped = 0
    rows = scope.taken(command.source)
    for row in rows:
        ends = [combine.keys_of(row, f.path) for f in (command.source_field, command.target_field)]
        if not all(len(e) == 1 for e in ends):
            missing.append(str(combine.row_of(row).get("id", "?")))
            skipped += 1
            continue
        u, v = (str(e[0]) for e in ends)
        absent = [n for n in (u, v) if not scope.has_node(n)]
        if absent:
            missing.extend(absent)
            skipped += 1
            continue
        created.append(edge_of(u, v, command.relation, row))
    scope.overlay.edges.extend(created)
    detail: dict[str, Any] = {"created": len(created)}
    if missing:
        detail["skipped"] = skipped
        detail["hint"] = (
            "an edge needs one existing node id at each end "
            f"(SOURCE {command.source_field.name}, TARGET {command.target_field.name}); "
            f"not found: {sorted(set(missing))[:5]}"
        )
    return rows.outcome(created, detail=detail)


def create_groups(scope: Scope, command: ast.CreateGroups) -> CommandOutcome:
    by = command.by
    members: dict[Any, dict[str, None]] = {}
    rows = scope.taken(command.source)
    for row in rows:
        for key in combine.keys_of(row, by.path):
            members.setdefault(key, {}).update(dict.fromkeys(node_ids(row)))
    groups = [
        {
            "id": f"group:{by.name}={key}",
            "entity_type": GROUP_TYPE,
            "key": key,
            "members": list(ids),
            "size": len(ids),
        }
        for key, ids in members.items()
    ]
    nodes = [n for g in groups if (n := node_of(g, ("id",), GROUP_TYPE)) is not None]
    outcome = _add_nodes(scope, nodes, len(groups))
    links = [
        edge_of(member, group["id"], MEMBER_OF, None)
        for group in outcome.value
        for member in group["members"]
        if scope.has_node(member)
    ]
    scope.overlay.edges.extend(links)
    return cut_short(outcome, [rows])


HANDLERS: Handlers = {
    ast.CreateNodes: create_nodes,
    ast.CreateEdges: create_edges,
    ast.CreateGroups: create_groups,
}
