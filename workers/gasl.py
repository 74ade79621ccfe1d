"""gasl worker: run one HDT round's GASL plan against the job's graph and state.

The plan's time budget is a share of this worker's job timeout or of the time left to the
job's deadline, whichever is shorter (TimeBudget.within), so a runaway plan ends with a
record naming the budget well before the run would be cut off."""

from __future__ import annotations

from postel.infra.actor import Metrics, Outcome, Runtime, WorkerSpec
from postel.infra.events import command_lines
from postel.infra.graphs import GraphRegistry
from postel.infra.model import ensure_model, model_of
from postel.infra.stores import GaslStateStore
from postel.messages import Envelope, GaslPlanRequested, JobFailed, utc_now
from postel.services.gasl.budget import TimeBudget
from postel.services.gasl.model import LLMGaslModel
from postel.services.gasl.stage import execute_round


async def handle(message: Envelope, runtime: Runtime) -> Outcome:
    assert isinstance(message, GaslPlanRequested)
    graph = message.request.graph
    try:
        if graph is None:
            raise LookupError("the job names no graph")
        adapter = await GraphRegistry(runtime.redis).adapter(graph)
    except LookupError as exc:  # GraphNotFound too
        error = f"a GASL plan needs the job's graph: {exc}"
        return Outcome([message.derive(JobFailed, "failed", status="invalid_request", error=error)])
    states = GaslStateStore(runtime.redis, runtime.settings.job_ttl_s)
    task = message.progress.task_index
    before = await states.before_round(message.job_id, task, message.round)
    model = model_of(runtime, "gasl")
    llm = model.metered(message.request.options.model)
    deadline_in_s = (
        None if message.deadline is None else (message.deadline - utc_now()).total_seconds()
    )
    budget = TimeBudget.within(runtime.settings.queue("gasl").job_timeout, deadline_in_s)
    result = await execute_round(
        message, adapter, before, LLMGaslModel(llm, model.capability), budget
    )
    await states.after_round(message.job_id, task, message.round, result.state)
    await states.record_round(result.message)
    commands = command_lines(result.message.records)
    return Outcome(
        [result.message], Metrics.of_calls(llm.meter, round=message.round, commands=commands)
    )


WORKER = WorkerSpec("gasl", (GaslPlanRequested,), handle, setup=ensure_model("gasl"))
