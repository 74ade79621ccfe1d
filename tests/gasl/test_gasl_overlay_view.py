"""The overlay is a view: commands read the shared graph and the job's overlay together
without copying either, and see exactly what they saw when the overlay was merged into a
copy of the graph (the reference below keeps that copy's semantics). The base graph never
changes; the view's indexes take in each write; a pivot brings back the earlier overlay."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import networkx as nx
import pytest
from postel.messages import (
    GaslPlan,
    GaslPlanExecuted,
    GaslPlanRequested,
    Intent,
    JobProgress,
    JobRequest,
    Task,
    TaskPlan,
)
from postel.services.gasl import ast
from postel.services.gasl.budget import TimeBudget
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.engines.protocol import Found, GraphAdapter, OverlayView
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.loaders import PARALLEL, normalise_graph
from postel.services.gasl.overlay import Overlay, edge_of, node_of
from postel.services.gasl.stage import GaslDeps, handle
from postel.services.gasl.state import MemoryStateBackend, StateStore


def materialised(base: nx.Graph, overlay: Overlay) -> nx.Graph:
    """The reference: a copy of `base` with the overlay added, an edge between two nodes
    already linked becoming one more relation of that edge (what the overlay used to do)."""
    graph = base.copy()
    for node in overlay.nodes:
        graph.add_node(node["id"], **node)
    for edge in overlay.edges:
        u, v = edge["source"], edge["target"]
        if graph.has_edge(u, v):
            attrs = graph.edges[u, v]
            attrs[PARALLEL] = [*attrs.get(PARALLEL, []), dict(edge)]
        else:
            graph.add_edge(u, v, **edge)
    return graph


def base_graph(directed: bool) -> nx.Graph:
    """People and films; A-B carries two relations already (a parallel edge)."""
    raw: nx.Graph = nx.MultiDiGraph() if directed else nx.MultiGraph()
    kinds = {"A": "PERSON", "B": "PERSON", "C": "PERSON", "D": "FILM", "E": "FILM", "F": "TAG"}
    for name, kind in kinds.items():
        raw.add_node(
            name, entity_type=kind, description=f"{name} the {kind.lower()}", score=ord(name)
        )
    for u, v, word in [
        ("A", "B", "knows"),
        ("A", "B", "works_with"),
        ("A", "D", "starred_in"),
        ("B", "D", "directed"),
        ("C", "E", "starred_in"),
        ("D", "F", "tagged"),
        ("E", "F", "tagged"),
    ]:
        raw.add_edge(u, v, keywords=word, description=f"{u} {word} {v}", source_id=f"c{u}{v}")
    return normalise_graph(raw)


def an_overlay() -> Overlay:
    """New nodes; an edge joining two linked graph nodes (parallel to A-B's two), one
    against a directed edge's direction, one to a new node, and a new pair twice."""
    nodes = [
        node_of({"id": "G1", "description": "group one"}, ("id",), "GROUP"),
        node_of({"id": "G2", "key": "films"}, ("id",), "GROUP"),
    ]
    edges = [
        edge_of("A", "B", "colleague", {"description": "same lab"}),
        edge_of("D", "A", "features", None),
        edge_of("A", "G1", "member_of", None),
        edge_of("C", "G1", "member_of", None),
        edge_of("D", "G2", "member_of", None),
        edge_of("D", "G2", "listed_in", None),
        edge_of("G1", "G2", "near", None),
    ]
    return Overlay([n for n in nodes if n is not None], edges)


READS = [
    "FIND nodes AS all_nodes",
    'FIND nodes WHERE entity_type = "GROUP" AS groups',
    'FIND nodes WHERE entity_type IN ["PERSON", "GROUP"] LIMIT 4 AS some',
    'FIND nodes WHERE description CONTAINS "group" OR score > 66 AS mixed',
    'FIND nodes WHERE NOT entity_type = "FILM" AS not_films',
    'FIND paths FROM "A" TO "G2" MAX_LENGTH 3 AS paths',
    'FIND paths FROM "C" TO "F" DIRECTION out MAX_LENGTH 4 AS out_paths',
    'NEIGHBORS "A" DEPTH 2 AS around_a',
    'NEIGHBORS "D" DIRECTION in AS into_d',
    'NEIGHBORS "D" DIRECTION out AS out_of_d',
    'NEIGHBORS "G1" VIA "member" AS members',
    'GRAPHWALK FROM "C" DEPTH 3 AS walked',
    'SUBGRAPH FROM "A" DEPTH 2 AS sub',
    'GRAPHCONNECT (id = "A") AND (entity_type = "GROUP") MAX_LENGTH 3 AS joined',
]
EDGE_READS = [
    "FIND edges AS all_edges",
    'FIND edges WHERE keywords CONTAINS "member" AS member_edges',
    'FIND edges WHERE source = "A" AS from_a',
]


async def records(adapter: NetworkXAdapter, overlay: Overlay | None, commands: list[str]) -> list:
    state = StateStore()
    if overlay is not None:
        state.overlay = overlay.as_dict()
    executor = GaslExecutor(adapter, state, max_rows=None)
    plan = GaslPlan(plan_id="p", commands=commands, config={"continue_on_empty": True})
    result = await executor.execute_plan(plan)
    assert len(result.records) == len(commands), result.records
    return result.records


def canonical(rows: list[Any]) -> list[str]:
    return sorted(json.dumps(row, sort_keys=True, default=str) for row in rows)


@pytest.mark.parametrize("directed", [False, True])
async def test_every_read_sees_what_the_materialised_copy_showed(directed: bool) -> None:
    graph, overlay = base_graph(directed), an_overlay()
    # edge rows first: building the edge table writes each edge's ends into its attributes
    commands = [*EDGE_READS, *READS]
    reference = await records(NetworkXAdapter(materialised(graph, overlay)), None, commands)
    viewed = await records(NetworkXAdapter(graph), overlay, commands)
    for ref, seen in zip(reference, viewed, strict=True):
        assert (seen.status, seen.count, seen.caps_hit) == (ref.status, ref.count, ref.caps_hit)
        if seen.command in EDGE_READS:
            # the overlay's relations come after the graph's own, the same rows
            assert canonical(seen.rows) == canonical(ref.rows), seen.command
        else:
            assert seen.rows == ref.rows, seen.command


@pytest.mark.parametrize("directed", [False, True])
def test_the_view_reads_nodes_edges_and_attributes_like_the_copy(directed: bool) -> None:
    graph, overlay = base_graph(directed), an_overlay()
    copy = NetworkXAdapter(materialised(graph, overlay))
    view = NetworkXAdapter(graph).overlaid(overlay)
    for node in copy.graph.nodes:
        assert view.get_node(node) == copy.get_node(node)
        for side in ("succ", "pred") if directed else ("adj",):
            assert list(view.reads.adjacent(node, side)) == list(copy.reads.adjacent(node, side))
    for u, v in copy.graph.edges:
        assert view.reads.edge(u, v) == copy.reads.edge(u, v)
    assert view.get_node("NOPE") is None
    assert view.attribute_names() == copy.attribute_names()
    merged = view.reads.edge("A", "B")
    assert [r["keywords"] for r in [merged, *merged[PARALLEL]]] == [
        ["knows"],
        ["works_with"],
        ["colleague"],
    ]


# Each method of GraphAdapter as a command calls it; the edge rows first (building them
# writes each edge's ends into its attributes, which the path records then show).
CALLS: dict[str, Callable[[GraphAdapter], Any]] = {
    "find_edges": lambda g: g.find_edges(None, None),
    "find_nodes": lambda g: g.find_nodes(
        ast.Compare(ast.Field(("entity_type",)), "!=", ast.Value("FILM")), None
    ),
    "find_paths": lambda g: g.find_paths(["A"], ["G2"], None, 3, None),
    "neighbors": lambda g: g.neighbors(["D"], None, 2, None, direction="in"),
    "walk": lambda g: g.walk(["C"], ("member",), 3, None),
    "subgraph": lambda g: g.subgraph(["A"], None, 2, None),
    "connect": lambda g: g.connect(["A"], ["G1", "G2"], None, 3, None),
    "get_node": lambda g: g.get_node("G1"),
    "attribute_names": lambda g: g.attribute_names(),
    "overlaid": lambda g: g.overlaid(
        Overlay([{"id": "G3", "entity_type": "GROUP"}], [edge_of("G3", "G1", "near", None)])
    ).neighbors(["G3"], None, 2, None),
}


def answer(result: Any) -> Any:
    if isinstance(result, Found):
        return canonical(result.items), result.caps_hit
    return result


@pytest.mark.parametrize("directed", [False, True])
def test_a_view_offers_the_protocol_and_every_method_answers_as_the_copy(
    directed: bool,
) -> None:
    """A view offers what an overlay view is and nothing else: no method of the base
    adapter that reads state the view does not have (a view once inherited `from_graph`
    and `build_index` from the networkx adapter without running its constructor)."""
    protocol = {
        name
        for kind in (GraphAdapter, OverlayView)
        for name, member in vars(kind).items()
        if callable(member) and not name.startswith("_")
    }
    assert set(CALLS) | {"catch_up"} == protocol, "each protocol method is called below"
    graph, overlay = base_graph(directed), an_overlay()
    copy = NetworkXAdapter(materialised(graph, overlay))
    grown = Overlay(list(overlay.nodes), list(overlay.edges))
    view = NetworkXAdapter(graph).overlaid(grown)
    assert {name for name in dir(view) if not name.startswith("_")} == {
        *protocol,
        "base",
        "overlay",
        "reads",
    }
    for name, call in CALLS.items():
        assert answer(call(view)) == answer(call(copy)), name
    grown.nodes.append({"id": "G3", "entity_type": "GROUP"})
    grown.edges.append(edge_of("G3", "G1", "near", None))
    assert view.get_node("G3") is None, "a view takes in writes when caught up"
    view.catch_up()
    assert [r["id"] for r in view.neighbors(["G3"], None, 1, None).items] == ["G1"]


def test_what_a_view_builds_for_the_shared_graph_the_base_adapter_keeps() -> None:
    """An index or the relation rows a view needs of the shared graph are built once, in
    the base adapter, and serve every later view of it (every later job)."""
    adapter = NetworkXAdapter(base_graph(directed=True))
    score = ast.Compare(ast.Field(("score",)), "=", ast.Value(ord("A")))
    assert "score" not in adapter.reads.nodes._indexes and adapter.reads._edge_table is None
    first = adapter.overlaid(an_overlay())
    found = first.find_nodes(score, None)
    assert found.used_index and [n["id"] for n in found.items] == ["A"]
    assert len(first.find_edges(None, None).items) == 7 + len(an_overlay().edges)
    built, edges = adapter.reads.nodes._indexes["score"], adapter.reads._edge_table
    assert built is not None and edges is not None
    later = adapter.overlaid(an_overlay())
    assert later.find_nodes(score, None).used_index
    later.find_edges(None, None)
    assert adapter.reads.nodes._indexes["score"] is built
    assert adapter.reads._edge_table is edges
    assert adapter.find_nodes(score, None).items == found.items


async def test_the_shared_graph_never_changes_and_no_copy_is_made() -> None:
    graph = base_graph(directed=False)
    adapter = NetworkXAdapter(graph)
    before = (graph.number_of_nodes(), graph.number_of_edges(), dict(graph.edges["A", "B"]))
    executor = GaslExecutor(adapter, StateStore(), max_rows=None)
    result = await executor.execute_plan(
        GaslPlan(
            plan_id="p",
            commands=[
                'FIND nodes WHERE entity_type = "PERSON" AS people',
                "CREATE_GROUPS FROM people BY entity_type AS g",
                'FIND nodes WHERE entity_type = "GROUP" AS groups',
            ],
        )
    )
    assert [r.count for r in result.records] == [3, 1, 1]
    view = executor.graph
    assert view is not adapter and view.base is adapter  # type: ignore[attr-defined]
    after = (graph.number_of_nodes(), graph.number_of_edges(), dict(graph.edges["A", "B"]))
    assert after == before
    assert (
        adapter.find_nodes(None, None).items
        == NetworkXAdapter(base_graph(False)).find_nodes(None, None).items
    )


async def test_an_index_takes_in_each_write_without_being_rebuilt() -> None:
    graph = base_graph(directed=True)
    executor = GaslExecutor(NetworkXAdapter(graph), StateStore(), max_rows=None)
    find = 'FIND nodes WHERE entity_type = "GROUP" AS groups'
    first = await executor.execute_plan(
        GaslPlan(
            plan_id="p1",
            commands=[
                'FIND nodes WHERE entity_type = "PERSON" AS people',
                "CREATE_GROUPS FROM people BY entity_type AS g",
                find,
            ],
        )
    )
    assert first.records[-1].detail["used_index"] and first.records[-1].count == 1
    view = executor.graph
    built = view.reads.rows.nodes._indexes["entity_type"]  # type: ignore[attr-defined]
    second = await executor.execute_plan(
        GaslPlan(
            plan_id="p2",
            commands=[
                'FIND nodes WHERE entity_type = "FILM" AS films',
                "CREATE_GROUPS FROM films BY entity_type AS g2",
                find,
            ],
        )
    )
    assert executor.graph is view, "the view follows the overlay; it is not built again"
    assert view.reads.rows.nodes._indexes["entity_type"] is built  # type: ignore[attr-defined]
    assert second.records[-1].detail["used_index"]
    assert [r["id"] for r in second.records[-1].rows] == [
        "group:entity_type=PERSON",
        "group:entity_type=FILM",
    ]
    linked = await executor.execute('NEIGHBORS "group:entity_type=FILM" AS members')
    assert sorted(r["id"] for r in linked[0].rows) == ["D", "E"]


class Rounds:
    """The gasl worker's round store, in memory: the state each round left."""

    def __init__(self) -> None:
        self.states: dict[int, dict[str, Any]] = {}

    async def state_after(self, job_id: str, task: int, round_: int) -> dict[str, Any] | None:
        return None if round_ < 0 else self.states[round_]

    async def after_round(self, job_id: str, task: int, round_: int, state: dict) -> None:
        self.states[round_] = state

    async def record_round(self, executed: GaslPlanExecuted) -> None:
        return None


async def run_round(
    deps: GaslDeps, round_: int, commands: list[str], state_from: int | None = None
) -> GaslPlanExecuted:
    intent = Intent(detected_language="en", normalized_request="q", intent="q", primary_goal="q")
    message = GaslPlanRequested(
        job_id="job1",
        message_id=f"job1:gasl:0:{round_}",
        request=JobRequest(prompt="q"),
        progress=JobProgress(
            intent=intent, plan=TaskPlan(tasks=[Task(id="t", objective="o", kind="graph_analysis")])
        ),
        round=round_,
        plan=GaslPlan(plan_id=f"r{round_}", commands=commands, config={"continue_on_empty": True}),
        state_from=state_from,
    )
    [done] = (await handle(message, deps)).messages
    assert isinstance(done, GaslPlanExecuted)
    return done


async def test_a_pivot_brings_back_the_earlier_overlay_and_drops_the_abandoned_one() -> None:
    deps = GaslDeps(NetworkXAdapter(base_graph(False)), Rounds(), None, TimeBudget())
    groups = 'FIND nodes WHERE entity_type = "GROUP" AS groups'
    people = 'FIND nodes WHERE entity_type = "PERSON" AS people'
    films = 'FIND nodes WHERE entity_type = "FILM" AS films'
    await run_round(deps, 0, [people, "CREATE_GROUPS FROM people BY entity_type AS g"])
    abandoned = await run_round(
        deps, 1, [films, "CREATE_GROUPS FROM films BY entity_type AS g", groups]
    )
    assert abandoned.records[-1].count == 2
    pivoted = await run_round(deps, 2, [groups, 'NEIGHBORS "group:entity_type=PERSON" AS m'], 0)
    found, members = pivoted.records
    assert [r["id"] for r in found.rows] == ["group:entity_type=PERSON"], "round 0's is back"
    assert sorted(r["id"] for r in members.rows) == ["A", "B", "C"]
    state = deps.rounds.states[2]  # type: ignore[attr-defined]
    assert [n["id"] for n in state["overlay"]["nodes"]] == ["group:entity_type=PERSON"]
    # a state document round-trips its overlay: a fresh executor reads it back whole
    backend = MemoryStateBackend()
    backend.save(state)
    again = GaslExecutor(deps.adapter, StateStore(backend))
    assert (await again.execute(groups))[0].count == 1
