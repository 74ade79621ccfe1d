"""The ladybug engine on the MMWR demo graph: the reference dialect's forms give the same
records as on networkx; a job's writes never reach the store, opened read-only; a command
over its budget ends as networkx's does; the builder streams and keeps every attribute."""

from __future__ import annotations

import asyncio
import hashlib
import math
from pathlib import Path
from typing import Any

import pytest
from postel.messages.gasl import GaslPlan, PlanConfig
from postel.services.gasl.budget import COMMAND_BUDGET, Deadline
from postel.services.gasl.engines import ladybug_store
from postel.services.gasl.engines.cypher_where import Column, split
from postel.services.gasl.engines.ladybug_engine import LadybugAdapter
from postel.services.gasl.engines.ladybug_store import (
    DATABASE_NAME,
    StoreInfo,
    build_from_graphml,
    build_ladybug_store,
)
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.engines.registry import (
    LADYBUG_FROM_RELATIONS,
    default_engine,
    open_engine,
)
from postel.services.gasl.errors import BudgetSpent
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.loaders import DEMO_GRAPH, PARALLEL, GraphTables, build_graph
from postel.services.gasl.parser import parse
from support.gasl import SchemaModel
from support.reference_dialect import ACCEPTED, SETUP


@pytest.fixture(scope="module")
def mmwr(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("mmwr") / "store"
    build_from_graphml(DEMO_GRAPH, folder)
    return folder


@pytest.fixture(scope="module")
def engines(mmwr: Path) -> Any:
    ladybug = LadybugAdapter.open(mmwr)
    yield NetworkXAdapter.from_graphml(DEMO_GRAPH), ladybug
    ladybug.close()


CONFIG = PlanConfig(stop_on_error=False, continue_on_empty=True)
WALKS = [
    "NEIGHBORS ${robin} DEPTH 2 AS near",
    "GRAPHWALK FROM ${robin} DEPTH 3 LIMIT 40 AS walked",
    "SUBGRAPH FROM ${robin} DEPTH 2 AS sub",
    "GRAPHCONNECT ${people} TO ${orgs} MAX_LENGTH 3 AS joined",
    "FIND paths FROM ${robin} TO ${people} MAX_LENGTH 2 AS paths",
    'NEIGHBORS ${people} VIA "author" DEPTH 2 AS coauthors',
    'FIND edges WHERE description CONTAINS "vaccin" AND weight > 5 AS about',
]


async def records(adapter: Any, commands: list[str]) -> list[Any]:
    executor = GaslExecutor(adapter, model=SchemaModel(), max_rows=None)
    plan = GaslPlan(plan_id="p", commands=[*SETUP, *commands], config=CONFIG)
    done = (await executor.execute_plan(plan)).records
    return [(r.status, r.count, r.rows, r.variable, r.caps_hit, r.error) for r in done]


def test_the_reference_forms_and_walks_give_the_same_records_on_both_engines(
    engines: Any,
) -> None:
    """Every accepted form, in one plan after SETUP (what one form leaves in the state,
    both engines leave), then walks of the demo graph."""
    networkx, ladybug = engines
    commands = [*(form.written for form in ACCEPTED), *WALKS]
    on_networkx = asyncio.run(records(networkx, commands))
    on_ladybug = asyncio.run(records(ladybug, commands))
    assert len(on_networkx) == len(on_ladybug) > len(commands)
    assert [a for a, b in zip(on_networkx, on_ladybug, strict=True) if a != b] == []
    walked = on_ladybug[-len(WALKS) :]
    assert [r[1] for r in walked if r[1] == 0] == [], [(r[0], r[1], r[5]) for r in walked]


def digest(folder: Path) -> str:
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    return hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in files)).hexdigest()


def test_a_jobs_writes_live_in_its_overlay_and_the_store_is_never_written(mmwr: Path) -> None:
    before = digest(mmwr)
    adapter = LadybugAdapter.open(mmwr)
    try:
        writes = [
            'FIND nodes WHERE entity_type = "PERSON" LIMIT 5 AS people',
            "CREATE_GROUPS FROM people BY entity_type AS groups",
            "FIND edges WHERE weight >= 9 LIMIT 3 AS strong",
            'CREATE_EDGES FROM strong SOURCE target TARGET source RELATION "cites back" AS back',
            'ADD_FIELD people FIELD kind = "author" AS kinded',
            'FIND nodes WHERE entity_type = "GROUP" AS found',
            'NEIGHBORS "group:entity_type=PERSON" AS members',
        ]
        done = asyncio.run(records(adapter, writes))[len(SETUP) :]
        assert [count for _, count, *_ in done][-2:] == [1, 5]
        # another job reading the same adapter sees none of it
        assert adapter.get_node("group:entity_type=PERSON") is None
        with pytest.raises(RuntimeError, match=r"(?i)read.only"):
            adapter.store.query("CREATE (n:Node {id: 'x', ord: -1})")
    finally:
        adapter.close()
    assert digest(mmwr) == before


