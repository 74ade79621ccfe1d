"""Executor: one test per command and status, guards, plan flags, PROCESS and ANALYZE."""

from __future__ import annotations

import pytest
from postel.messages.gasl import ExecutionRecord
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.executor import GaslExecutor
from support.gasl import FakeModel, small_graph


def executor(model: FakeModel | None = None) -> GaslExecutor:
    return GaslExecutor(NetworkXAdapter.from_graph(small_graph()), model=model)


async def run(ex: GaslExecutor, *commands: str, **config: bool) -> list[ExecutionRecord]:
    plan = {"plan_id": "p", "why": "test", "commands": list(commands), "config": config}
    return (await ex.execute_plan(plan)).records


async def one(ex: GaslExecutor, command: str) -> ExecutionRecord:
    records = await run(ex, command, stop_on_error=False)
    assert len(records) == 1
    return records[0]


async def test_declare_and_update_change_only_state() -> None:
    ex = executor()
    records = await run(
        ex,
        "DECLARE a AS DICT",
        "DECLARE a.people AS LIST WITH_DESCRIPTION 'found people'",
        "DECLARE hits AS COUNTER",
        'FIND nodes WHERE entity_type = "PERSON" AS p',
        "UPDATE a.people WITH p",
        "UPDATE a.people WITH p MERGE",
        "UPDATE hits WITH p",
        "UPDATE hits WITH p REPLACE",
    )
    assert [r.status for r in records] == ["success"] * 8
    assert records[5].count == 4  # MERGE does not duplicate
    assert ex.state.get("hits") == {"ADA": 1, "BOB": 1, "CY": 1, "DEE": 1}
    assert ex.state.version == 7  # 3 declares + 4 updates; FIND left the state alone
    assert ex.state.summary().keys[1].description == "found people"


async def test_update_errors() -> None:
    ex = executor()
    assert (await one(ex, "UPDATE nowhere WITH x")).status == "binding_failure"
    await run(ex, "DECLARE d AS DICT", "FIND nodes AS all")
    undeclared = await one(ex, "UPDATE nope WITH all")
    assert undeclared.status == "error" and "DECLARE it first" in (undeclared.error or "")
    assert (await one(ex, "UPDATE d WITH all")).status == "schema_mismatch"
    assert (await one(ex, "DECLARE d AS LIST")).status == "error"


async def test_find_statuses_and_provenance() -> None:
    ex = executor()
    found = await one(ex, 'FIND nodes WHERE entity_type = "PERSON" AND id != "DEE" AS p')
    assert (found.status, found.count, found.variable) == ("success", 3, "p")
    assert found.provenance == ["c1", "c2"] and found.detail["used_index"]
    empty = await one(ex, 'FIND nodes WHERE colour = "red" AS none')
    assert empty.status == "empty" and "colour" in empty.detail["hint"]
    edges = await one(ex, "FIND edges WHERE weight > 1.5 AS heavy")
    assert edges.count == 2
    await one(ex, "SET adapter.caps.max_results=2")
    partial = await one(ex, "FIND nodes AS all")
    assert partial.status == "partial" and partial.caps_hit == ["max_results"]
    assert (await one(ex, "FIND nodes WHERE id IN ${missing} AS x")).status == "binding_failure"


async def test_find_paths_from_variables_ids_and_conditions() -> None:
    ex = executor()
    await one(ex, 'FIND nodes WHERE id = "ADA" AS ada')
    rec = await one(ex, 'FIND paths FROM ${ada} TO (entity_type = "ORGANIZATION") AS p')
    assert rec.rows[0]["nodes"] == ["ADA", "BOB", "LAB"] and rec.rows[0]["length"] == 2
    assert rec.provenance == ["c1"]
    short = await one(ex, 'FIND paths FROM "ADA" TO "CY" MAX_LENGTH 2 AS q')
    assert short.status == "empty"
    longer = await one(ex, 'FIND paths FROM "ADA" TO "CY" MAX_LENGTH 3 AS q')
    assert longer.rows[0]["nodes"] == ["ADA", "BOB", "LAB", "CY"]
    blocked = await one(ex, 'FIND paths FROM "ADA" TO "CY" WHERE entity_type = "PERSON" AS q')
    assert blocked.status == "empty"  # LAB, an intermediate node, is not a PERSON
    capped = await one(ex, 'FIND paths FROM "ADA" TO "CY" MAX_LENGTH 9 AS q')
    assert capped.status == "partial" and capped.caps_hit == ["max_path_length"]
    unknown = await one(ex, 'FIND paths FROM "ZED" TO "CY" AS q')
    assert unknown.status == "error" and "ZED" in (unknown.error or "")


