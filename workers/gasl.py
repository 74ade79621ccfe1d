"""gasl worker: run one HDT round's GASL plan against the job's graph and state."""

from __future__ import annotations

from infra.actor import Metrics, Outcome, Runtime, WorkerSpec
from infra.graphs import GraphNotFound, GraphRegistry
from infra.model import ensure_model, model_of
from infra.stores import GaslStateStore
from messages import Envelope, GaslPlanRequested, JobFailed
from services.gasl.model import LLMGaslModel
from services.gasl.stage import execute_round

REGISTRY = "graphs"


async def setup(runtime: Runtime) -> None:
    await ensure_model(runtime)
    runtime.resources.setdefault(REGISTRY, GraphRegistry(runtime.redis))


async def handle(message: Envelope, runtime: Runtime) -> Outcome:
    assert isinstance(message, GaslPlanRequested)
    if message.request.graph is None:
        raise ValueError("a GASL plan needs the job's graph, and this job names none")
    registry: GraphRegistry = runtime.resources[REGISTRY]
    try:
        adapter = await registry.adapter(message.request.graph)
    except GraphNotFound as exc:
        return Outcome(
            [message.derive(JobFailed, "failed", status="invalid_request", error=str(exc))]
        )
    states = GaslStateStore(runtime.redis, runtime.settings.job_ttl_s)
    task = message.progress.task_index
    before = await states.before_round(message.job_id, task, message.round)
    model = model_of(runtime)
    llm = model.metered()
    result = await execute_round(message, adapter, before, LLMGaslModel(llm, model.capability))
    await states.after_round(message.job_id, task, message.round, result.state)
    return Outcome([result.message], Metrics.of_calls(llm.meter, round=message.round))


WORKER = WorkerSpec("gasl", (GaslPlanRequested,), handle, setup=setup)
