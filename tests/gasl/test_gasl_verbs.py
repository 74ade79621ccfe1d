"""The verbs beyond FIND and NEIGHBORS, checked against networkx on both GraphML dialects:
the MMWR graph nano-graphrag built (undirected) and a film KB written the way LightRAG writes
(directed, film -> actor, film -> director). Caps are part of each check."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from postel.messages.gasl import ExecutionRecord, GaslPlan
from postel.services.gasl.engines.caps import Caps
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.llm_steps import Limits
from postel.services.gasl.loaders import DEMO_GRAPH, load_graphml, relations_of
from postel.services.gasl.state import JsonFileStateBackend, StateStore
from support.gasl import FakeModel, film_kb


def lightrag_films(tmp_path: Path) -> Path:
    """The film KB in LightRAG's spelling: entity_id, lower-case types, comma keywords."""
    raw = nx.DiGraph()
    kb = film_kb()
    for node, attrs in kb.nodes(data=True):
        raw.add_node(
            node,
            entity_id=node,
            entity_type=attrs["entity_type"].lower(),
            description=f"{node} in the film KB",
            source_id=f"chunk-{len(node) % 5}",
            file_path="films.txt",
        )
    for u, v, attrs in kb.edges(data=True):
        keywords = ",".join(attrs["keywords"])
        raw.add_edge(u, v, weight=1.0, description=f"{u} {keywords} {v}", keywords=keywords)
    path = tmp_path / "films.graphml"
    nx.write_graphml(raw, path)
    return path


@pytest.fixture(params=["nano-graphrag", "lightrag"])
def graph(request: pytest.FixtureRequest, tmp_path: Path) -> nx.Graph:
    if request.param == "nano-graphrag":
        return load_graphml(DEMO_GRAPH)
    loaded = load_graphml(lightrag_films(tmp_path))
    assert loaded.is_directed() and loaded.nodes["FILM 0"]["entity_type"] == "FILM"
    return loaded


def _starts(graph: nx.Graph) -> list[str]:
    """Well-connected nodes to walk from, in a fixed order."""
    return [n for n, _ in sorted(graph.degree, key=lambda d: (-d[1], str(d[0])))[:6]]


def _keyword(graph: nx.Graph) -> str:
    return "starred_actors" if graph.is_directed() else "vaccin"


def _matches(attrs: dict[str, Any], keyword: str) -> bool:
    return any(
        keyword in str(text).casefold()
        for r in relations_of(attrs)
        for text in (*r.get("keywords", []), *r.get("description", []))
    )


def _view(graph: nx.Graph, direction: str, keyword: str | None = None) -> nx.Graph:
    """The graph a walk in `direction` along edges naming `keyword` sees, as networkx."""
    kept = graph
    if keyword is not None:
        kept = nx.subgraph_view(
            graph, filter_edge=lambda u, v: _matches(graph.edges[u, v], keyword)
        )
    if not graph.is_directed():
        return kept
    return {"out": kept, "in": kept.reverse(copy=False), "both": kept.to_undirected(as_view=True)}[
        direction
    ]


async def run(executor: GaslExecutor, *commands: str) -> list[ExecutionRecord]:
    plan = GaslPlan(plan_id=f"p{len(executor.state.history)}", commands=list(commands))
    plan.config.continue_on_empty = True
    return (await executor.execute_plan(plan)).records


def executor_on(graph: nx.Graph, **kwargs: Any) -> GaslExecutor:
    return GaslExecutor(NetworkXAdapter.from_graph(graph), max_rows=None, **kwargs)


@pytest.mark.parametrize("direction", ["out", "in", "both"])
async def test_graphwalk_reaches_what_networkx_reaches_with_the_path_that_did(
    graph: nx.Graph, direction: str
) -> None:
    executor = executor_on(graph)
    keyword = _keyword(graph)
    view = _view(graph, direction, keyword)
    for start in _starts(graph):
        [record] = await run(
            executor,
            f'GRAPHWALK FROM "{start}" DIRECTION {direction} FOLLOW "{keyword}" DEPTH 2 AS w',
        )
        distances = nx.single_source_shortest_path_length(view, start, cutoff=2)
        assert {row["id"] for row in record.rows} == set(distances) - {start}
        for row in record.rows:
            path = row["_path"]
            assert path[0] == start and path[-1] == row["id"]
            assert row["_depth"] == len(path) - 1 == distances[row["id"]]
            assert all(view.has_edge(a, b) for a, b in itertools.pairwise(path))