async def test_select_count_aggregate_rank() -> None:
    ex = executor()
    await one(ex, 'FIND nodes WHERE entity_type = "PERSON" AS p')
    fields = await one(ex, "SELECT p FIELDS id, score AS slim")
    assert fields.rows[0] == {"id": "ADA", "score": 3}
    where = await one(ex, 'SELECT p WHERE source_ids = "c2" AS c2')
    assert [r["id"] for r in where.rows] == ["ADA", "CY"]
    assert (await one(ex, "COUNT p AS n")).rows == [4]
    assert (await one(ex, "SELECT p WHERE score > 99 AS none")).status == "empty"
    assert (await one(ex, "COUNT none AS zero")).status == "empty"
    by_chunk = await one(ex, "AGGREGATE p BY source_ids WITH COLLECT OF id AS g")
    assert by_chunk.rows == [
        {"key": "c1", "value": ["ADA", "BOB"]},
        {"key": "c2", "value": ["ADA", "CY"]},
        {"key": "c9", "value": ["DEE"]},
    ]
    expected = {"COUNT": 4, "SUM": 11, "AVG": 2.75, "MIN": 2, "MAX": 3}
    for fn, value in expected.items():
        of = "" if fn == "COUNT" else " OF score"
        rec = await one(ex, f"AGGREGATE p WITH {fn}{of} AS r")
        assert rec.rows == [{"key": None, "value": value}]
    ranked = await one(ex, "RANK p BY score DESC LIMIT 2 AS top")
    assert [r["id"] for r in ranked.rows] == ["ADA", "BOB"]  # ties keep order
    asc = await one(ex, "RANK p BY score ASC AS low")
    assert asc.rows[0]["id"] == "CY"
    assert (await one(ex, "COUNT nothing AS n")).status == "binding_failure"


async def test_neighbors_via_and_depth() -> None:
    ex = executor()
    one_hop = await one(ex, 'NEIGHBORS "BOB" AS n')
    assert sorted(r["id"] for r in one_hop.rows) == ["ADA", "LAB"]
    via = await one(ex, 'NEIGHBORS "BOB" VIA "affiliation" DEPTH 2 AS n')
    assert [(r["id"], r["_depth"]) for r in via.rows] == [("LAB", 1), ("CY", 2)]
    deep = await one(ex, 'NEIGHBORS "ADA" DEPTH 9 AS n')
    assert deep.status == "partial" and "max_depth" in deep.caps_hit


async def test_require_and_assert() -> None:
    ex = executor()
    assert (await one(ex, "REQUIRE EXISTS p")).status == "binding_failure"
    await one(ex, 'FIND nodes WHERE entity_type = "PERSON" AS p')
    assert (await one(ex, "REQUIRE EXISTS ${p}")).status == "success"
    assert (await one(ex, "ASSERT LEN ${p} > 3 AND LEN ${p} <= 4")).status == "success"
    failed = await one(ex, "ASSERT LEN ${p} > 10")
    assert failed.status == "error" and "assertion failed" in (failed.error or "")
    assert (await one(ex, "ASSERT LEN ${q} > 0")).status == "binding_failure"
    bare = await one(ex, "ASSERT p > 0")
    assert bare.status == "error" and "${p}" in (bare.error or "")


async def test_stop_on_error_and_continue_on_empty() -> None:
    ex = executor()
    stopped = await run(ex, "COUNT ghost AS n", "FIND nodes AS all")
    assert [r.status for r in stopped] == ["binding_failure"]
    kept = await run(ex, "COUNT ghost AS n", "FIND nodes AS all", stop_on_error=False)
    assert [r.status for r in kept] == ["binding_failure", "success"]
    halted = await run(
        ex, 'FIND nodes WHERE id = "x" AS e', "COUNT e AS n", continue_on_empty=False
    )
    assert [r.status for r in halted] == ["empty"]


