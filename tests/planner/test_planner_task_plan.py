"""The task plan: one call, one repair, the default plan, normalisation, and task-level
intent overrides carried to JobProgress.task_intent()."""

from __future__ import annotations

import json
from typing import Any

from postel.messages.intent import Intent
from postel.messages.job import JobRequest
from postel.messages.pipeline import IntentAnalyzed, TaskPlanned, decode_message
from postel.messages.task import JobProgress
from postel.services.llm import LLMRequest, ScriptedClient
from postel.services.planner import on_intent_analyzed, plan_tasks, read_task_plan
from postel.services.prompts import Capability

SUMMARY: dict[str, Any] = {
    "nodes": 3,
    "edges": 2,
    "entity_types": {"PERSON": 2, "ORGANIZATION": 1},
    "node_attributes": {"id": "text", "entity_type": "text"},
    "edge_attributes": {"weight": "number"},
    "relation_keywords": {},
    "example_ids": {"PERSON": ["ROBIN LEE"]},
}

GOOD = {
    "overview": "Find co-authors, then write a CSV.",
    "tasks": [
        {"id": "t1", "objective": "List ROBIN LEE's co-authors", "kind": "graph_analysis"},
        {
            "id": "t2",
            "objective": "Write them as CSV",
            "kind": "generation",
            "expectedFormats": ["csv"],
            "qualityRequirements": {"accuracyThreshold": 0.95, "completenessThreshold": 0.9},
        },
    ],
}


class Script:
    """Answers in order and keeps every prompt it was sent."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []
        self.client = ScriptedClient(responder=self.respond)

    def respond(self, request: LLMRequest) -> str:
        self.prompts.append(request.prompt_text())
        return self.answers.pop(0)


def intent() -> Intent:
    return Intent(
        detected_language="en",
        normalized_request="List the co-authors of Robin Lee as a PDF.",
        intent="co-authors of Robin Lee",
        primary_goal="know Robin Lee's co-authors",
        data_type="analysis",
        expected_formats=["pdf"],
    )


def request(graph: str | None = "mmwr") -> JobRequest:
    return JobRequest(prompt="Who co-wrote reports with Robin Lee? CSV please.", graph=graph)


async def test_a_good_answer_is_used_as_given() -> None:
    script = Script(json.dumps(GOOD))
    result = await plan_tasks(script.client, request(), intent(), Capability.STANDARD, SUMMARY)
    assert result.source == "model" and result.notes == []
    assert [t.kind for t in result.plan.tasks] == ["graph_analysis", "generation"]
    assert result.plan.tasks[1].override.expected_formats == ["csv"]
    assert len(script.prompts) == 1
    prompt = script.prompts[0]
    assert "PERSON 2" in prompt and '"expectedFormats": ["pdf"]' in prompt
    assert "Robin Lee? CSV please." in prompt


async def test_a_malformed_answer_is_repaired_with_its_error() -> None:
    broken = {"tasks": [{"id": "t1", "objective": "List co-authors", "kind": "magic"}]}
    script = Script("Sure! " + json.dumps(broken), "```json\n" + json.dumps(GOOD) + "\n```")
    result = await plan_tasks(script.client, request(), intent(), Capability.MINIMAL, SUMMARY)
    assert result.source == "repaired"
    assert len(result.plan.tasks) == 2
    assert "tasks[0].kind must be" in script.prompts[1]
    assert "'magic'" in script.prompts[1]
    assert any("first answer unusable" in note for note in result.notes)


async def test_garbage_twice_falls_back_to_the_default_plan() -> None:
    with_graph = Script("no idea", "[1, 2")
    result = await plan_tasks(with_graph.client, request(), intent(), Capability.LIMITED, SUMMARY)
    assert result.source == "default"
    assert [t.kind for t in result.plan.tasks] == ["graph_analysis"]
    # the request's own words, not the model's normalized request
    assert result.plan.tasks[0].objective == request().prompt
    assert "default plan" in result.notes[0] and "default plan" in result.plan.overview

    incoming = IntentAnalyzed(
        job_id="job1",
        message_id="job1:intent",
        request=request(),
        progress=JobProgress(intent=intent()),
    )
    step = await on_intent_analyzed(
        incoming, Script("no idea", "[1, 2").client, Capability.LIMITED, SUMMARY
    )
    # the event says the model's plan was unusable, never shows the default as the model's
    assert step.figures.rationale.startswith(
        "task plan unusable, fell back to the default plan: analyse graph_analysis: "
    )

    without = Script("no idea", "still none")
    result = await plan_tasks(without.client, request(None), intent(), Capability.LIMITED, None)
    assert [t.kind for t in result.plan.tasks] == ["generation"]
    assert "No graph is attached" in without.prompts[0]


async def test_task_override_survives_into_task_intent_over_the_wire() -> None:
    script = Script(json.dumps(GOOD))
    incoming = IntentAnalyzed(
        job_id="job1",
        message_id="job1:intent",
        request=request(),
        progress=JobProgress(intent=intent()),
    )
    notes: list[str] = []
    step = await on_intent_analyzed(
        incoming, script.client, Capability.STANDARD, SUMMARY, notes=notes
    )
    [planned] = step.messages
    assert isinstance(planned, TaskPlanned) and planned.message_id == "job1:plan"
    assert step.figures.rationale.startswith("task plan (model): ") and step.figures.decision == ""
    wire = decode_message(planned.model_dump_json())
    assert isinstance(wire, TaskPlanned)
    first = wire.progress.task_intent()
    assert first.expected_formats == ["pdf"]  # task 1 inherits the job's intent
    second = wire.progress.model_copy(update={"task_index": 1}).task_intent()
    assert second.expected_formats == ["csv"]
    assert second.quality_requirements.accuracy_threshold == 0.95
    assert second.data_type == "analysis"  # not overridden


def test_normalisation_without_a_graph_and_liberal_overrides() -> None:
    answer = {
        "tasks": [
            {"objective": "Write a summary", "kind": "Generation", "dataType": "poetry"},
            {"objective": "Query the graph", "kind": "graph"},
            {"objective": "Also add a table", "kind": "write", "expectedFormats": ".CSV, pdf"},
        ]
    }
    plan, notes = read_task_plan(json.dumps(answer), has_graph=False)
    assert [(t.kind, t.id) for t in plan.tasks] == [("generation", "t3")]
    assert plan.tasks[0].objective == "Write a summary\nAlso add a table"
    assert plan.tasks[0].override.expected_formats == ["csv", "pdf"]
    assert any("dataType" in n or "data_type" in n for n in notes)
    assert any("no graph" in n for n in notes) and any("merged" in n for n in notes)

    plan, notes = read_task_plan(json.dumps(answer), has_graph=True)
    assert [t.kind for t in plan.tasks] == ["graph_analysis", "generation"]
    assert any("moved" in n for n in notes)


def test_duplicate_ids_are_made_unique() -> None:
    answer = {
        "tasks": [
            {"id": "a", "objective": "one", "kind": "graph_analysis"},
            {"id": "a", "objective": "two", "kind": "graph_analysis"},
        ]
    }
    plan, _ = read_task_plan(json.dumps(answer), has_graph=True)
    assert [t.id for t in plan.tasks] == ["a", "a-2"]
