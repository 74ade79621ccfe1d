"""`postel bench fair` runs every scenario in both modes, small, and prints its figures (the
figures themselves are the benchmark's business: no test asserts a speed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


@pytest.mark.bench
def test_bench_fair_measures_job_control_beside_arrival_order() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POSTEL_")}
    env["POSTEL_LOG_LEVEL"] = "WARNING"
    command = ["bench", "fair", "--backlog", "40", "--urgent", "4", "--aging-s", "2", "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "postel", *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert set(figures["modes"]) == {"job_control", "arrival_order"}
    for mode in figures["modes"].values():
        assert mode["priority"]["b_wait_alone_p50_ms"] > 0
        assert 0 <= mode["priority"]["a_drained_when_b_ended_pct"] <= 100
        assert mode["turns"]["b_last_ended_at_completion"] >= 2
        assert mode["aging"]["batch_status"] == "completed"
    assert figures["cancel"]["status"] == "failed:cancelled"
    assert figures["cancel"]["answers_sent_after_cancel"] == 0
    assert figures["callbacks"]["failing_receiver_attempts"] == 6
    assert figures["callbacks"]["failing_receiver_webhook_ids"] == 1