async def test_on_guards_fire_only_on_their_status() -> None:
    ex = executor()
    records = await run(
        ex,
        'FIND nodes WHERE id = "nobody" AS who',
        'ON EMPTY who THEN FIND nodes WHERE id = "ADA" AS who',
        "ON ERROR who THEN COUNT who AS n",
        continue_on_empty=False,
    )
    assert [r.status for r in records] == ["empty", "success", "success"]
    assert records[1].rows[0]["id"] == "ADA" and records[1].detail["guard"].startswith("ON EMPTY")
    assert records[2].detail == {"triggered": False, "observed": "success"}
    assert (await ex.execute_plan({"plan_id": "v", "commands": ["COUNT who AS n"]})).variables[
        "n"
    ] == {"size": 1, "sample": 1}
    # An ON ERROR guard right after a failure handles it, even with stop_on_error.
    handled = await run(ex, "COUNT ghost AS g", "ON ERROR g THEN COUNT who AS g")
    assert [r.status for r in handled] == ["binding_failure", "success"]
    ex.caps = ex.caps.with_value("max_results", 1)
    partial = await run(ex, "FIND nodes AS all", "ON PARTIAL all THEN COUNT all AS n")
    assert partial[1].rows == [1]


async def test_try_catch_finally() -> None:
    ex = executor()
    records = await run(
        ex,
        "TRY COUNT ghost AS n; COUNT never AS m CATCH ANY FIND nodes AS n FINALLY COUNT n AS k END",
    )
    assert [r.status for r in records] == ["binding_failure", "success", "success"]
    assert records[0].detail["caught"] is True and records[2].rows == [5]
    clean = await run(ex, "TRY", "COUNT n AS a", "CATCH ANY", "COUNT ghost AS b", "END")
    assert [r.status for r in clean] == ["success"]
    uncaught = await run(ex, "TRY COUNT ghost AS x CATCH ANY COUNT ghost AS y END", "COUNT n AS z")
    assert [r.status for r in uncaught] == ["binding_failure", "binding_failure"]


async def test_set_and_cancel() -> None:
    ex = executor()
    rec = await one(ex, "SET adapter.caps.max_path_length=1")
    assert rec.status == "success" and ex.caps.max_path_length == 1
    assert rec.rows == [{"cap": "max_path_length", "value": 1}]
    assert (await one(ex, "SET adapter.caps.bogus=1")).status == "error"
    assert (await one(ex, "SET other.thing=1")).status == "error"
    result = await ex.execute_plan(
        {"plan_id": "p9", "commands": ['CANCEL PLAN "p9"', "FIND nodes AS all"]}
    )
    assert result.cancelled and len(result.records) == 1
    assert result.variables == {}
    again = await ex.execute_plan({"plan_id": "p9", "commands": ["FIND nodes AS all"]})
    assert again.records[0].status == "error" and "cancelled" in (again.records[0].error or "")


async def test_plan_validation_and_syntax_rejection() -> None:
    ex = executor()
    bad = await ex.execute_plan({"plan_id": "x", "commands": []})
    assert bad.records[0].status == "error" and "invalid plan" in (bad.records[0].error or "")
    syntax = await ex.execute_plan({"plan_id": "y", "commands": ["FIND nodes AS a", "FIND x"]})
    assert syntax.records[0].command == "FIND x" and "command 2" not in syntax.records[0].command
    assert "line 1, column 6" in (syntax.records[0].error or "")
    assert not ex.context.exists("a")  # nothing ran


async def test_process_validates_and_attaches_extraction() -> None:
    model = FakeModel({"items": [{"a": "ADA", "b": "BOB", "source_ids": ["c1"]}]})
    ex = executor(model)
    await one(ex, 'FIND nodes WHERE entity_type = "PERSON" AS p')
    rec = await one(ex, 'PROCESS p USING "pair co-authors" AS pairs')
    assert rec.status == "success" and rec.provenance == ["c1"]
    assert rec.rows[0]["extraction"]["instruction"] == "pair co-authors"
    assert rec.detail["llm"]["tokens"] == 7
    assert "pair co-authors" in model.prompts[0] and "4 of 4 items" in model.prompts[0]
    model.answers.append({"wrong": True})
    bad = await one(ex, 'PROCESS p USING "again" AS pairs2')
    assert bad.status == "schema_mismatch" and "items" in (bad.error or "")
    assert (await one(executor(), 'PROCESS p USING "x" AS y')).status in (
        "error",
        "binding_failure",
    )


