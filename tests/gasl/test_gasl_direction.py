"""Walking a directed graph both ways: a knowledge base stored film -> actor and
film -> director answers "the films X starred in" (one hop against the edges) and "who
directed the films X starred in" (then one hop along them), checked against networkx for
every actor; records say which way each edge was walked."""

from __future__ import annotations

import asyncio

import networkx as nx
import pytest
from postel.messages.gasl import GaslPlan
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.schema_summary import summarize_graph
from postel.services.planner.render import graph_text
from support.gasl import film_kb


def related(graph: nx.DiGraph, node: str, relation: str, *, inbound: bool) -> set[str]:
    edges = (
        graph.in_edges(node, data="keywords") if inbound else graph.out_edges(node, data="keywords")
    )
    return {(u if inbound else v) for u, v, keywords in edges if relation in keywords}


async def ids(executor: GaslExecutor, *commands: str) -> list[set[str]]:
    plan = GaslPlan(plan_id="p", commands=list(commands))
    plan.config.continue_on_empty = True
    result = await executor.execute_plan(plan)
    return [{row["id"] for row in record.rows} for record in result.records]


async def test_one_and_two_hop_questions_walk_against_and_along_the_edges() -> None:
    graph = film_kb()
    executor = GaslExecutor(NetworkXAdapter.from_graph(graph), max_rows=None)
    actors = [n for n in graph if n.startswith("ACTOR") and graph.in_degree(n)]
    assert len(actors) > 20
    for actor in actors:
        films = related(graph, actor, "starred_actors", inbound=True)
        directors = set().union(*(related(graph, f, "directed_by", inbound=False) for f in films))
        starred, directed = await ids(
            executor,
            f'NEIGHBORS "{actor}" DIRECTION in VIA "starred_actors" AS films',
            'NEIGHBORS ${films} DIRECTION out VIA "directed_by" AS directors',
        )
        assert (starred, directed) == (films, directors)
        [along] = await ids(executor, f'NEIGHBORS "{actor}" DIRECTION out AS nothing')
        assert along == set(), "an actor has no edge of its own"


async def test_records_say_which_way_each_edge_was_walked() -> None:
    graph = film_kb()
    executor = GaslExecutor(NetworkXAdapter.from_graph(graph), max_rows=None)
    actor = next(n for n in graph if n.startswith("ACTOR") and graph.in_degree(n))
    plan = GaslPlan(
        plan_id="p",
        commands=[
            f'NEIGHBORS "{actor}" AS films',  # both ways by default on a directed graph
            f'FIND paths FROM "{actor}" TO (entity_type = "PERSON") MAX_LENGTH 2 LIMIT 500 AS p',
        ],
    )
    neighbors, paths = (await executor.execute_plan(plan)).records
    assert {row["_walked"] for row in neighbors.rows} == {"in"}
    assert {row["id"] for row in neighbors.rows} == set(graph.predecessors(actor))
    oracle = {
        (film, other)
        for film in graph.predecessors(actor)
        for other in graph.successors(film)
        if other != actor
    }
    assert {tuple(row["nodes"][1:]) for row in paths.rows} == oracle
    assert all([e["walked"] for e in row["edges"]] == ["in", "out"] for row in paths.rows)
    assert all(row["edges"][0]["target"] == actor for row in paths.rows), "the edge as stored"


def test_the_schema_summary_and_the_planner_see_which_way_relations_point() -> None:
    summary = summarize_graph(NetworkXAdapter.from_graph(film_kb()))
    assert summary["directed"] is True
    assert summary["relation_directions"] == {
        "starred_actors": "FILM -> PERSON",
        "directed_by": "FILM -> PERSON",
    }
    text = graph_text(summary)
    assert "DIRECTION out, in or both" in text and "starred_actors: FILM -> PERSON" in text
    undirected = summarize_graph(NetworkXAdapter.from_graph(film_kb().to_undirected()))
    assert undirected["relation_directions"] == {} and "DIRECTION" not in graph_text(undirected)


@pytest.mark.parametrize("direction", ["out", "in", "both"])
def test_an_undirected_graph_walks_every_edge_whatever_the_direction(direction: str) -> None:
    graph = film_kb().to_undirected()
    executor = GaslExecutor(NetworkXAdapter.from_graph(graph), max_rows=None)
    [found] = asyncio.run(ids(executor, f'NEIGHBORS "FILM 0" DIRECTION {direction} AS n'))
    assert found == set(graph.neighbors("FILM 0"))


async def test_paths_keep_only_edges_of_the_relation_asked_for() -> None:
    graph = film_kb()
    executor = GaslExecutor(NetworkXAdapter.from_graph(graph), max_rows=None)
    actor = next(n for n in graph if n.startswith("ACTOR") and graph.in_degree(n))
    plan = GaslPlan(
        plan_id="p",
        commands=[
            f'FIND paths FROM "{actor}" TO (entity_type = "PERSON") VIA "starred" '
            "MAX_LENGTH 2 LIMIT 500 AS costars"
        ],
    )
    [record] = (await executor.execute_plan(plan)).records
    oracle = {
        (film, other)
        for film in graph.predecessors(actor)
        for other in graph.successors(film)
        if other != actor and "starred_actors" in graph.edges[film, other]["keywords"]
    }
    assert {tuple(row["nodes"][1:]) for row in record.rows} == oracle
    assert all("directed_by" not in e["keywords"] for row in record.rows for e in row["edges"])
