"""How the round prompt fits LAST RESULTS into its budget: every record's head stays, sample
rows are what is cut (earlier records' first), parts grow into the budget's slack, and a
gasl error is shown once with its hint."""

from __future__ import annotations

import re
from typing import Any

import pytest
from postel.messages.gasl import ExecutionRecord, GaslPlan
from postel.messages.pipeline import RoundNote
from postel.services.llm.tokens import count_tokens
from postel.services.planner.render import history_text, outcome_digest
from postel.services.planner.round_prompt import BUDGETS, RoundInputs, round_messages
from postel.services.prompts import Capability

SUMMARY: dict[str, Any] = {
    "nodes": 100000,
    "edges": 250000,
    "entity_types": {f"TYPE_{i}": 1000 - i for i in range(40)},
    "node_attributes": {f"attr_{i}": "text" for i in range(20)},
    "edge_attributes": {"keywords": "text", "weight": "number"},
    "relation_keywords": {f"relation_{i}": 10 for i in range(25)},
    "example_ids": {f"TYPE_{i}": [f"id_{i}_a", f"id_{i}_b"] for i in range(6)},
}


def film(i: int, hop: int) -> dict[str, Any]:
    return {
        "id": f"hop{hop} entity {i}",
        "entity_type": "FILM",
        "description": [f"a film described at some length, number {i} of hop {hop}"] * 3,
        "release_year": 1990 + i,
    }


def hop_records(hops: int = 3, rows: int = 20) -> list[ExecutionRecord]:
    """A realistic multi-hop plan: each hop a NEIGHBORS, the last one named `ans`."""
    names = [f"hop{h}" for h in range(1, hops)] + ["ans"]
    return [
        ExecutionRecord(
            command=f'NEIGHBORS ${{start}} VIA "relation_{h}" LIMIT 20 AS {name}',
            status="success",
            count=rows,
            rows=[film(i, h) for i in range(rows)],
            variable=name,
        )
        for h, name in enumerate(names, start=1)
    ]


def prompt(capability: Capability, **changes: Any) -> str:
    round_ = RoundInputs(
        question=changes.pop("question", "Which films did the director of Heat also direct?"),
        task_index=0,
        round_number=changes.pop("round_number", 1),
        max_rounds=8,
        graph_summary=changes.pop("graph_summary", SUMMARY),
        **changes,
    )
    text = "\n".join(m.content for m in round_messages(capability, round_))
    assert count_tokens(text) <= BUDGETS[capability]
    return text


def rows_shown(text: str) -> list[int]:
    """Sample rows shown per record, in record order."""
    results = text.split("LAST RESULTS", 1)[1]
    blocks = re.split(r"\n(?=\d+\. \[)", results)[1:]
    return [
        block.split("   rows: ", 1)[1].count('{"id"') if "   rows: " in block else 0
        for block in blocks
    ]


def test_the_answer_record_is_shown_with_its_rows_when_the_prompt_has_room() -> None:
    # the measured case: a 3-hop plan's results were 853 tokens, LAST RESULTS was held to
    # 450 and the `ans` record was cut whole although the prompt had 1,000 tokens left
    text = prompt(Capability.STANDARD, records=hop_records())
    assert '3. [success] NEIGHBORS ${start} VIA "relation_3" LIMIT 20 AS ans -> 20 as ans' in text
    assert "17 more rows not shown; name all 20 as ${ans} (one field of each: ${ans.id})" in text
    assert rows_shown(text) == [3, 3, 3] and "hop3 entity 2" in text
    assert "…(cut)" not in text.split("LAST RESULTS", 1)[1]