def test_a_query_past_its_deadline_is_interrupted_and_names_the_budget(mmwr: Path) -> None:
    adapter = LadybugAdapter.open(mmwr)
    try:
        # some seconds of work: every pair of the graph's 3261 nodes
        slow = "MATCH (a:Node), (b:Node) WHERE lower(a.id + b.id) CONTAINS 'zzq' RETURN count(*)"
        deadline = Deadline.never()
        deadline.at, deadline.cap, deadline.seconds = 0.0, COMMAND_BUDGET, 0.05
        with pytest.raises(BudgetSpent):
            adapter.store.query(slow, deadline=deadline)
        soon = Deadline(_now() + 0.05, COMMAND_BUDGET, 0.05)
        with pytest.raises(BudgetSpent) as spent:
            adapter.store.query(slow, deadline=soon)
        assert spent.value.cap == COMMAND_BUDGET
        # a search over budget returns what it has, naming the budget (partial), as networkx
        gone = Deadline(_now() - 1, COMMAND_BUDGET, 0.05)
        robin = ["ROBIN LEE"]
        for found in (
            adapter.find_nodes(None, None, deadline=gone),
            adapter.neighbors(robin, None, 2, None, deadline=gone),
            adapter.walk(robin, (), 2, None, deadline=gone),
            adapter.connect(robin, ["CDC"], None, 3, None, deadline=gone),
            adapter.find_paths(robin, ["CDC"], None, 3, None, deadline=gone),
            adapter.subgraph(robin, None, 2, None, deadline=gone),
        ):
            assert COMMAND_BUDGET in found.caps_hit and found.items == []
        networkx = NetworkXAdapter.from_graphml(DEMO_GRAPH)
        assert networkx.find_nodes(None, None, deadline=gone).caps_hit == [COMMAND_BUDGET]
    finally:
        adapter.close()


def test_a_cancelled_plan_interrupts_the_query_it_is_running(mmwr: Path) -> None:
    """The plan's caller sets `stop`: the running query ends though its budget has a
    minute left (without the watch it would run to its end and return its count)."""
    import threading

    from postel.services.gasl.budget import PlanClock, TimeBudget

    stop = threading.Event()
    clock = PlanClock(TimeBudget(plan_s=60, command_s=60), stop=stop)
    adapter = LadybugAdapter.open(mmwr)
    try:
        slow = "MATCH (a:Node), (b:Node) WHERE lower(a.id + b.id) CONTAINS 'zzq' RETURN count(*)"
        threading.Timer(0.2, stop.set).start()
        with pytest.raises(BudgetSpent):
            adapter.store.query(slow, deadline=clock.command_deadline())
    finally:
        adapter.close()


def _now() -> float:
    import time

    return time.monotonic()


def test_the_builder_keeps_what_its_columns_cannot_hold_in_extra(tmp_path: Path) -> None:
    odd = "tab\tand\x1fseparator"
    nodes = [
        {"id": "007", "entity_type": "", "description": ["x", 3], "rank": {"a": [1, None]}},
        {"id": "b", "entity_type": "Straße", "description": [odd], "source_ids": []},
    ]
    edges = [
        {"source": "007", "target": "c", "weight": "heavy", "keywords": ["k"]},
        {"source": "b", "target": "007", "weight": math.inf},
    ]
    info = build_ladybug_store(iter(nodes), iter(edges), True, tmp_path / "s")
    assert info.nodes == 3 and info.relations == 2
    assert set(info.spilled) == {"node.entity_type", "node.description", "edge.weight"}
    assert info.unfolded == ["node.entity_type"]
    assert StoreInfo.read(tmp_path / "s") == info
    assert (tmp_path / "s" / DATABASE_NAME).exists() and not (tmp_path / "s" / "spool").exists()
    adapter = LadybugAdapter.open(tmp_path / "s")
    try:
        assert [adapter.get_node(n["id"]) for n in nodes] == nodes
        assert adapter.get_node("c") == {"id": "c"}
        rows = adapter.find_edges(None, None).items
        assert rows == [
            {"source": "007", "target": "c", "weight": "heavy", "keywords": ["k"]},
            {"source": "b", "target": "007", "weight": math.inf},
        ]
        for condition, ids in [
            ('entity_type CONTAINS "SS"', ["b"]),
            ("description = 3", ["007"]),
            ('entity_type = ""', ["007"]),
            ('description CONTAINS "\\u001f"', ["b"]),
        ]:
            where = parse(f"FIND nodes WHERE {condition} AS x")[0].where  # type: ignore[attr-defined]
            assert [n["id"] for n in adapter.find_nodes(where, None).items] == ids, condition
    finally:
        adapter.close()
    with pytest.raises(FileExistsError):
        build_ladybug_store(iter(nodes), iter(edges), True, tmp_path / "s")


