"""A hub's relations read apart (ladybug_engine.HUB_DEGREE): the build stores each node's
degrees, a walk that reaches a hub reads its relations alone, page after page, and both give
networkx's records and caps; a store built before degrees walks as it did."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from postel.services.gasl.engines import ladybug_engine
from postel.services.gasl.engines.caps import Caps
from postel.services.gasl.engines.ladybug_engine import LadybugAdapter
from postel.services.gasl.engines.ladybug_store import INFO_NAME, build_ladybug_store, table_items
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.loaders import PARALLEL, GraphTables, build_graph, relations_of

LEAVES = 30


def hub_graph(directed: bool) -> GraphTables:
    """`s` reaches the hub `h`, which 30 leaves name three relations each (parallel), some
    leaves both ways round; a self-loop on the hub; an endpoint no node names."""
    nodes = {n: {"id": n, "entity_type": "T"} for n in ["s", "x", "h"]}
    nodes.update({f"l{i}": {"id": f"l{i}"} for i in range(LEAVES)})
    edges: list[tuple[str, str, dict[str, Any]]] = []

    def add(u: str, v: str, count: int, keyword: str) -> None:
        relations = [{"source": u, "target": v, "keywords": [keyword]} for _ in range(count)]
        for i, relation in enumerate(relations):
            relation["weight"] = float(i)
        first, rest = relations[0], relations[1:]
        edges.append((u, v, {**first, PARALLEL: rest} if rest else first))

    add("s", "x", 1, "k0")
    add("s", "h", 2, "k1")
    add("h", "h", 1, "k2")
    for i in range(LEAVES):
        add(f"l{i}", "h", 3, f"k{i % 3}")
        if i % 4 == 0:
            add("h", f"l{i}", 1, "k1")
    add("h", "ghost", 1, "k0")
    return GraphTables(directed, nodes, edges)


@pytest.fixture(scope="module", params=[True, False], ids=["directed", "undirected"])
def graph(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    tables = hub_graph(request.param)
    folder = tmp_path_factory.mktemp("hubs") / "store"
    nodes, edges = table_items(tables)
    build_ladybug_store(nodes, edges, tables.directed, folder)
    return tables, folder


def test_the_build_stores_each_nodes_degrees(graph: Any) -> None:
    """A node's relations out and in (a self-loop is one of each)."""
    tables, folder = graph
    expected: dict[str, list[int]] = {}
    for u, v, attrs in tables.edges:
        count = len(list(relations_of(attrs)))
        expected.setdefault(u, [0, 0])[0] += count
        expected.setdefault(v, [0, 0])[1] += count
    adapter = LadybugAdapter.open(folder)
    try:
        assert adapter.info.degrees
        rows = adapter.store.query("MATCH (n:Node) RETURN n.id, n.odeg, n.ideg")
    finally:
        adapter.close()
    assert {n: [o, i] for n, o, i in rows} == {n: expected.get(n, [0, 0]) for n, *_ in rows}
    assert len(rows) == len(tables.nodes) + 1  # and the endpoint no node names
    assert expected["h"][1] > 3 * LEAVES


def spied(adapter: LadybugAdapter) -> list[tuple[str, dict[str, Any]]]:
    """The queries the adapter's store runs from now on, with their parameters."""
    seen: list[tuple[str, dict[str, Any]]] = []
    run = adapter.store._run

    def recording(cypher: str, params: dict[str, Any] | None, deadline: Any) -> Any:
        seen.append((cypher, dict(params or {})))
        return run(cypher, params, deadline)

    adapter.store._run = recording  # type: ignore[method-assign]
    return seen


def walks() -> Iterator[tuple[str, tuple[str, ...], int | None, str, Caps]]:
    for limit in (1, 4, 9, 25, None):
        for follow in ((), ("k1",), ("k2", "k0")):
            for direction in ("both", "in", "out"):
                yield "s", follow, limit, direction, Caps(max_results=40)
    yield "h", (), None, "both", Caps(max_results=7)


def answers(adapter: Any) -> list[Any]:
    out = []
    for start, follow, limit, direction, caps in walks():
        for found in (
            adapter.walk([start], follow, 2, limit, caps=caps, direction=direction),
            adapter.neighbors(
                [start], follow[0] if follow else None, 2, limit, caps=caps, direction=direction
            ),
        ):
            out.append((found.items, found.caps_hit))
    return out


def test_a_hub_is_read_alone_in_pages_and_gives_networkx_records(
    graph: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tables, folder = graph
    monkeypatch.setattr(ladybug_engine, "HUB_DEGREE", 8)
    expected = answers(NetworkXAdapter(build_graph(tables)))
    adapter = LadybugAdapter.open(folder)
    try:
        seen = spied(adapter)
        assert answers(adapter) == expected
    finally:
        adapter.close()
    hub_cuts = [p for q, p in seen if "LIMIT $rows" in q and p.get("i") == "h"]
    assert hub_cuts, "the hub was never read alone"
    # some walk read the hub past its first page (the cut moved on)
    assert any(p["after"] >= 0 for p in hub_cuts)
    # the hub never went into a batch's hop query
    assert not any(
        {"i": "h", "j": 0} in p.get("frontier", []) and len(p["frontier"]) > 1 for _, p in seen
    )


def test_a_store_built_before_degrees_walks_as_networkx_does(
    graph: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its store.json has no `degrees`: no node is taken for a hub."""
    tables, _ = graph
    old = tmp_path / "old"
    nodes, edges = table_items(tables)
    build_ladybug_store(nodes, edges, tables.directed, old)
    info = json.loads((old / INFO_NAME).read_text())
    del info["degrees"]
    (old / INFO_NAME).write_text(json.dumps(info))
    monkeypatch.setattr(ladybug_engine, "HUB_DEGREE", 8)
    expected = answers(NetworkXAdapter(build_graph(tables)))
    adapter = LadybugAdapter.open(old)
    try:
        assert not adapter.info.degrees
        seen = spied(adapter)
        assert answers(adapter) == expected
    finally:
        adapter.close()
    assert not any("LIMIT $rows" in q for q, _ in seen)


def test_hub_walks_agree_whatever_the_first_page(
    graph: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every node a hub and pages of any size: the same records (pairs never split)."""
    tables, folder = graph
    expected = answers(NetworkXAdapter(build_graph(tables)))
    monkeypatch.setattr(ladybug_engine, "HUB_DEGREE", 0)
    adapter = LadybugAdapter.open(folder)
    try:
        for rows in (1, 2, 5):
            monkeypatch.setattr(ladybug_engine, "_first_hub_rows", lambda still, rows=rows: rows)
            assert answers(adapter) == expected, rows
    finally:
        adapter.close()
