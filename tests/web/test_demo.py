"""`postel demo`'s run on the real workers (the story model standing in for a model): it
prints where to watch the job live, each round's decision and commands, and ends with the
evidence GASL found, with its sources."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from pathlib import Path
from typing import get_args

import httpx
from click.testing import CliRunner
from postel.infra.cli.demo import (
    FAILURES,
    GRAPH_NAME,
    INTENT_LABELS,
    LOCAL_QUESTION,
    OWN_DASHBOARD,
    dashboard,
    evidence_lines,
    groundless_line,
    register_sample_graph,
    run_demo,
    schema_lines,
    verdict_lines,
)
from postel.infra.cli.main import main
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.logging import configure_logging
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.settings import Settings
from postel.infra.store.graphs import GraphRegistry
from postel.infra.store.redis_server import EmbeddedRedis, free_port
from postel.infra.store.stores import GaslRound
from postel.infra.web.server import WebServer
from postel.messages.gasl import ExecutionRecord, GaslPlan
from postel.messages.intent import Intent
from postel.messages.pipeline import FailureStatus
from postel.services.gasl.loaders import DEMO_GRAPH
from postel.services.linking.names import link
from postel.services.llm import LLMRequest, ScriptedClient
from postel.services.prompts import Capability
from support.story_model import respond


async def test_the_demo_shows_its_page_its_rounds_and_the_evidence(
    story_system: LocalSystem, redis_url: str, settings: Settings
) -> None:
    port = free_port()
    here = settings.model_copy(update={"redis_url": redis_url, "web_port": port})
    printed: list[str] = []
    outcome = await run_demo(
        here, printed.append, max_rounds=3, max_tokens=400, timeout=60, mission=True
    )
    text = "\n".join(printed)
    assert outcome.record.status == "completed"
    assert f"watch it live: http://127.0.0.1:{port}/jobs/{outcome.record.job_id}" in printed
    assert OWN_DASHBOARD in printed, "the link dies with the demo, and the demo says so"
    assert re.search(r"planner .*gasl\.plan_executed round 0.*refine: The FIND did not parse", text)
    assert re.search(r"\n {10}success +371  FIND nodes WHERE", text)
    # each stage as a person reads it: the intent's nine fields, the task plan, each round's
    # plan with what its commands found, and the validator's verdict
    assert re.search(r"\n {10}language: +en\n", text)
    for label in INTENT_LABELS.values():
        assert re.search(rf"\n {{10}}{re.escape(label)}: ", text), label
    assert "primary goal:          a short report on the strongest collaborations" in text
    assert "          task plan (model): t1 graph_analysis: " in text
    assert "          plan t0-r1: group people by the report sections they appear in" in text
    assert re.search(r"\n {14}found: \{.*\"id\": \"", text)
    assert re.search(r"\n {14}error: line 1, column 12: .*got 'WERE'", text)
    assert "          validation: the document was accepted" in text
    assert text.count("FIND nodes WERE") == 1  # a round's commands are listed once
    evidence = "\n".join(evidence_lines(outcome.rounds))
    assert "task 0, round 1 (group people by the report sections they appear in)" in evidence
    assert re.search(r"success +17  SELECT by_chunk WHERE LEN value >= 2 AS shared", evidence)
    assert "sources: chunk-" in evidence


def test_every_way_to_fail_has_words() -> None:
    assert set(FAILURES) == set(get_args(FailureStatus))


def test_the_demo_names_every_field_of_the_intent() -> None:
    assert list(INTENT_LABELS) == list(Intent.model_fields)


HOLLOW = {
    "sections": [
        {"id": "a", "content_type": "code_block", "elements": [{"language": "python", "code": ""}]},
        {"id": "b", "content_type": "code_block", "elements": [{"language": "python", "code": ""}]},
    ]
}


def hollow(request: LLMRequest) -> str:
    """The story model's analysis, then a writer whose document is two empty code blocks
    (what the bundled model once wrote, and the demo once called completed)."""
    if request.messages[0].content.startswith("You write documents"):
        return json.dumps(HOLLOW)
    return respond(request)


async def test_the_demo_says_plainly_that_an_empty_document_failed(
    redis_url: str, settings: Settings
) -> None:
    async with Client(redis_url, settings) as client:
        await GraphRegistry(client.pool, client.keyspace).add("mmwr", DEMO_GRAPH)
    model = Model(ScriptedClient(responder=hollow), Capability.STANDARD)
    here = settings.model_copy(update={"redis_url": redis_url, "web_port": free_port()})
    async with LocalSystem(settings, redis_url=redis_url, resources={RESOURCE: model}):
        outcome = await run_demo(
            here, [].append, max_rounds=3, max_tokens=400, timeout=60, mission=True
        )
    record = outcome.record
    assert record.status == "failed" and record.failure == "validation_failed"
    verdict = verdict_lines(record)
    assert verdict[0] == (
        f"job {record.job_id} FAILED: the output did not pass validation, repairs included "
        "(validation_failed)."
    )
    assert verdict[1].startswith("reason: the output says nothing: the document has sections")
    assert "completed" not in "\n".join(verdict)


def unplanned(request: LLMRequest) -> str:
    """The story model, except that its task plans are unusable."""
    if request.messages[0].content.startswith("You plan work"):
        return "first list the authors, then write"
    return respond(request)


async def test_the_demo_says_when_it_fell_back_and_links_only_to_its_own_dashboard(
    redis_url: str, settings: Settings, tmp_path: Path
) -> None:
    """Another system's dashboard on POSTEL_WEB_PORT (its own Redis) is not linked to: the
    demo serves its own on a free port and says why."""
    async with Client(redis_url, settings) as client:
        await GraphRegistry(client.pool, client.keyspace).add("mmwr", DEMO_GRAPH)
    other_redis = EmbeddedRedis(free_port(), tmp_path / "other")
    await other_redis.start()
    try:
        async with WebServer(settings, other_redis.url, "127.0.0.1", 0) as other_web:
            taken = int(other_web.url.rstrip("/").rsplit(":", 1)[1])
            here = settings.model_copy(update={"redis_url": redis_url, "web_port": taken})
            model = Model(ScriptedClient(responder=unplanned), Capability.STANDARD)
            printed: list[str] = []
            async with LocalSystem(settings, redis_url=redis_url, resources={RESOURCE: model}):
                outcome = await run_demo(
                    here, printed.append, max_rounds=3, max_tokens=400, timeout=60, mission=True
                )
                [link] = [line.split()[-1] for line in printed if line.startswith("watch it live:")]
                assert f":{taken}/" not in link
                assert f"port {taken} serves another system's dashboard" in "\n".join(printed)
    finally:
        await other_redis.stop()
    job_id = outcome.record.job_id
    assert link.endswith(f"/jobs/{job_id}")
    fallback = (
        "          task plan unusable, fell back to the default plan: analyse graph_analysis: "
    )
    assert any(line.startswith(fallback) for line in printed)


async def test_the_demo_links_to_the_running_systems_dashboard_when_it_reads_the_same_redis(
    redis_url: str, settings: Settings, web: WebServer
) -> None:
    async with Client(redis_url, settings) as client:
        job_id = await client.submit("hello")
    port = int(web.url.rstrip("/").rsplit(":", 1)[1])
    here = settings.model_copy(update={"web_port": port})
    async with contextlib.AsyncExitStack() as stack:
        assert await dashboard(here, redis_url, job_id, stack) == (web.url, "")
        # a job that Redis does not hold: that server is another system's
        url, note = await dashboard(here, redis_url, "0" * 32, stack)
        assert url is not None and url != web.url
        assert (
            note
            == f"port {port} serves another system's dashboard, not this demo's; {OWN_DASHBOARD}"
        )
        async with httpx.AsyncClient() as http:  # the demo's own server reads its Redis
            assert (await http.get(f"{url}api/jobs/{job_id}")).status_code == 200


async def test_the_demo_command_keeps_log_lines_off_its_trace(
    story_system: LocalSystem, redis_url: str, tmp_path: Path
) -> None:
    """The system logs to demo.log under the state dir; the terminal shows the story only."""
    env = {
        "POSTEL_REDIS_URL": redis_url,
        "POSTEL_STATE_DIR": str(tmp_path / "state"),
        "POSTEL_WEB_PORT": str(free_port()),
        "POSTEL_LOG_LEVEL": "INFO",
    }
    # the workers of this process log on this test's stderr until the demo takes logging
    # over (in a real demo there are none yet)
    configure_logging("INFO")
    try:
        ran = await asyncio.to_thread(
            CliRunner().invoke, main, ["demo", "--timeout", "60", "--mission"], env=env
        )
    finally:
        configure_logging("WARNING")  # the rest of the session logs on stderr again
    assert ran.exit_code == 0, ran.output
    log = tmp_path / "state" / "demo.log"
    assert ran.output.splitlines()[0] == f"logs: {log}"
    assert not [line for line in ran.output.splitlines() if line.startswith("{")]
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert any(entry["event"] == "web server started" for entry in logged)
    assert "job " in ran.output and " completed. The validated document" in ran.output


def test_a_document_resting_on_no_evidence_is_said_to() -> None:
    """Every command of every round failed (what the bundled model's plans do): the demo
    warns that the document rests on nothing found in the graph."""
    plan = GaslPlan(plan_id="t0-r0", commands=["MERGE a AND b AS c"])
    failed = ExecutionRecord(command="MERGE a AND b AS c", status="binding_failure")
    found = ExecutionRecord(command="FIND nodes AS n", status="success", count=3)
    rounds = [GaslRound(task_index=0, round=r, plan=plan, records=[failed]) for r in (0, 1)]
    assert groundless_line(rounds) == (
        "WARNING: not one GASL command of the 2 round(s) succeeded: the document rests on "
        "nothing found in the graph."
    )
    rounds[1].records.append(found)
    assert groundless_line(rounds) is None
    assert groundless_line([]) is None


async def test_the_demo_prints_the_cards_chain_that_keeps_only_people(
    redis_url: str, settings: Settings
) -> None:
    here = settings.model_copy(update={"redis_url": redis_url})
    async with Client(redis_url, here) as client:
        await register_sample_graph(client)
        aids = await GraphRegistry(client.pool, client.keyspace).aids(GRAPH_NAME)
        lines = await schema_lines(client, LOCAL_QUESTION, link(LOCAL_QUESTION, aids.names))
    # "who" asks for a person: the chain keeps the PERSON neighbours (not the CDC)
    assert (
        "chain 1 from the schema card: NEIGHBORS 'BRIANA MORELAND' AS step1; "
        "SELECT step1 WHERE entity_type = 'PERSON' AS answer"
    ) in lines
