"""Reading round answers liberally, and the round prompt's token budget."""

from __future__ import annotations

import pytest
from postel.messages.gasl import ExecutionRecord, GaslPlan
from postel.messages.pipeline import RoundNote
from postel.services.gasl.parser import parse_one
from postel.services.llm.ask import AnswerError
from postel.services.llm.tokens import count_tokens
from postel.services.planner import read_round_answer
from postel.services.planner.round_prompt import BUDGETS, RoundInputs, round_messages
from postel.services.prompts import Capability
from postel.services.prompts.templates import GASL_CHEAT_SHEET, GASL_MORE_COMMANDS


def test_a_bare_complete_line_is_the_answer() -> None:
    read = read_round_answer("COMPLETE: 371 people")
    assert read.decision == "complete" and read.answer == "371 people" and read.actions == []
    prose = read_round_answer("We have enough.\nCOMPLETE: Robin Lee and Briana Moreland")
    assert prose.answer == "Robin Lee and Briana Moreland"


def test_complete_written_into_the_decision_field() -> None:
    read = read_round_answer('{"evaluation": "done", "decision": "COMPLETE: 42"}')
    assert read.decision == "complete" and read.answer == "42"
    kept = read_round_answer('{"decision": "done", "answer": [1, 2]}')
    assert kept.decision == "complete" and kept.answer == [1, 2]


def test_actions_are_ranked_and_plans_read_in_any_shape() -> None:
    text = """```json
    {"decision": "Refine", "evaluation": "too many", 'next_actions': [
      {"action": "refine", "confidence": 0.4, "plan": ["COUNT people AS n"]},
      {"action": "pivot", "confidence": 90, "plan": {"why": "narrow", "plan_id": "x",
        "commands": ["FIND nodes WHERE id = \\"ROBIN LEE\\" AS lee"],
        "config": {"stop_on_error": false}}},
      {"confidence": 0.7, "plan": "FIND nodes AS a; COUNT a AS n"},
      {"confidence": 0.99, "plan": {"commands": []}},
    ]}
    ```"""
    read = read_round_answer(text)
    assert read.decision == "refine"
    assert [a.confidence for a in read.actions] == [0.9, 0.7, 0.4]
    best = read.actions[0]
    assert best.action == "pivot" and best.why == "narrow" and not best.config.stop_on_error
    assert read.actions[1].commands == ["FIND nodes AS a; COUNT a AS n"]
    assert read.actions[1].action == "refine"  # inherits the decision


def test_a_top_level_plan_is_one_action() -> None:
    read = read_round_answer('{"decision": "continue", "plan": ["COUNT people AS n"]}')
    assert read.actions[0].commands == ["COUNT people AS n"]
    assert read.actions[0].confidence == 0.5


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("I am not sure what to do.", "not one JSON object"),
        ('{"decision": "complete", "answer": null}', "needs the final answer"),
        ('{"decision": "continue", "next_actions": []}', "next_actions is empty"),
        ('{"decision": "pivot", "next_actions": [{"plan": {}}]}', "next_actions[0]"),
        # the template echoed: the format's list of decisions, a round label from HISTORY
        (
            '{"decision": "continue|refine|pivot|complete", "commands": ["COUNT x AS n"]}',
            "template echoed",
        ),
        ('{"decision": "plan t0-r0: FIND nodes AS x},", "answer": "x"}', "template echoed"),
    ],
)
def test_unusable_answers_say_why(text: str, error: str) -> None:
    with pytest.raises(AnswerError, match=error.replace("[", r"\[")):
        read_round_answer(text)


def test_the_round_prompt_fits_its_budget_and_keeps_the_newest() -> None:
    long_row = {"id": "X" * 50, "entity_type": "PERSON", "description": ["d" * 500] * 4}
    records = [
        ExecutionRecord(
            command=f'FIND nodes WHERE entity_type = "T{i}" AS v{i}',
            status="success",
            count=100,
            rows=[long_row] * 20,
            variable=f"v{i}",
        )
        for i in range(12)
    ]
    history = [
        RoundNote(
            round=i,
            hypothesis=f"hypothesis number {i} " * 10,
            plan=GaslPlan(plan_id=f"p{i}", commands=["COUNT a AS n"] * 5),
            outcome="FIND success 100, " * 10,
        )
        for i in range(20)
    ]
    summary = {
        "nodes": 10,
        "edges": 5,
        "entity_types": {f"TYPE {i}": 100 - i for i in range(80)},
        "node_attributes": {f"attr{i}": "text" for i in range(30)},
        "edge_attributes": {"weight": "number"},
        "relation_keywords": {f"kw{i}": 1 for i in range(30)},
        "example_ids": {"TYPE 0": ["A", "B"]},
    }
    state = {"version": 3, "keys": [{"key": "k", "type": "LIST", "size": 9, "sample": [long_row]}]}
    for capability in Capability:
        messages = round_messages(
            capability,
            RoundInputs(
                task_index=0,
                question="Who? " * 200,
                graph_summary=summary,
                state_summary=state,
                history=history,
                records=records,
                error=None,
                round_number=20,
                max_rounds=25,
                problem="your previous answer could not be used: no JSON",
            ),
        )
        text = "\n".join(m.content for m in messages)
        assert count_tokens(text) <= BUDGETS[capability]
        assert "round 19:" in text and "round 0:" not in text
        assert "TYPE 0 100" in text and "no JSON" in text and "plan 21 of at most 25" in text


def test_every_command_the_round_prompt_teaches_parses() -> None:
    """The cheat sheet and the rest of GASL shown to capable models are real GASL."""
    taught = [line for line in GASL_CHEAT_SHEET if not line.startswith(("Operators:", "COMPLETE"))]
    for line in [*taught, *GASL_MORE_COMMANDS]:
        parse_one(line)


def test_only_capable_models_are_shown_the_rest_of_gasl() -> None:
    """The whole command list goes to models with a 3,000-token round budget; the 2,048-token
    local model gets the short cheat sheet alone."""
    round_ = RoundInputs(question="Who?", task_index=0, round_number=0, max_rounds=3)
    shown = {
        capability: "\n".join(m.content for m in round_messages(capability, round_))
        for capability in Capability
    }
    assert "MORE GASL" in shown[Capability.STANDARD]
    assert all(line in shown[Capability.STANDARD] for line in GASL_MORE_COMMANDS)
    for capability in (Capability.MINIMAL, Capability.LIMITED):
        assert "GRAPHWALK" not in shown[capability] and "FIND nodes" in shown[capability]
