"""planner worker: the task plan, then the HDT loop with the gasl worker, then the hand-off
to the generator or the validator (services.planner)."""

from __future__ import annotations

from typing import Any

import structlog
from postel.infra.actor import Metrics, Outcome, Runtime, WorkerSpec
from postel.infra.graphs import GraphNotFound, GraphRegistry
from postel.infra.model import ensure_model, model_of
from postel.messages import (
    CarriesJob,
    Envelope,
    GaslPlanExecuted,
    IntentAnalyzed,
    JobFailed,
    TaskPlanned,
)
from postel.services.planner import on_gasl_executed, on_intent_analyzed, on_task_planned

log = structlog.get_logger(__name__)

HANDLERS = {
    IntentAnalyzed: on_intent_analyzed,
    TaskPlanned: on_task_planned,
    GaslPlanExecuted: on_gasl_executed,
}


async def handle(message: Envelope, runtime: Runtime) -> Outcome:
    assert isinstance(message, CarriesJob)
    request = message.request
    summary: dict[str, Any] | None = None
    if request.graph is not None:
        registry = GraphRegistry(runtime.redis)  # adapters are cached per process
        try:
            summary = await registry.summary(request.graph)
        except GraphNotFound as exc:
            failed = message.derive(JobFailed, "failed", status="invalid_request", error=str(exc))
            return Outcome([failed])
    model = model_of(runtime, "planner")
    llm = model.metered(message.request.options.model)
    notes: list[str] = []
    handler = HANDLERS[type(message)]
    step = await handler(message, llm, model.capability, summary, notes=notes)
    for note in notes:
        log.info("planner decision", note=note)
    round_ = message.round if isinstance(message, GaslPlanExecuted) else 0
    metrics = Metrics.of_calls(
        llm.meter, round=round_, decision=step.decision, rationale=step.rationale
    )
    return Outcome(step.messages, metrics)


WORKER = WorkerSpec("planner", tuple(HANDLERS), handle, setup=ensure_model("planner"))