def test_the_builder_spools_any_text_its_columns_take(tmp_path: Path) -> None:
    """Quotes, commas, backslashes reach the columns as they are; a line break goes to
    `extra`; an id no column can hold is refused."""
    texts = ['"Engine Island (1920, #0)"', "a, b", 'q"', "back\\", "\\", 'x\\"y', "é"]
    nodes = [
        {"id": f"n{i}", "entity_type": t, "description": [t, "z"]} for i, t in enumerate(texts)
    ]
    nodes += [{"id": t} for t in texts]
    nodes.append({"id": "broken", "description": ["one\ntwo"], "entity_type": "x\ry"})
    edges = [{"source": t, "target": "n0", "keywords": [t]} for t in texts]
    info = build_ladybug_store(iter(nodes), iter(edges), False, tmp_path / "s")
    assert info.spilled == ["node.description", "node.entity_type"]
    adapter = LadybugAdapter.open(tmp_path / "s")
    try:
        assert [adapter.get_node(n["id"]) for n in nodes] == nodes
        assert [e["keywords"] for e in adapter.find_edges(None, None).items] == [[t] for t in texts]
    finally:
        adapter.close()
    with pytest.raises(ValueError, match="line breaks"):
        build_ladybug_store(iter([{"id": "a\nb"}]), iter([]), False, tmp_path / "t")


def test_graphs_go_to_ladybug_from_the_documented_size(mmwr: Path) -> None:
    assert default_engine(LADYBUG_FROM_RELATIONS - 1) == "networkx"
    assert default_engine(LADYBUG_FROM_RELATIONS) == "ladybug"
    opened = open_engine("ladybug", mmwr, buffer_pool_size=32 * 1024 * 1024)
    assert isinstance(opened, LadybugAdapter) and opened.get_node("ROBIN LEE") is not None
    opened.close()  # type: ignore[attr-defined]
    assert isinstance(open_engine("networkx", DEMO_GRAPH), NetworkXAdapter)
    with pytest.raises(ValueError, match="engines are networkx, ladybug"):
        open_engine("neo4j", mmwr)  # type: ignore[arg-type]


def test_gasl_run_takes_the_engine_and_gives_the_same_records(mmwr: Path) -> None:
    from click.testing import CliRunner
    from postel.infra.cli.gasl_run import run_commands
    from postel.infra.cli.main import main

    commands = ['FIND nodes WHERE entity_type = "PERSON" LIMIT 3 AS p', "NEIGHBORS p AS n"]
    on_networkx = run_commands(DEMO_GRAPH, commands)
    for graph in (DEMO_GRAPH, mmwr):  # a GraphML file (stored first) or a store folder
        on_ladybug = run_commands(graph, commands, engine="ladybug")
        assert [(r.status, r.count, r.rows) for r in on_ladybug] == [
            (r.status, r.count, r.rows) for r in on_networkx
        ]
    ran = CliRunner().invoke(
        main, ["gasl", "run", "--graph", str(mmwr), "--engine", "ladybug", "--json", *commands]
    )
    assert ran.exit_code == 0, ran.output
    assert '"count": 3' in ran.output
    refused = CliRunner().invoke(main, ["gasl", "run", "--graph", str(mmwr), *commands])
    assert refused.exit_code == 2 and "not found" in refused.output


def test_the_planners_schema_summary_is_the_same_on_both_engines(
    engines: Any, tmp_path: Path
) -> None:
    from postel.services.gasl.loaders import build_graph, normalise
    from postel.services.gasl.schema_summary import summarize_graph
    from postel_bench.data.qa_movies import qa_movie_graph, write_graphml

    networkx, ladybug = engines
    assert summarize_graph(ladybug) == summarize_graph(networkx)
    movies = tmp_path / "movies.graphml"
    write_graphml(qa_movie_graph(400), movies)  # directed, with keywords
    build_from_graphml(movies, tmp_path / "store")
    from postel.services.gasl.graphml import read_graphml_bytes

    tables = normalise(read_graphml_bytes(movies.read_bytes()))
    store = LadybugAdapter.open(tmp_path / "store")
    try:
        expected = summarize_graph(NetworkXAdapter(build_graph(tables)))
        assert expected["relation_directions"] and summarize_graph(store) == expected
    finally:
        store.close()


