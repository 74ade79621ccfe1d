"""The gasl worker's service: execute one HDT round's plan against the job's graph and
state, and answer the planner with the execution records and the state summary.

The state document is handed in and out (the worker keeps it in Redis, one copy per round),
so a round that runs twice starts from the same state and applies its UPDATEs once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from postel.messages import GaslPlanExecuted, GaslPlanRequested
from postel.services.gasl.adapters import GraphAdapter
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.llm_steps import GaslModel
from postel.services.gasl.state import MemoryStateBackend, StateStore


@dataclass
class RoundResult:
    message: GaslPlanExecuted
    state: dict[str, Any]
    failed_commands: int


async def execute_round(
    message: GaslPlanRequested,
    adapter: GraphAdapter,
    state: dict[str, Any] | None,
    model: GaslModel | None,
) -> RoundResult:
    backend = MemoryStateBackend()
    if state is not None:
        backend.save(state)
    store = StateStore(backend, query=message.request.prompt)
    executor = GaslExecutor(adapter, state=store, model=model)
    run = await executor.execute_plan(message.plan)
    errors = [r for r in run.records if r.status in ("error", "binding_failure", "schema_mismatch")]
    task = message.progress.task_index
    executed = message.derive(
        GaslPlanExecuted,
        f"gasl-done:{task}:{message.round}",
        request=message.request,
        progress=message.progress,
        round=message.round,
        plan=message.plan,
        history=message.history,
        records=run.records,
        state_summary=run.state.model_dump(mode="json"),
        error=errors[0].error if errors else None,
    )
    saved = backend.load() or {}
    return RoundResult(executed, saved, len(errors))
