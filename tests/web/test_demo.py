"""`postel demo`'s run on the real workers (the story model standing in for a model): it
prints where to watch the job live, each round's decision and commands, and ends with the
evidence GASL found, with its sources."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import get_args

from postel.infra.client import Client
from postel.infra.demo import FAILURES, evidence_lines, run_demo, verdict_lines
from postel.infra.graphs import GraphRegistry
from postel.infra.local_system import LocalSystem
from postel.infra.model import RESOURCE, Model
from postel.infra.redis_server import free_port
from postel.infra.settings import Settings
from postel.messages.pipeline import FailureStatus
from postel.services.gasl.loaders import DEMO_GRAPH
from postel.services.llm import LLMRequest, ScriptedClient
from postel.services.prompts import Capability

sys.path.insert(0, str(Path(__file__).parent))
from story_model import respond


async def test_the_demo_shows_its_page_its_rounds_and_the_evidence(
    story_system: LocalSystem, redis_url: str, settings: Settings
) -> None:
    port = free_port()
    here = settings.model_copy(update={"redis_url": redis_url, "web_port": port})
    printed: list[str] = []
    outcome = await run_demo(here, printed.append, max_rounds=3, max_tokens=400, timeout=60)
    text = "\n".join(printed)
    assert outcome.record.status == "completed"
    assert f"watch it live: http://127.0.0.1:{port}/jobs/{outcome.record.job_id}" in printed
    assert re.search(r"planner .*gasl\.plan_executed round 0.*refine: The FIND did not parse", text)
    assert re.search(r"\n {10}success +371  FIND nodes WHERE", text)
    evidence = "\n".join(evidence_lines(outcome.rounds))
    assert "task 0, round 1 (group people by the report sections they appear in)" in evidence
    assert re.search(r"success +17  SELECT by_chunk WHERE LEN value >= 2 AS shared", evidence)
    assert "sources: chunk-" in evidence


def test_every_way_to_fail_has_words() -> None:
    assert set(FAILURES) == set(get_args(FailureStatus))


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
        await GraphRegistry(client.pool).add("mmwr", DEMO_GRAPH)
    model = Model(ScriptedClient(responder=hollow), Capability.STANDARD)
    here = settings.model_copy(update={"redis_url": redis_url, "web_port": free_port()})
    async with LocalSystem(settings, redis_url=redis_url, resources={RESOURCE: model}):
        outcome = await run_demo(here, [].append, max_rounds=3, max_tokens=400, timeout=60)
    record = outcome.record
    assert record.status == "failed" and record.failure == "validation_failed"
    verdict = verdict_lines(record)
    assert verdict[0] == (
        f"job {record.job_id} FAILED: the output did not pass validation, repairs included "
        "(validation_failed)."
    )
    assert verdict[1].startswith("reason: the output says nothing: the document has sections")
    assert "completed" not in "\n".join(verdict)
