"""planner worker: the task plan, then the HDT loop with the gasl worker, then the hand-off
to the generator or the validator (services.planner)."""

from __future__ import annotations

from postel.infra.runtime.actor import HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.model import ensure_model, model_of
from postel.infra.store.stores import GaslStateStore
from postel.messages import Envelope, GaslPlanExecuted, IntentAnalyzed, TaskPlanned
from postel.services import planner


async def handle(message: Envelope, runtime: Runtime) -> HopOutcome:
    assert isinstance(message, IntentAnalyzed | TaskPlanned | GaslPlanExecuted)
    graph = message.request.graph
    registry = runtime.graphs()
    # adapters, summaries and cards are cached per process; a missing graph fails the job
    summary = None if graph is None else await registry.summary(graph)
    card = (
        (await registry.aids(graph)).card
        if graph is not None and runtime.settings.schema_help
        else None
    )
    model = model_of(runtime, "planner")
    llm = model.metered(message.request.options.model)
    rounds = GaslStateStore(runtime.redis, runtime.keyspace, runtime.settings.job_ttl_s)
    deps = planner.PlannerDeps(
        llm, model.capability, summary, rounds.reader(message.job_id), schema_card=card
    )
    step = await planner.handle(message, deps)
    return HopOutcome.of(step, llm.meter)


WORKER = WorkerSpec("planner", tuple(planner.HANDLERS), handle, setup=ensure_model("planner"))
