"""Graph questions end to end on the embedded runtime: task plan, HDT rounds between the
planner and gasl workers, the answer written and validated. The model replays cassettes
whose entries match on what the prompt must contain, so a cassette that is served to the
end proves the prompt carried it (a parse error, an empty result, the round cap)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from postel.infra.cli.demo import evidence_lines
from postel.infra.cli.jobs import format_event
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.settings import Settings
from postel.infra.store.graphs import GraphRegistry
from postel.infra.store.stores import GaslStateStore
from postel.messages import JobOptions
from postel.services.gasl.loaders import DEMO_GRAPH
from postel.services.prompts import Capability
from postel.services.step import parse_command_lines
from support.spy import Spy


@pytest.fixture
async def sample_graph(redis_url: str) -> AsyncIterator[str]:
    async with Client(redis_url) as client:
        await GraphRegistry(client.pool, client.keyspace).add("mmwr", DEMO_GRAPH)
    yield "mmwr"


async def ask(
    redis_url: str, settings: Settings, spy: Spy, type_: str, **options: Any
) -> tuple[Any, list[Any], str]:
    model = Model(spy, Capability.STANDARD)  # type: ignore[arg-type]
    async with (
        LocalSystem(settings, redis_url=redis_url, resources={RESOURCE: model}),
        Client(redis_url, settings) as client,
    ):
        job_id = await client.submit(
            "How many people are in the graph?",
            type=type_,
            graph="mmwr",
            options=JobOptions(**options),
        )
        result = await client.result(job_id, timeout=60)
        return result, await client.events.read(job_id), job_id


async def test_an_invalid_gasl_command_is_corrected_from_the_parse_error(
    redis_url: str, settings: Settings, sample_graph: str
) -> None:
    spy = Spy("graph_fix_parse_error.json")
    result, events, _ = await ask(redis_url, settings, spy, "int")
    assert result == 371
    assert spy.inner.remaining == 0
    corrected = spy.prompts_with("expected one of AS, LIMIT, WHERE; got 'WERE'")
    assert corrected and "line 1, column 12" in corrected[0]
    gasl = [e.round for e in events if e.worker == "gasl" and e.status == "completed"]
    assert gasl == [0, 1]
    stages = [e.worker for e in events if e.status == "completed"]
    assert {"intent", "planner", "gasl", "validator"} <= set(stages)
    assert "generator" not in stages, "an int answer goes straight to the validator"


async def test_a_pivot_after_an_empty_result(
    redis_url: str, settings: Settings, sample_graph: str
) -> None:
    spy = Spy("graph_pivot_after_empty.json")
    result, _events, _ = await ask(redis_url, settings, spy, "int")
    assert result == 371
    assert spy.inner.remaining == 0
    assert spy.prompts_with('[empty] FIND nodes WHERE entity_type = "AUTHOR"')


async def test_the_round_cap_hands_incomplete_evidence_to_the_generator(
    redis_url: str, settings: Settings, sample_graph: str
) -> None:
    spy = Spy("graph_round_cap.json")
    result, events, _ = await ask(redis_url, settings, spy, "document", max_rounds=2)
    assert result["sections"][0]["elements"][0]["text"] == "People in the graph"
    assert spy.inner.remaining == 0
    rounds = [e.round for e in events if e.worker == "gasl" and e.status == "completed"]
    assert rounds == [0, 1], "no round past the cap"
    written = spy.prompts_with("INCOMPLETE: the analysis stopped at its round cap")
    assert (written and "BRIANA MORELAND" in written[0]) or "PERSON" in written[0]


async def test_a_task_override_of_expected_formats_reaches_the_generation_prompt(
    redis_url: str, settings: Settings, sample_graph: str
) -> None:
    spy = Spy("graph_task_override.json")
    result, events, _ = await ask(redis_url, settings, spy, "document")
    assert result["sections"][0]["content_type"] == "table"
    generation = spy.prompts_with("You write documents as JSON only.")
    assert len(generation) == 1
    assert '"expectedFormats": ["csv"]' in generation[0]
    assert '"pdf"' not in generation[0], "the job's formats are overridden for this task"
    intent_prompt = spy.requests[0]
    assert intent_prompt.messages[0].content.startswith("You analyse requests")
    planned = [e for e in events if e.type == "task.planned" and e.status == "completed"]
    assert len(planned) == 2, "one task.planned per task"


async def test_events_show_each_round_decision_and_commands_and_the_record_sums_model_use(
    redis_url: str, settings: Settings, sample_graph: str
) -> None:
    spy = Spy("graph_fix_parse_error.json")
    _result, events, job_id = await ask(redis_url, settings, spy, "int")
    planner = [
        (e.type, e.decision) for e in events if e.worker == "planner" and e.status == "completed"
    ]
    assert planner == [
        ("intent.analyzed", ""),
        ("task.planned", "continue"),
        ("gasl.plan_executed", "refine"),
        ("gasl.plan_executed", "complete"),
    ]
    rationales = [e.rationale for e in events if e.worker == "planner" and e.status == "completed"]
    assert rationales[0].startswith("task plan (model): t1 graph_analysis")
    assert rationales[1] == "People are PERSON nodes."
    gasl = [
        parse_command_lines(e.commands)
        for e in events
        if e.worker == "gasl" and e.status == "completed"
    ]
    assert gasl[0] == [("error", 0, 'FIND nodes WERE entity_type = "PERSON" AS people')]
    assert gasl[1] == [
        ("success", 371, 'FIND nodes WHERE entity_type = "PERSON" AS people'),
        ("success", 371, "COUNT people AS n"),
    ]
    [validator] = [
        e for e in events if e.type == "validation.requested" and e.status == "completed"
    ]
    assert validator.decision == "accepted"
    async with Client(redis_url, settings) as client:
        record = await client.status(job_id)
        rounds = await GaslStateStore(client.pool, client.keyspace, settings.job_ttl_s).rounds(
            job_id
        )
    handled = [e for e in events if e.status == "completed"]
    assert record.llm_calls == sum(e.llm_calls for e in handled) == len(spy.requests)
    assert record.prompt_tokens == sum(e.prompt_tokens for e in handled) > 0
    assert record.completion_tokens == sum(e.completion_tokens for e in handled) > 0
    assert [(r.task_index, r.round) for r in rounds] == [(0, 0), (0, 1)]
    assert rounds[1].records[0].count == 371 and rounds[1].records[0].provenance
    # `postel events` and `postel demo` print the same: decisions, commands, evidence
    printed = "\n".join(format_event(e) for e in events)
    assert "refine: see results" in printed
    assert re.search(r"success +371 +COUNT people AS n", printed)
    evidence = "\n".join(evidence_lines(rounds))
    assert evidence.startswith("task 0, round 1 (Fix the WHERE keyword.)")
    assert re.search(r"success +371 +FIND nodes WHERE", evidence)
    assert "sources: " in evidence and '"id": "' in evidence


async def test_a_graph_stored_on_ladybug_gives_the_same_answer(
    redis_url: str, settings: Settings
) -> None:
    """The graph on the other engine: the planner's worker reads its summary and the gasl
    worker fetches the store into its machine's cache and runs the rounds on it, read-only."""
    async with Client(redis_url) as client:
        registry = GraphRegistry(client.pool, client.keyspace, storage=settings.graph_storage())
        info = await registry.add("mmwr", DEMO_GRAPH, engine="ladybug")
    assert info.engine == "ladybug"
    spy = Spy("graph_fix_parse_error.json")
    result, events, _ = await ask(redis_url, settings, spy, "int")
    assert result == 371
    assert spy.inner.remaining == 0
    assert [e.round for e in events if e.worker == "gasl" and e.status == "completed"] == [0, 1]
    assert list((settings.state_dir / "graph-cache").rglob("graph.lbdb"))
