"""The commands that search the graph: FIND nodes/edges/paths, NEIGHBORS, GRAPHWALK,
SUBGRAPH and GRAPHCONNECT. Each one's result is capped (Scope.caps) and bounded by the
command's deadline inside the adapter."""

from __future__ import annotations

from postel.services.gasl import ast
from postel.services.gasl.commands.table import Handlers
from postel.services.gasl.outcome import CommandOutcome
from postel.services.gasl.scope import Scope


def find_items(scope: Scope, command: ast.FindItems) -> CommandOutcome:
    where = None if command.where is None else scope.bind(command.where)
    search = scope.graph.find_nodes if command.kind == "nodes" else scope.graph.find_edges
    found = search(where, command.limit, caps=scope.caps, deadline=scope.deadline)
    return scope.found(found, command.where)


def find_paths(scope: Scope, command: ast.FindPaths) -> CommandOutcome:
    starts, start_caps = scope.endpoint(command.start)
    ends, end_caps = scope.endpoint(command.end)
    where = None if command.where is None else scope.bind(command.where)
    found = scope.graph.find_paths(
        starts,
        ends,
        where,
        command.max_length,
        command.limit,
        caps=scope.caps,
        deadline=scope.deadline,
        direction=command.direction,
        via=command.via,
    )
    outcome = scope.found(found)
    outcome.caps_hit = sorted({*start_caps, *end_caps, *found.caps_hit})
    outcome.detail.update({"starts": len(starts), "ends": len(ends)})
    return outcome


def neighbors(scope: Scope, command: ast.Neighbors) -> CommandOutcome:
    starts, caps_hit = scope.endpoint(command.start)
    found = scope.graph.neighbors(
        starts, command.via, command.depth, command.limit, **scope.walking(command.direction)
    )
    return scope.reached(found, caps_hit)


def graph_walk(scope: Scope, command: ast.GraphWalk) -> CommandOutcome:
    starts, caps_hit = scope.endpoint(command.start)
    found = scope.graph.walk(
        starts, command.follow, command.depth, command.limit, **scope.walking(command.direction)
    )
    return scope.reached(found, caps_hit)


def subgraph(scope: Scope, command: ast.Subgraph) -> CommandOutcome:
    starts, caps_hit = scope.endpoint(command.start)
    found = scope.graph.subgraph(
        starts, command.via, command.depth, command.limit, **scope.walking(command.direction)
    )
    outcome = scope.reached(found, caps_hit)
    outcome.count = found.items[0]["node_count"] if found.items else 0
    return outcome


def graph_connect(scope: Scope, command: ast.GraphConnect) -> CommandOutcome:
    lefts, left_caps = scope.endpoint(command.left)
    rights, right_caps = scope.endpoint(command.right)
    found = scope.graph.connect(
        lefts,
        rights,
        command.via,
        command.max_length,
        command.limit,
        **scope.walking(command.direction),
    )
    outcome = scope.reached(found, [*left_caps, *right_caps])
    outcome.detail.update({"lefts": len(lefts), "rights": len(rights)})
    return outcome


HANDLERS: Handlers = {
    ast.FindItems: find_items,
    ast.FindPaths: find_paths,
    ast.Neighbors: neighbors,
    ast.GraphWalk: graph_walk,
    ast.Subgraph: subgraph,
    ast.GraphConnect: graph_connect,
}
