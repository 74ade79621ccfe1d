"""State store (copy-on-write, JSON backend, replay) and seed 001's co-authorship analysis
on the real MMWR graph, checked against an independent networkx computation."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import networkx as nx
import pytest
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.errors import StateError
from postel.services.gasl.executor import GaslExecutor, replay
from postel.services.gasl.state import JsonFileStateBackend, StateStore, content_hash

GRAPH = Path(__file__).resolve().parents[2] / "services/gasl/data/mmwr_nano_graphrag.graphml"


def test_snapshots_are_copy_on_write() -> None:
    state = StateStore()
    state.declare("a", "DICT")
    state.declare("a.items", "LIST")
    state.declare("b", "LIST")
    before = state.current
    state.update("a.items", [1, 2])
    after = state.current
    assert before.variables["a"]["items"]["items"] == []  # old snapshot untouched
    assert after.variables["a"]["items"]["items"] == [1, 2]
    assert after.variables["b"] is before.variables["b"]  # unchanged branch is shared
    assert after.version == before.version + 1 and after.hash != before.hash
    assert state.snapshot(before.version) is before
    with pytest.raises(StateError):
        state.declare("b.child", "LIST")


def test_json_backend_round_trip(tmp_path: Path) -> None:
    backend = JsonFileStateBackend(tmp_path / "s" / "state.json")
    state = StateStore(backend, query="who?")
    state.declare("c", "COUNTER")
    state.update("c", {"x": 2})
    state.update("c", ["x", "y"])
    state.persist()
    loaded = StateStore(backend)
    assert loaded.get("c") == {"x": 3, "y": 1}
    assert loaded.version == state.version and loaded.current.hash == state.current.hash
    assert loaded.query == "who?"


def independent_coauthors(path: Path) -> tuple[dict[str, set[str]], set[frozenset[str]]]:
    """Chunks shared by at least two people, and the co-author pairs, read by plain networkx."""
    graph = nx.read_graphml(str(path))
    by_chunk: dict[str, set[str]] = {}
    for node, attrs in graph.nodes(data=True):
        if attrs.get("entity_type", "").strip('"') != "PERSON":
            continue
        for chunk in attrs.get("source_id", "").split("<SEP>"):
            if chunk:
                by_chunk.setdefault(chunk, set()).add(node.strip('"'))
    shared = {c: people for c, people in by_chunk.items() if len(people) >= 2}
    pairs = {frozenset(p) for people in shared.values() for p in combinations(people, 2)}
    return shared, pairs


async def test_coauthorship_analysis_matches_networkx(tmp_path: Path) -> None:
    adapter = NetworkXAdapter.from_graphml(GRAPH)
    state = StateStore(JsonFileStateBackend(tmp_path / "state.json"), query="co-authors")
    ex = GaslExecutor(adapter, state)
    init = {
        "plan_id": "plan-init-state-001",
        "why": "Initialize the state structure for co-authorship analysis.",
        "commands": [
            "DECLARE co_authorship_analysis AS DICT",
            "DECLARE co_authorship_analysis.authors AS LIST "
            "WITH_DESCRIPTION 'List of all unique authors found.'",
            "DECLARE co_authorship_analysis.shared_chunks AS DICT "
            "WITH_DESCRIPTION 'Chunks and the authors they share.'",
            "DECLARE co_authorship_analysis.papers_per_author AS COUNTER",
        ],
        "config": {"stop_on_error": True, "continue_on_empty": False},
    }
    find = {
        "plan_id": "plan-find-002",
        "why": "People who share a source chunk wrote the same report section.",
        "commands": [
            'FIND nodes WHERE entity_type = "PERSON" AS people',
            "ASSERT LEN ${people} > 0",
            "SELECT people FIELDS id AS names",
            "UPDATE co_authorship_analysis.authors WITH names",
            "AGGREGATE people BY source_ids WITH COLLECT OF id AS by_chunk",
            "SELECT by_chunk WHERE LEN value >= 2 AS shared",
            "UPDATE co_authorship_analysis.shared_chunks WITH shared REPLACE",
            "AGGREGATE people BY id WITH COUNT AS one_each",
            "UPDATE co_authorship_analysis.papers_per_author WITH one_each",
        ],
    }
    first = await ex.execute_plan(init)
    second = await ex.execute_plan(find)
    assert all(r.status == "success" for r in first.records + second.records)

    shared, pairs = independent_coauthors(GRAPH)
    people = nx.read_graphml(str(GRAPH))
    n_people = sum(1 for _, a in people.nodes(data=True) if a.get("entity_type") == '"PERSON"')
    found = state.get("co_authorship_analysis.shared_chunks")
    assert {c: set(v) for c, v in found.items()} == shared
    gasl_pairs = {frozenset(p) for v in found.values() for p in combinations(v, 2)}
    assert gasl_pairs == pairs and len(pairs) > 100
    assert len(state.get("co_authorship_analysis.authors")) == n_people
    assert second.records[0].provenance  # source chunks of the people found

    summary = ex.state_summary()
    assert len(summary.model_dump_json()) < 4000  # compact enough for a prompt
    assert [k.key for k in summary.keys][:2] == [
        "co_authorship_analysis",
        "co_authorship_analysis.authors",
    ]

    state.persist()
    artifact = state.backend.load()["replay"]  # {seed, plans: [{..., caps}]}, as persisted
    replayed = await replay(artifact, adapter)
    assert replayed.variables == state.variables
    assert replayed.current.hash == state.current.hash
    assert [h["command"] for h in state.history][:1] == ["DECLARE co_authorship_analysis AS DICT"]


def test_snapshots_handed_out_never_change_while_later_writes_share_the_rest() -> None:
    state = StateStore()
    state.declare("people", "LIST")
    state.declare("by_type", "DICT")
    state.declare("by_type.person", "COUNTER")
    state.update("people", [{"id": "A"}])
    first = state.current
    frozen = json.dumps(first.variables, sort_keys=True)
    for n in range(3):  # several writes after one snapshot: copied once, then in place
        state.update("people", [{"id": f"B{n}"}])
        state.update("by_type.person", {"x": 1})
        state.update("by_type", {"note": n})
    second = state.current
    assert json.dumps(first.variables, sort_keys=True) == frozen
    assert first.hash == content_hash(json.loads(frozen))
    assert [i["id"] for i in state.get("people")] == ["A", "B0", "B1", "B2"]
    assert state.get("by_type.person") == {"x": 3} and state.get("by_type") == {"note": 2}
    state.update("people", [{"id": "C"}], "REPLACE")
    assert [i["id"] for i in second.variables["people"]["items"]][-1] == "B2"
    assert state.version == second.version + 1 and state.current.hash != second.hash


def test_a_refused_update_changes_nothing() -> None:
    state = StateStore()
    state.declare("counts", "COUNTER")
    state.update("counts", {"a": 1})
    before = state.variables
    with pytest.raises(StateError):
        state.update("counts", {"b": 2, "c": "many"})
    assert state.variables == before


def test_aggregate_rows_count_by_their_keys() -> None:
    state = StateStore()
    state.declare("types", "COUNTER")
    state.update("types", [{"key": "PERSON", "value": 3}, {"key": "LAB", "value": 1}])
    assert state.get("types") == {"PERSON": 3, "LAB": 1}