def test_a_needle_of_ascii_non_letters_is_matched_without_lowering_every_value() -> None:
    """No character folds into an ASCII digit, space or sign but itself, so such a needle is
    compared with the text as it is (the differential suite checks the records agree)."""
    columns = {"description": Column("n.description", "texts", True)}

    def cypher(condition: str) -> str:
        where = parse(f"FIND nodes WHERE {condition} AS f")[0].where  # type: ignore[attr-defined]
        compiled, _, rest = split(where, columns)
        assert rest is None and compiled is not None
        return compiled

    assert "lower(" not in cypher('description CONTAINS "(1950) #2"')
    assert "lower(x)" in cypher('description CONTAINS "1950s"')
    assert "lower(x)" in cypher('description ENDS_WITH "é1"')


@pytest.mark.parametrize("directed", [True, False])
def test_a_store_built_in_chunks_reads_as_one_built_whole(tmp_path: Path, directed: bool) -> None:
    """Relations copied a few per COPY (an endpoint no node names only in a later one) give
    the store one COPY gives."""
    nodes = [{"id": f"n{i}", "entity_type": "T"} for i in range(4)]
    edges = [
        {"source": s, "target": t, "keywords": [f"k{i}"]}
        for i, (s, t) in enumerate(
            [("n0", "n1"), ("n2", "n3"), ("n1", "n0"), ("n0", "n1"), ("n3", "ghost"), ("n2", "n3")]
        )
    ]

    def read(folder: Path) -> list[Any]:
        adapter = LadybugAdapter.open(folder)
        try:
            walks = [adapter.neighbors([n["id"]], None, 2, None).items for n in nodes]
            found = [adapter.find_edges(None, None).items, adapter.find_nodes(None, None).items]
            return [*found, walks]
        finally:
            adapter.close()

    whole = build_ladybug_store(iter(nodes), iter(edges), directed, tmp_path / "whole")
    chunked = build_ladybug_store(
        iter(nodes), iter(edges), directed, tmp_path / "chunked", rel_chunk=2
    )
    assert chunked == whole and whole.nodes == 5
    assert read(tmp_path / "chunked") == read(tmp_path / "whole")


@pytest.mark.parametrize("directed", [True, False])
def test_a_pairs_relations_one_after_the_other_take_its_place_as_they_are_spooled(
    tmp_path: Path, directed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Relations given one per edge dict (as `postel graph add` gives them), a pair's one
    after the other, are stored with their pair's `pord` and read in networkx's order with
    no pass after the COPY to set it: the pass has nothing left to write (here it is left
    out)."""
    pairs = [("n0", "n1"), ("n0", "n1"), ("n1", "n0"), ("n0", "n2"), ("n2", "n1"), ("n2", "n1")]
    nodes = {f"n{i}": {"id": f"n{i}"} for i in range(3)}
    edges = [{"source": s, "target": t, "keywords": [f"k{i}"]} for i, (s, t) in enumerate(pairs)]
    monkeypatch.setattr(ladybug_store, "_set_pair_places", lambda conn, directed: None)
    build_ladybug_store(iter(nodes.values()), iter(edges), directed, tmp_path / "s")
    grouped: list[tuple[str, str, dict[str, Any]]] = []
    for edge in edges:  # as networkx holds them: a pair's further relations in PARALLEL
        u, v = edge["source"], edge["target"]
        last = grouped[-1] if grouped else None
        if last and (last[:2] == (u, v) or (not directed and last[:2] == (v, u))):
            last[2].setdefault(PARALLEL, []).append(edge)
        else:
            grouped.append((u, v, dict(edge)))
    expected = NetworkXAdapter(build_graph(GraphTables(directed, nodes, grouped)))
    adapter = LadybugAdapter.open(tmp_path / "s")
    try:
        places = adapter.store.query("MATCH ()-[r:Rel]->() RETURN r.rord, r.pord ORDER BY r.rord")
        firsts = [0, 0, 2, 3, 4, 4] if directed else [0, 0, 0, 3, 4, 4]
        assert [p for _, p in places] == firsts
        for node in nodes:
            assert adapter.neighbors([node], None, 2, None).items == (
                expected.neighbors([node], None, 2, None).items
            )
        assert adapter.find_edges(None, None).items == expected.find_edges(None, None).items
    finally:
        adapter.close()
