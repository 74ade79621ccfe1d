"""`postel demo`'s run on the real workers (the story model standing in for a model): it
prints where to watch the job live, each round's decision and commands, and ends with the
evidence GASL found, with its sources."""

from __future__ import annotations

import re

from postel.infra.cli.demo import evidence_lines, run_demo
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import Settings
from postel.infra.store.redis_server import free_port


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