async def test_graphwalk_follows_any_of_several_relations_against_the_edges(tmp_path: Path) -> None:
    graph = load_graphml(lightrag_films(tmp_path))
    executor = executor_on(graph)
    for actor in [n for n in graph if n.startswith("ACTOR") and graph.in_degree(n)][:10]:
        [record] = await run(
            executor,
            f'GRAPHWALK FROM "{actor}" DIRECTION both FOLLOW "starred_actors", "directed_by" '
            "DEPTH 2 AS w",
        )
        films = set(graph.predecessors(actor))
        expected = films | {x for f in films for x in nx.all_neighbors(graph, f)} - {actor}
        assert {row["id"] for row in record.rows} == expected
        walked = {row["id"]: row["_walked"] for row in record.rows}
        assert all(walked[f] == ["in"] for f in films)


async def test_graphwalk_caps_make_the_step_partial(graph: nx.Graph) -> None:
    executor = executor_on(graph, caps=Caps(max_results=3, max_depth=2))
    start = _starts(graph)[0]
    capped, deep, limited = await run(
        executor,
        f'GRAPHWALK FROM "{start}" AS a',
        f'GRAPHWALK FROM "{start}" DEPTH 5 LIMIT 1 AS b',
        f'GRAPHWALK FROM "{start}" LIMIT 2 AS c',
    )
    assert (capped.status, capped.count, capped.caps_hit) == ("partial", 3, ["max_results"])
    assert deep.status == "partial" and deep.caps_hit == ["max_depth"]
    assert (limited.status, limited.count) == ("success", 2)


@pytest.mark.parametrize("direction", ["out", "in", "both"])
async def test_subgraph_is_the_ego_graph_with_every_edge_among_its_nodes(
    graph: nx.Graph, direction: str
) -> None:
    executor = executor_on(graph)
    view = _view(graph, direction)
    for start in _starts(graph)[:3]:
        [record] = await run(
            executor, f'SUBGRAPH FROM "{start}" DIRECTION {direction} DEPTH 1 AS s'
        )
        [item] = record.rows
        nodes = set(nx.ego_graph(view, start, radius=1))
        assert {n["id"] for n in item["nodes"]} == nodes
        assert record.count == item["node_count"] == len(nodes)
        inside = graph.subgraph(nodes)
        pairs = {(e["source"], e["target"]) for e in item["edges"]}
        if graph.is_directed():
            assert pairs == set(inside.edges)
        else:
            assert {frozenset(p) for p in pairs} == {frozenset(e) for e in inside.edges}
        relations = sum(len(relations_of(attrs)) for _, _, attrs in inside.edges(data=True))
        assert item["edge_count"] == len(item["edges"]) == relations


async def test_subgraph_limit_and_caps(graph: nx.Graph) -> None:
    executor = executor_on(graph, caps=Caps(max_results=4))
    start = _starts(graph)[0]
    limited, capped = await run(
        executor, f'SUBGRAPH FROM "{start}" LIMIT 3 AS s', f'SUBGRAPH FROM "{start}" AS t'
    )
    assert (limited.status, limited.count) == ("success", 3)
    assert limited.rows[0]["nodes"][0]["id"] == start
    assert capped.status == "partial" and "max_results" in capped.caps_hit
    assert capped.count == 4


def _ids(names: list[str]) -> str:
    return "(id IN [" + ", ".join(f'"{n}"' for n in names) + "])"


@pytest.mark.parametrize("direction", ["out", "in", "both"])
async def test_graphconnect_gives_a_shortest_path_for_every_connected_pair(
    graph: nx.Graph, direction: str
) -> None:
    executor = executor_on(graph, caps=Caps(max_paths=10_000))
    view = _view(graph, direction)
    lefts, rights = _starts(graph)[:3], _starts(graph)[3:6]
    [record] = await run(
        executor,
        f"GRAPHCONNECT {_ids(lefts)} AND {_ids(rights)} DIRECTION {direction} MAX_LENGTH 3 "
        "AS links",
    )
    expected = {}
    for a, b in itertools.product(lefts, rights):
        try:
            length = nx.shortest_path_length(view, a, b)
        except nx.NetworkXNoPath:
            continue
        if length <= 3:
            expected[(a, b)] = length
    got = {(row["start"], row["end"]): row["length"] for row in record.rows}
    assert got == expected and record.detail["lefts"] == 3
    for row in record.rows:
        assert all(view.has_edge(a, b) for a, b in itertools.pairwise(row["nodes"]))
    assert [row["length"] for row in record.rows] == sorted(got.values())


