"""gasl worker: run one HDT round's GASL plan against the job's graph and state.

The plan's time budget is a share of this worker's job timeout or of the time left to the
job's deadline, whichever is shorter (TimeBudget.within), so a runaway plan ends with a
record naming the budget well before the run would be cut off."""

from __future__ import annotations

from postel.infra.runtime.actor import HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.model import ensure_model, model_of
from postel.infra.store.stores import GaslStateStore
from postel.messages import Envelope, GaslPlanRequested, utc_now
from postel.services.gasl import stage
from postel.services.gasl.budget import TimeBudget
from postel.services.gasl.model import LLMGaslModel


async def handle(message: Envelope, runtime: Runtime) -> HopOutcome:
    assert isinstance(message, GaslPlanRequested)
    # a missing graph (or a job naming none) fails the job: GraphNotFound
    adapter = await runtime.graphs().adapter(message.request.graph)
    rounds = GaslStateStore(runtime.redis, runtime.keyspace, runtime.settings.job_ttl_s)
    model = model_of(runtime, "gasl")
    llm = model.metered(message.request.options.model)
    deadline_in_s = (
        None if message.deadline is None else (message.deadline - utc_now()).total_seconds()
    )
    budget = TimeBudget.within(runtime.settings.queue("gasl").job_timeout, deadline_in_s)
    deps = stage.GaslDeps(
        adapter, rounds, LLMGaslModel(llm, model.capability), budget, runtime.memory.rows_made
    )
    return HopOutcome.of(await stage.handle(message, deps), llm.meter)


WORKER = WorkerSpec("gasl", (GaslPlanRequested,), handle, setup=ensure_model("gasl"))
