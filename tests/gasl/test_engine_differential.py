"""The two engines give the same records: GASL plans run on a networkx graph and on a
LadybugDB store of the same graph, over graphs and plans hypothesis generates (directed and
undirected, parallel relations, self-loops, endpoints no node names, text that lower() and
casefold() fold apart, attributes kept in `extra`), with overlay writes (CREATE_GROUPS,
CREATE_EDGES, ADD_FIELD, UPDATE), a pivot back to an earlier round's state, and caps low
enough to cut results. Each record's status, count, rows (in order: both engines return
GASL's order, which a cap cuts), variable, caps and error must match, and so must the
variables the plan leaves.

The suite fails when a pushed-down query changes: `test_a_changed_query_is_caught` breaks
each template in turn and checks some example of the suite tells the engines apart.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from postel.messages.gasl import GaslPlan, PlanConfig
from postel.services.gasl.engines import cypher_where, ladybug_engine
from postel.services.gasl.engines.ladybug_engine import LadybugAdapter
from postel.services.gasl.engines.ladybug_store import build_ladybug_store, table_items
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.loaders import PARALLEL, GraphTables, build_graph
from postel.services.gasl.state import MemoryStateBackend, StateStore
from support.gasl import SchemaModel

TYPES = ["PERSON", "ORG", "LAB"]
TEXTS = ["writes about Falls", "a Lab", "Straße works", "ÉMILE cites", "member of", "born 1950-"]
KEYWORDS = ["cites", "works_at", "member"]
IDS = [f"n{i}" for i in range(8)]


@st.composite
def graphs(draw: st.DrawFn) -> GraphTables:
    """A graph in the shared attribute model, in the order networkx adds it."""
    directed = draw(st.booleans())
    count = draw(st.integers(2, len(IDS)))
    nodes: dict[str, dict[str, Any]] = {}
    for node_id in IDS[:count]:
        attrs: dict[str, Any] = {}
        if draw(st.booleans()):
            attrs["entity_type"] = draw(st.sampled_from(TYPES))
        attrs["description"] = draw(st.lists(st.sampled_from(TEXTS), max_size=2, unique=True))
        attrs["source_ids"] = draw(st.lists(st.sampled_from(["c1", "c2"]), max_size=2))
        if draw(st.booleans()):
            attrs["score"] = draw(st.integers(0, 5))
        attrs["id"] = node_id
        nodes[node_id] = attrs
    ends = (
        st.sampled_from([*IDS[:count], "ghost"])
        if draw(st.booleans())
        else st.sampled_from(IDS[:count])
    )
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    for u, v in draw(st.lists(st.tuples(ends, ends), max_size=14)):
        relation: dict[str, Any] = {
            "description": draw(st.lists(st.sampled_from(TEXTS), max_size=1)),
            "keywords": draw(st.lists(st.sampled_from(KEYWORDS), max_size=2, unique=True)),
            "source_ids": ["c1"],
        }
        if draw(st.booleans()):
            relation["weight"] = draw(st.sampled_from([1.0, 2.0, 3.5]))
        relation["source"], relation["target"] = u, v
        edge = pairs.get((u, v)) or (None if directed else pairs.get((v, u)))
        if edge is None:
            pairs[u, v] = relation
        else:
            edge.setdefault(PARALLEL, []).append(relation)
    return GraphTables(directed, nodes, [(u, v, attrs) for (u, v), attrs in pairs.items()])


CONDITIONS = [
    'entity_type = "PERSON"',
    'entity_type != "ORG"',
    'entity_type IN ["PERSON", "LAB"]',
    "score > 2",
    "score = 3 OR score = 0",
    'description CONTAINS "falls"',
    'description CONTAINS "STRASSE"',
    'description STARTS_WITH "émile"',
    'description CONTAINS "1950"',
    'description ENDS_WITH "50-"',
    'id IN ["n1", "n3", "ghost"]',
    'NOT source_ids = "c1"',
    'id > "n3" AND description ENDS_WITH "lab"',
    "entity_type = 1",
]
EDGE_CONDITIONS = [
    "weight >= 2",
    'keywords = "cites"',
    'source = "n1" OR target = "n1"',
    'description CONTAINS "lab"',
    'NOT keywords = "member"',
    'weight < 3 AND keywords != "cites"',
]


@st.composite
def plans(draw: st.DrawFn) -> list[str]:
    """Commands: caps, a FIND, walks, overlay writes, and the walks again over them."""
    node = st.sampled_from(IDS[:4])
    direction = st.sampled_from(["", " DIRECTION out", " DIRECTION in", " DIRECTION both"])
    via = st.sampled_from(["", *(f' VIA "{k}"' for k in KEYWORDS)])
    depth = st.sampled_from(["", " DEPTH 1", " DEPTH 2", " DEPTH 3"])
    limit = st.sampled_from(["", " LIMIT 1", " LIMIT 2", " LIMIT 5"])
    cap = draw(
        st.sampled_from(
            [
                [],
                ["SET adapter.caps.max_results=2"],
                ["SET adapter.caps.max_expansions=2"],
                ["SET adapter.caps.max_paths=2", "SET adapter.caps.max_depth=2"],
            ]
        )
    )
    cond, econd = draw(st.sampled_from(CONDITIONS)), draw(st.sampled_from(EDGE_CONDITIONS))
    follow = draw(st.sampled_from(["", ' FOLLOW "cites"', ' FOLLOW "member", "works_at"']))
    inner = draw(st.sampled_from(["", ' WHERE NOT entity_type = "ORG"', " WHERE score > 1"]))
    length = draw(st.sampled_from(["", " MAX_LENGTH 2", " MAX_LENGTH 4"]))
    walks = [
        f'NEIGHBORS "{draw(node)}"{draw(direction)}{draw(via)}{draw(depth)}{draw(limit)} AS nb',
        f'GRAPHWALK FROM "{draw(node)}"{draw(direction)}{follow}{draw(depth)}{draw(limit)} AS w',
        f'SUBGRAPH FROM "{draw(node)}"{draw(direction)}{draw(via)}{draw(depth)}{draw(limit)} AS s',
        f'GRAPHCONNECT ({cond}) TO (entity_type = "LAB" OR id = "{draw(node)}")'
        f"{draw(direction)}{draw(via)}{draw(st.sampled_from(['', ' MAX_LENGTH 2']))}"
        f"{draw(limit)} AS joined",
        f'FIND paths FROM "{draw(node)}" TO ({cond}){draw(direction)}{draw(via)}{inner}{length}'
        f"{draw(limit)} AS paths",
    ]
    writes = [
        f"FIND nodes WHERE {cond}{draw(limit)} AS found",
        f"FIND edges WHERE {econd}{draw(limit)} AS edges",
        "FIND nodes LIMIT 6 AS some",
        "CREATE_GROUPS FROM some BY entity_type AS groups",
        'CREATE_EDGES FROM edges SOURCE target TARGET source RELATION "cites back" AS back',
        'ADD_FIELD found FIELD kind = "author" AS kinded',
        "DECLARE kept AS LIST",
        "UPDATE kept WITH found",
    ]
    after = [
        'FIND nodes WHERE entity_type = "GROUP" OR kind = "author" AS grouped',
        'FIND edges WHERE keywords = "cites back" OR keywords = "member_of" AS added',
        *(w.replace(" AS ", " AS again_") for w in walks),
    ]
    return [*cap, *walks, *writes, *after]


def store_of(tables: GraphTables, root: Path) -> Path:
    """The store of a graph, built once per graph (examples repeat graphs while shrinking)."""
    key = hashlib.sha256(repr((tables.directed, tables.nodes, tables.edges)).encode()).hexdigest()
    folder = root / key[:16]
    if not folder.exists():
        nodes, edges = table_items(tables)
        build_ladybug_store(nodes, edges, tables.directed, folder)
    return folder


CONFIG = PlanConfig(stop_on_error=False, continue_on_empty=True)


async def run(adapter: Any, commands: list[str]) -> list[Any]:
    """Records of a plan in two rounds, then of a pivot: a third round from the state the
    first left (its overlay, not the second's); and the variables each round left."""
    first, second = commands[: len(commands) // 2], commands[len(commands) // 2 :]
    backend = MemoryStateBackend()
    out: list[Any] = []
    executor = GaslExecutor(adapter, StateStore(backend), SchemaModel(), max_rows=None)
    out.append(await executor.execute_plan(GaslPlan(plan_id="a", commands=first, config=CONFIG)))
    executor.state.persist()
    pivot_doc = backend.load()
    out.append(await executor.execute_plan(GaslPlan(plan_id="b", commands=second, config=CONFIG)))
    out.append(executor.context.values())
    pivot_backend = MemoryStateBackend()
    pivot_backend.save(pivot_doc or {})
    pivoted = GaslExecutor(adapter, StateStore(pivot_backend), SchemaModel(), max_rows=None)
    out.append(await pivoted.execute_plan(GaslPlan(plan_id="c", commands=second, config=CONFIG)))
    out.append(pivoted.context.values())
    return [
        [(r.command, r.status, r.count, r.rows, r.variable, r.caps_hit, r.error) for r in x.records]
        if hasattr(x, "records")
        else x
        for x in out
    ]


def differences(tables: GraphTables, commands: list[str], root: Path) -> list[Any]:
    """What differs between the engines running `commands` on the graph: [] when nothing."""
    ladybug = LadybugAdapter.open(store_of(tables, root))
    try:
        on_networkx = asyncio.run(run(NetworkXAdapter(build_graph(tables)), commands))
        on_ladybug = asyncio.run(run(ladybug, commands))
    finally:
        ladybug.close()
    found = []
    for part, (x, y) in enumerate(zip(on_networkx, on_ladybug, strict=True)):
        if isinstance(x, list):
            found.extend((part, a, b) for a, b in zip(x, y, strict=True) if a != b)
        elif x != y:
            found.append((part, x, y))
    return found


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("stores")


# Examples per run of the lane (each builds a store, ~0.2 s); raise it to search longer.
EXAMPLES = int(os.environ.get("POSTEL_DIFFERENTIAL_EXAMPLES", "10"))
DIFFERENTIAL = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@DIFFERENTIAL
@given(tables=graphs(), commands=plans())
def test_both_engines_give_the_same_records(
    tables: GraphTables, commands: list[str], stores: Path
) -> None:
    assert differences(tables, commands, stores) == []


@DIFFERENTIAL
@given(tables=graphs(), commands=plans())
def test_hubs_read_apart_give_the_same_records(
    tables: GraphTables, commands: list[str], stores: Path
) -> None:
    """Every node taken for a hub (read alone, in pages of one relation at first, see
    ladybug_engine.HUB_DEGREE): the same records still."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ladybug_engine, "HUB_DEGREE", 0)
        patch.setattr(ladybug_engine, "_first_hub_rows", lambda still: 1)
        assert differences(tables, commands, stores) == []


def example_graph(directed: bool) -> GraphTables:
    """A graph of the suite's kind, written out: parallel relations, a self-loop, a pair
    both ways round, an endpoint no node names, text casefold() and lower() fold apart."""
    kinds = ["PERSON", "LAB", None, "PERSON", "ORG", "LAB"]
    nodes: dict[str, dict[str, Any]] = {}
    for i, kind in enumerate(kinds):
        attrs: dict[str, Any] = {} if kind is None else {"entity_type": kind}
        attrs.update(description=[TEXTS[i % len(TEXTS)]], source_ids=["c1"][: i % 2], score=i)
        nodes[f"n{i}"] = {**attrs, "id": f"n{i}"}
    links = [
        ("n0", "n1", "cites", 2.0), ("n1", "n2", "member", 1.0), ("n0", "n1", "works_at", 3.5),
        ("n2", "n0", "cites", 2.0), ("n3", "n3", "member", 1.0), ("n1", "n0", "member", 2.0),
        ("n4", "n2", "works_at", 1.0), ("n2", "n5", "cites", 3.5), ("n5", "ghost", "cites", 1.0),
        ("n0", "n4", "member", 2.0), ("n3", "n1", "cites", 2.0),
    ]  # fmt: skip
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    for u, v, keyword, weight in links:
        relation = {"weight": weight, "description": [f"{u} {keyword} Lab"], "keywords": [keyword]}
        relation.update(source_ids=["c2"], source=u, target=v)
        edge = pairs.get((u, v)) or (None if directed else pairs.get((v, u)))
        if edge is None:
            pairs[u, v] = relation
        else:
            edge.setdefault(PARALLEL, []).append(relation)
    return GraphTables(directed, nodes, [(u, v, attrs) for (u, v), attrs in pairs.items()])


def fixed_examples() -> Iterator[tuple[GraphTables, list[str]]]:
    """Examples of the suite's kind, the same every run."""
    for directed in (False, True):
        for cap in ([], ["SET adapter.caps.max_results=2"]):
            yield (
                example_graph(directed),
                [
                    *cap,
                    'FIND nodes WHERE entity_type = "PERSON" OR score > 2 AS people',
                    'FIND nodes WHERE description CONTAINS "lab" AS labs',
                    "FIND edges WHERE weight >= 2 AS heavy",
                    'FIND edges WHERE description CONTAINS "cites lab" AS cited',
                    'NEIGHBORS "n0" DIRECTION out DEPTH 2 AS near',
                    'GRAPHWALK FROM "n1" FOLLOW "cites" DEPTH 3 AS walked',
                    'SUBGRAPH FROM "n2" DEPTH 2 AS sub',
                    'FIND paths FROM "n0" TO (entity_type = "LAB") MAX_LENGTH 4 AS paths',
                    "FIND nodes LIMIT 6 AS some",
                    "CREATE_GROUPS FROM some BY entity_type AS groups",
                    'NEIGHBORS "n0" DEPTH 2 AS again',
                ],
            )


# Each change to a pushed-down template that the suite must notice.
def _reading(directed: bool, parts: list[tuple[str, str]]) -> Any:
    return replace(ladybug_engine.EDGE_READING[directed], parts=parts)


BROKEN = {
    "the direction of a hop": (ladybug_engine.HOP_PATTERN, "out", "(a)-[r:Rel]-(b:Node)"),
    "the order of FIND edges": (
        ladybug_engine.EDGE_READING,
        True,
        _reading(True, [("a.ord >= $lo AND a.ord < $hi", "b.ord")]),
    ),
    "the parts of FIND edges, undirected": (
        ladybug_engine.EDGE_READING,
        False,
        _reading(
            False,
            [("a.ord >= $lo AND a.ord < $hi", "a.ord"), ("b.ord >= $lo AND b.ord < $hi", "b.ord")],
        ),
    ),
    "a comparison": (cypher_where._CYPHER_OP, ">=", ">"),
    "a text match": (cypher_where._TEXT_OP, "CONTAINS", "STARTS WITH"),
}


@pytest.mark.parametrize("change", BROKEN, ids=list(BROKEN))
def test_a_changed_query_is_caught(
    change: str, stores: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table, key, broken = BROKEN[change]
    monkeypatch.setitem(table, key, broken)
    assert any(tells_apart(t, c, stores) for t, c in fixed_examples()), change


def test_the_fixed_examples_agree(stores: Path) -> None:
    """What the changed queries are caught on: the engines agree there as they are."""
    assert all(differences(t, c, stores) == [] for t, c in fixed_examples())


def tells_apart(tables: GraphTables, commands: list[str], root: Path) -> bool:
    """Does the suite fail on this example: the engines differ, or one of them raises?"""
    try:
        return bool(differences(tables, commands, root))
    except Exception:
        return True