async def test_graphconnect_caps(graph: nx.Graph) -> None:
    executor = executor_on(graph, caps=Caps(max_paths=1, max_path_length=2))
    a, b, c = _starts(graph)[:3]
    [record] = await run(
        executor, f"GRAPHCONNECT {_ids([a])} AND {_ids([b, c])} MAX_LENGTH 4 AS links"
    )
    assert record.status == "partial" and "max_path_length" in record.caps_hit
    assert record.count <= 1


async def test_join_pairs_each_neighbour_with_the_edges_that_link_it(graph: nx.Graph) -> None:
    executor = executor_on(graph)
    start = _starts(graph)[0]
    records = await run(
        executor,
        f'NEIGHBORS "{start}" DIRECTION both AS near',
        f'FIND edges WHERE source = "{start}" OR target = "{start}" AS touching',
        "JOIN near WITH touching ON id = target AS by_target",
        "JOIN near WITH touching ON id = source AS by_source",
    )
    rows = records[2].rows + records[3].rows
    assert {row["near"]["id"] for row in rows} == set(_view(graph, "both")[start]) - {start}
    for row in rows:
        ends = {row["touching"]["source"], row["touching"]["target"]}
        assert ends == {start, row["near"]["id"]} and row["key"] == row["near"]["id"]


async def test_merge_and_compare_are_set_operations_on_a_field(graph: nx.Graph) -> None:
    executor = executor_on(graph)
    a, b = _starts(graph)[:2]
    _, _, merged, compared = await run(
        executor,
        f'NEIGHBORS "{a}" AS near_a',
        f'NEIGHBORS "{b}" AS near_b',
        "MERGE near_a, near_b ON id AS either",
        "COMPARE near_a WITH near_b AS overlap",
    )
    view = _view(graph, "both")
    left, right = set(view[a]) - {a}, set(view[b]) - {b}
    assert sorted(row["id"] for row in merged.rows) == sorted(left | right)
    assert merged.detail["folded"] == len(left & right)
    [summary] = compared.rows
    assert set(summary["both"]) == left & right
    assert set(summary["only_left"]) == left - right
    assert set(summary["only_right"]) == right - left


async def test_add_field_computes_from_each_row(graph: nx.Graph) -> None:
    executor = executor_on(graph)
    start = _starts(graph)[0]
    _, sized, flagged = await run(
        executor,
        f'NEIGHBORS "{start}" AS near',
        "ADD_FIELD near FIELD sources = LEN source_ids AS sized",
        'ADD_FIELD sized FIELD many = sources > 1 AND entity_type != "FILM" AS flagged',
    )
    for row in flagged.rows:
        attrs = graph.nodes[row["id"]]
        assert row["sources"] == len(attrs["source_ids"])
        assert row["many"] is (len(attrs["source_ids"]) > 1 and attrs["entity_type"] != "FILM")
    assert sized.count == flagged.count == len(_view(graph, "both")[start])


async def test_add_field_and_classify_by_model_are_bounded_like_process(graph: nx.Graph) -> None:
    start = _starts(graph)[0]
    model = FakeModel(
        {"values": [{"index": 0, "value": "A"}, {"index": 1, "value": "B"}]},
        {"classes": [{"index": 0, "label": "core"}, {"index": 1, "label": "edge"}]},
        {"classes": [{"index": 0, "label": "elsewhere"}]},
    )
    executor = executor_on(graph, model=model, limits=Limits(max_items=2))
    _, named, classed, stray = await run(
        executor,
        f'NEIGHBORS "{start}" AS near',
        'ADD_FIELD near FIELD initial USING "the first letter of the id" AS named',
        'CLASSIFY near INTO "core", "edge" USING "how central" AS classed',
        'CLASSIFY near INTO "core", "edge" AS stray',
    )
    assert named.status == "partial" and named.caps_hit == ["max_items"]
    assert [row["initial"] for row in named.rows] == ["A", "B"]
    assert named.detail["left_out"] == named.detail["llm"]["input_total"] - 2
    assert [row["class"] for row in classed.rows] == ["core", "edge"]
    assert "ANSWER SCHEMA" in model.prompts[1] and '"enum": ["core", "edge"]' in model.prompts[1]
    assert stray.status == "schema_mismatch" and "elsewhere" in (stray.error or "")


