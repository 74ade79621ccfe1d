"""The gasl worker's service: execute one HDT round's plan against the job's graph and
state, and answer the planner with the execution records and the state summary.

The state document is handed in and out (the worker keeps it in Redis, one copy per round),
so a round that runs twice starts from the same state and applies its UPDATEs once; the
saved document also holds the round's own `AS` variables, whole (ROUND_VARIABLES). The
job's caps travel in that document too, never on the adapter, which the process shares.

Graph work is CPU-bound: the round runs in a worker thread (with an event loop of its own
for the executor), so the caller's event loop stays free to renew the job's lease and serve
other jobs, and the time budget stops a runaway plan. PROCESS and ANALYZE still call the
model on the caller's loop, which owns the model's HTTP client.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from postel.messages import GaslPlanExecuted, GaslPlanRequested, ids
from postel.messages.gasl import FAILED_STATUSES
from postel.services.gasl.budget import TimeBudget
from postel.services.gasl.engines.protocol import GraphAdapter
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.llm_steps import GaslModel
from postel.services.gasl.state import MemoryStateBackend, StateStore
from postel.services.step import HopFigures, Step, command_lines

ROUND_VARIABLES = "round_variables"
"""The key of a round's saved state document that holds the variables its plan assigned
with `AS`, whole (a `COMPLETE: ${var}` reads them; the StateStore ignores the key)."""


class RoundStore(Protocol):
    """Where a job's GASL state lives between rounds, one copy per round (infra/store/stores.py)."""

    async def state_after(
        self, job_id: str, task_index: int, round_: int
    ) -> dict[str, Any] | None: ...

    async def after_round(
        self, job_id: str, task_index: int, round_: int, state: dict[str, Any]
    ) -> None: ...

    async def record_round(self, executed: GaslPlanExecuted) -> None: ...


@dataclass(frozen=True)
class GaslDeps:
    """The job's graph, its state between rounds, the model for PROCESS and ANALYZE (None:
    they end as error records), the plan's time budget and the process's hook for rows made
    in bulk (services/gasl/budget.py's BULK_ROWS)."""

    adapter: GraphAdapter
    rounds: RoundStore
    model: GaslModel | None
    budget: TimeBudget
    bulk: Callable[[], None] | None = None


async def handle(message: GaslPlanRequested, deps: GaslDeps) -> Step:
    """The gasl worker's one entry point: run the round from the state its base round left
    (the previous one, or an earlier one after a pivot), keep the state and the records, and
    answer the planner."""
    job, task = message.job_id, message.progress.task_index
    before = await deps.rounds.state_after(job, task, message.base_round)
    result = await execute_round(message, deps.adapter, before, deps.model, deps.budget, deps.bulk)
    await deps.rounds.after_round(job, task, message.round, result.state)
    await deps.rounds.record_round(result.message)
    commands = command_lines(result.message.records)
    return Step([result.message], HopFigures(round=message.round, commands=commands))


@dataclass
class RoundResult:
    message: GaslPlanExecuted
    state: dict[str, Any]
    failed_commands: int


class _OnCallerLoop:
    """A GaslModel whose calls run on the event loop the round was started from."""

    def __init__(self, model: GaslModel, loop: asyncio.AbstractEventLoop) -> None:
        self.model = model
        self.loop = loop

    async def complete_json(
        self, step: str, parts: dict[str, str], schema: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        call = self.model.complete_json(step, parts, schema)
        # Cancelling the wrapped future (the step's deadline) cancels the call on its loop.
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(call, self.loop))


async def execute_round(
    message: GaslPlanRequested,
    adapter: GraphAdapter,
    state: dict[str, Any] | None,
    model: GaslModel | None,
    budget: TimeBudget | None = None,
    bulk: Callable[[], None] | None = None,
) -> RoundResult:
    """Run the round's plan off the event loop; `budget` defaults to TimeBudget().

    If the caller is cancelled (its time limit), the plan stops at its next check instead
    of running on, unseen, to the end of its budget."""
    bridged = None if model is None else _OnCallerLoop(model, asyncio.get_running_loop())
    stop = threading.Event()
    try:
        return await asyncio.to_thread(
            _run_round, message, adapter, state, bridged, budget or TimeBudget(), stop, bulk
        )
    finally:
        stop.set()


def _run_round(
    message: GaslPlanRequested,
    adapter: GraphAdapter,
    state: dict[str, Any] | None,
    model: GaslModel | None,
    budget: TimeBudget,
    stop: threading.Event,
    bulk: Callable[[], None] | None,
) -> RoundResult:
    backend = MemoryStateBackend()
    if state is not None:
        backend.save(state)
    store = StateStore(backend, query=message.request.prompt)
    executor = GaslExecutor(adapter, state=store, model=model, budget=budget, stop=stop, bulk=bulk)
    run = asyncio.run(executor.execute_plan(message.plan))
    errors = [r for r in run.records if r.status in FAILED_STATUSES]
    task = message.progress.task_index
    executed = message.derive(
        GaslPlanExecuted,
        ids.gasl_round_done(task, message.round),
        request=message.request,
        progress=message.progress,
        round=message.round,
        plan=message.plan,
        history=message.history,
        state_from=message.state_from,
        records=run.records,
        state_summary=run.state.model_dump(mode="json"),
        error=errors[0].error if errors else None,
    )
    saved = backend.load() or {}
    # the next round starts from the state alone: the variables are kept for this round only
    saved[ROUND_VARIABLES] = json.loads(json.dumps(executor.context.values(), default=str))
    return RoundResult(executed, saved, len(errors))
