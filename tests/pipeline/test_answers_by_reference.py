"""Answers by reference and the empty rules through the real bus: the five workers on the
embedded Redis, the MMWR sample graph, and a model whose answer depends only on its prompt."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import pytest
from postel.infra.client.client import Client, JobFailedError
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.settings import Settings
from postel.infra.store.graphs import GraphRegistry
from postel.services.gasl import GaslExecutor, NetworkXAdapter
from postel.services.gasl.loaders import DEMO_GRAPH
from postel.services.llm import LLMRequest, ScriptedClient
from postel.services.prompts import Capability

from postel.testing.stage_model import StageModel, answering, intent_of, one_task

FORTY = 'FIND nodes WHERE entity_type = "PERSON" LIMIT 40 AS ans'
INTENT = intent_of(
    "Name 40 people in the graph.",
    "list",
    intent="List people.",
    primaryGoal="the names of 40 people",
)


def plan(*commands: str) -> str:
    return json.dumps(
        {
            "evaluation": "nothing has run yet",
            "decision": "continue",
            "hypothesis": "people are PERSON nodes",
            "answer": None,
            "next_actions": [
                {
                    "action": "continue",
                    "confidence": 0.9,
                    "plan": {"why": "w", "commands": commands},
                }
            ],
        }
    )


def graph_model(prompts: list[str]) -> Callable[[LLMRequest], str]:
    """Plans the FIND, then completes by naming the variable the prompt says holds all 40."""

    def rounds(request: LLMRequest) -> str:
        if "name all 40 as ${ans}" in request.prompt_text():
            return "COMPLETE: ${ans}"
        return plan(FORTY)

    model = StageModel(INTENT, one_task("Name 40 PERSON nodes", "graph_analysis"), rounds)

    def respond(request: LLMRequest) -> str:
        prompts.append(request.prompt_text())
        return model(request)

    return respond


@pytest.fixture
async def sample_graph(redis_url: str) -> AsyncIterator[str]:
    async with Client(redis_url) as client:
        await GraphRegistry(client.pool, client.keyspace).add("mmwr", DEMO_GRAPH)
    yield "mmwr"


def system_with(respond: Callable[[LLMRequest], str], settings: Settings, url: str) -> LocalSystem:
    model = Model(ScriptedClient(responder=respond), Capability.STANDARD)
    return LocalSystem(settings, redis_url=url, resources={RESOURCE: model})


async def test_complete_by_reference_answers_with_all_forty_names(
    redis_url: str, settings: Settings, sample_graph: str
) -> None:
    prompts: list[str] = []
    async with (
        system_with(graph_model(prompts), settings, redis_url),
        Client(redis_url, settings) as client,
    ):
        job_id = await client.submit(
            "Name 40 people in the graph.", type="list[str]", graph=sample_graph
        )
        result = await client.result(job_id, timeout=60)
        events = await client.events.read(job_id)
    executor = GaslExecutor(NetworkXAdapter.from_graphml(DEMO_GRAPH), max_rows=None)
    [record] = (await executor.execute_plan({"plan_id": "oracle", "commands": [FORTY]})).records
    assert result == [row["id"] for row in record.rows] and len(result) == 40
    [round_prompt] = [p for p in prompts if "name all 40 as ${ans}" in p]
    shown = round_prompt.split("LAST RESULTS", 1)[1]
    assert sum(name in shown for name in result) < 10, "the model saw a few names, not all"
    decisions = [e.decision for e in events if e.worker == "planner" and e.status == "completed"]
    assert decisions[-1] == "complete"


HOLLOW = {
    "sections": [
        {"id": "a", "content_type": "code_block", "elements": [{"language": "python", "code": ""}]},
        {"id": "b", "content_type": "code_block", "elements": [{"language": "text", "code": " "}]},
    ]
}


def hollow_writer(prompts: list[str]) -> Callable[[LLMRequest], str]:
    """A writer that fills the document's shape and says nothing, however often it is told."""

    intent = dict(INTENT, dataType="document")
    model = StageModel(intent, one_task("Write about people"), answering(json.dumps(HOLLOW)))

    def respond(request: LLMRequest) -> str:
        prompts.append(request.prompt_text())
        return model(request)

    return respond


async def test_an_empty_document_is_repaired_then_fails_with_the_reason(
    redis_url: str, settings: Settings
) -> None:
    prompts: list[str] = []
    async with (
        system_with(hollow_writer(prompts), settings, redis_url),
        Client(redis_url, settings) as client,
    ):
        job_id = await client.submit("Write about the people.", type="document")
        with pytest.raises(JobFailedError) as failed:
            await client.result(job_id, timeout=60)
        record = await client.status(job_id)
        events = await client.events.read(job_id)
    assert record.status == "failed" and record.failure == "validation_failed"
    assert record.error is not None
    assert "says nothing: the document has sections but no text in any of them" in record.error
    assert "after 2 repair(s)" in record.error
    assert "validation_failed" in str(failed.value)
    verdicts = [e.decision for e in events if e.worker == "validator" and e.status == "completed"]
    assert verdicts == ["repair", "repair", "rejected"]
    repairs = [p for p in prompts if "<<<BEGIN VALIDATION ERROR>>>" in p]
    assert len(repairs) == 2 and "no text in any of them" in repairs[0]