async def test_show_previews_without_assigning(graph: nx.Graph) -> None:
    executor = executor_on(graph)
    start = _starts(graph)[0]
    _, shown, fields = await run(
        executor,
        f'NEIGHBORS "{start}" AS near',
        "SHOW near",
        "SHOW near FIELDS who=id, entity_type LIMIT 2",
    )
    total = len(_view(graph, "both")[start])
    assert (shown.count, len(shown.rows), shown.variable) == (total, 5, None)
    assert fields.rows == [
        {"who": r["id"], "entity_type": r["entity_type"]} for r in shown.rows[:2]
    ]
    assert shown.detail == {"shown": 5, "total": total}


async def test_find_paths_where_joins_any_two_nodes_meeting_the_condition(
    graph: nx.Graph,
) -> None:
    executor = executor_on(graph)
    cond = 'id CONTAINS "ACTOR"' if graph.is_directed() else 'entity_type = "ORGANIZATION"'
    short, long_ = await run(
        executor,
        f"FIND paths WHERE {cond} MAX_LENGTH 2 LIMIT 50 AS a",
        f"FIND paths FROM ({cond}) TO ({cond}) MAX_LENGTH 2 LIMIT 50 AS b",
    )
    assert short.rows == long_.rows and short.count > 0


async def test_created_nodes_edges_and_groups_live_in_the_jobs_overlay_only(
    graph: nx.Graph, tmp_path: Path
) -> None:
    adapter = NetworkXAdapter.from_graph(graph)
    before = (graph.number_of_nodes(), graph.number_of_edges())
    backend = JsonFileStateBackend(tmp_path / "state.json")
    executor = GaslExecutor(adapter, StateStore(backend), max_rows=None)
    kind = "FILM" if graph.is_directed() else "VACCINE"
    members = {n for n, t in graph.nodes(data="entity_type") if t == kind}
    records = await run(
        executor,
        f'FIND nodes WHERE entity_type = "{kind}" AS chosen',
        "CREATE_GROUPS FROM chosen BY entity_type AS groups",
        f'NEIGHBORS "group:entity_type={kind}" VIA "member_of" AS back',
        'FIND nodes WHERE entity_type = "GROUP" AS found',
        "SELECT chosen FIELDS id AS ids",
        "ADD_FIELD ids FIELD twin = id AS twins",
        'CREATE_NODES FROM twins ID twin TYPE "TWIN" AS dupes',
    )
    groups, back, found, dupes = records[1], records[2], records[3], records[6]
    assert groups.count == 1 and groups.rows[0]["members"] and groups.rows[0]["overlay"]
    assert {row["id"] for row in back.rows} == members
    assert [row["id"] for row in found.rows] == [f"group:entity_type={kind}"]
    assert dupes.status == "empty" and dupes.detail["existing"] == len(members)
    # the registered graph is as it was, and another job does not see the overlay
    assert (graph.number_of_nodes(), graph.number_of_edges()) == before
    assert adapter.get_node(f"group:entity_type={kind}") is None
    other = GaslExecutor(adapter, StateStore(), max_rows=None)
    [empty] = await run(other, 'FIND nodes WHERE entity_type = "GROUP" AS found')
    assert empty.status == "empty"
    # the job's next plan (a later round, another process) reads its overlay from the state
    later = GaslExecutor(adapter, StateStore(JsonFileStateBackend(tmp_path / "state.json")))
    [again] = await run(later, 'FIND nodes WHERE entity_type = "GROUP" AS found')
    assert again.count == 1


async def test_created_edges_need_existing_ends_and_are_walked(graph: nx.Graph) -> None:
    executor = executor_on(graph)
    a, b = _starts(graph)[:2]
    records = await run(
        executor,
        f'FIND nodes WHERE id IN ["{a}", "NO SUCH NODE"] AS left',
        "ADD_FIELD left FIELD partner = " + f'"{b}"' + " AS pairs",
        'CREATE_EDGES FROM pairs SOURCE id TARGET partner RELATION "related_by_plan" AS made',
        f'NEIGHBORS "{a}" DIRECTION out VIA "related_by_plan" AS linked',
    )
    made, linked = records[2], records[3]
    assert made.count == 1 and made.rows[0]["keywords"] == ["related_by_plan"]
    assert [row["id"] for row in linked.rows] == [b]
    _, ghostly = await run(
        executor,
        'ADD_FIELD left FIELD partner = "NO SUCH NODE" AS ghosts',
        "CREATE_EDGES FROM ghosts SOURCE id TARGET partner AS none",
    )
    assert ghostly.status == "empty" and ghostly.detail["skipped"] == 1
    assert "NO SUCH NODE" in ghostly.detail["hint"]