async def test_process_excerpt_is_bounded() -> None:
    model = FakeModel({"items": []})
    ex = executor(model)
    ex.limits = type(ex.limits)(max_items=2)
    await one(ex, "FIND nodes AS all")
    rec = await one(ex, 'PROCESS all USING "x" AS y')
    assert "2 of 5 items, truncated" in model.prompts[0]
    assert rec.status == "partial" and rec.caps_hit == ["max_items"], "it saw 2 of 5 items"


async def test_a_model_step_on_a_cut_excerpt_is_partial_and_on_partial_reacts() -> None:
    model = FakeModel(
        {"answer": "some", "rationale": "seen a part"}, {"answer": "all", "rationale": "r"}
    )
    ex = executor(model)
    ex.limits = type(ex.limits)(max_chars=120)
    records = await run(
        ex,
        "FIND nodes AS all",
        "DECLARE found AS LIST",
        "UPDATE found WITH all",
        'ANALYZE found USING "who?" AS verdict',
        "ON PARTIAL verdict THEN DECLARE reacted AS LIST",
    )
    assert [r.status for r in records][-2:] == ["partial", "success"]
    assert records[-2].caps_hit == ["max_chars"]
    assert records[-1].detail["guard"].startswith("ON PARTIAL verdict"), "the guard ran"
    ex.limits = type(ex.limits)()
    whole = await one(ex, 'ANALYZE found USING "who?" AS v2')
    assert whole.status == "success" and whole.caps_hit == []


async def test_analyze_sees_state_sample() -> None:
    model = FakeModel({"answer": "two people", "rationale": "counted", "evidence": ["ADA"]})
    ex = executor(model)
    await run(ex, "DECLARE found AS LIST", "FIND nodes WHERE score = 3 AS p", "UPDATE found WITH p")
    rec = await one(ex, 'ANALYZE found USING "how many?" AS verdict')
    assert rec.status == "success" and rec.rows[0]["answer"] == "two people"
    assert "FINDINGS: under `found`, 3 of 3 items" in model.prompts[0]
    model.answers.append({"answer": 3})
    assert (await one(ex, 'ANALYZE found USING "?" AS v2')).status == "schema_mismatch"
    assert (await one(ex, 'ANALYZE ghost USING "?" AS v3')).status == "binding_failure"


@pytest.mark.parametrize("command", ['PROCESS p USING "x" AS y', 'ANALYZE k USING "x" AS y'])
async def test_llm_steps_without_model_fail_cleanly(command: str) -> None:
    ex = executor()
    await run(ex, "FIND nodes AS p", "DECLARE k AS LIST")
    assert (await one(ex, command)).status == "error"


async def test_an_empty_result_stops_a_plan_by_default() -> None:
    find = 'FIND nodes WHERE entity_type = "NOBODY" AS x'
    stopped = await run(executor(), find, "DECLARE after AS LIST")
    assert [r.status for r in stopped] == ["empty"]
    going_on = await run(executor(), find, "DECLARE after AS LIST", continue_on_empty=True)
    assert [r.status for r in going_on] == ["empty", "success"]


async def test_a_field_of_a_list_variable_is_each_items_field() -> None:
    graph = small_graph()
    ex = executor()
    records = await run(
        ex,
        'FIND edges WHERE keywords CONTAINS "affiliation" AS links',
        "FIND nodes WHERE id IN ${links.target} AS targets",
    )
    assert [r.status for r in records] == ["success", "success"]
    oracle = {v for _, v, k in graph.edges(data="keywords") if "affiliation" in k}
    assert {row["id"] for row in records[1].rows} == oracle
    missing = await one(ex, "FIND nodes WHERE id IN ${links.nowhere} AS none")
    assert missing.status == "binding_failure" and "no item of 'links'" in (missing.error or "")


async def test_select_fields_renames_with_equals() -> None:
    [_, rows] = await run(
        executor(), 'FIND nodes WHERE id = "ADA" AS p', "SELECT p FIELDS who=id, score AS r"
    )
    assert rows.rows == [{"who": "ADA", "score": 3}]