@pytest.mark.parametrize("capability", list(Capability))
def test_every_record_head_stays_and_earlier_samples_are_cut_first(
    capability: Capability,
) -> None:
    records = hop_records(hops=5)
    text = prompt(capability, records=records, question="Which films? " * 60)
    for number, record in enumerate(records, start=1):
        assert f"{number}. [success] {record.command} -> 20 as {record.variable}" in text
        assert "   fields: " in text
    assert text.count("more rows not shown; name all 20 as ${") == len(records)
    shown = rows_shown(text)
    assert len(shown) == len(records) and shown[-1] > 0
    assert shown == sorted(shown), "an earlier record keeps rows a later one lost"
    if capability is Capability.MINIMAL:
        assert shown[0] == 0  # the 1,500-token budget cannot hold every sample
    for number, kept in enumerate(shown, start=1):
        # the count of rows not shown follows the rows actually shown
        assert (
            f"{20 - kept} more rows not shown; name all 20 as ${{{records[number - 1].variable}}}"
            in text
        )


def test_parts_grow_into_the_budgets_slack() -> None:
    question = " ".join(
        f"clause {i} of a long question about films and directors" for i in range(40)
    )
    assert count_tokens(question) > 250  # over the question's usual limit
    history = [
        RoundNote(
            round=i,
            hypothesis=f"step {i}: follow the director of each film found so far",
            plan=GaslPlan(plan_id=f"p{i}", commands=[f'NEIGHBORS a VIA "r{i}" AS b{i}']),
            outcome=f"NEIGHBORS success {i}",
        )
        for i in range(8)
    ]
    assert count_tokens(history_text(history)) > 250  # over the history's usual limit
    text = prompt(Capability.STANDARD, question=question, history=history)
    assert question in text and "round 0:" in text and "…(cut)" not in text
    # the minimal budget cannot hold it all, and still fits (checked in prompt())
    assert "…(cut)" in prompt(Capability.MINIMAL, question=question, history=history)


@pytest.mark.parametrize("capability", list(Capability))
def test_a_gasl_error_is_shown_once_with_its_hint(capability: Capability) -> None:
    error = (
        "line 2, column 34: expected one of AS; got end of input. Hint: NEIGHBORS needs "
        '`AS <name>` at the end. Usage: NEIGHBORS <endpoint> [VIA "<keyword>"] AS <name>'
    )
    records = [
        *hop_records(hops=2),
        ExecutionRecord(command='NEIGHBORS ${ans} VIA "a" LIMIT 20', status="error", error=error),
    ]
    plan = GaslPlan(plan_id="p0", commands=[r.command for r in records])
    history = [
        RoundNote(round=0, hypothesis="h", plan=plan, outcome=outcome_digest(records, error))
    ]
    text = prompt(
        capability,
        records=records,
        error=error,
        history=history,
        question="Which films? " * 80,
    )
    assert text.count("column 34") == 1
    assert "Hint: NEIGHBORS needs `AS <name>` at the end" in text
    if capability is Capability.STANDARD:  # tighter budgets cut the history line first
        assert "success 20, NEIGHBORS error 0 (see LAST RESULTS)" in text


def test_a_worker_failure_no_record_holds_is_shown() -> None:
    text = prompt(Capability.MINIMAL, records=[], error="the graph store is unreachable")
    assert text.count("the graph store is unreachable") == 1


def test_heads_that_cannot_all_fit_leave_the_earliest_out_and_keep_the_answer() -> None:
    records = [
        ExecutionRecord(
            command=f'FIND nodes WHERE description CONTAINS "{"long words " * 12}{i}" AS v{i}',
            status="success",
            count=5,
            rows=[film(i, 0)] * 5,
            variable=f"v{i}",
        )
        for i in range(40)
    ]
    text = prompt(Capability.MINIMAL, records=records)
    assert "40. [success]" in text and "earlier commands not shown" in text
    assert "1. [success]" not in text


def test_a_records_hint_is_shown_when_its_error_does_not_hold_it() -> None:
    hint = "no item has field(s) year; fields: id, entity_type, release_year"
    records = [
        ExecutionRecord(
            command="FILTER films WHERE year = 1999 AS ans",
            status="success",
            variable="ans",
            detail={"hint": hint},
        )
    ]
    for capability in Capability:
        assert prompt(capability, records=records, question="Which? " * 300).count(hint) == 1
