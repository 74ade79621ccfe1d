"""generator worker (IPV PROCESS): one model call per message; a cut-off document re-enqueues
itself as `generation.continued` until its JSON parses completely (the AI loop)."""

from __future__ import annotations

from postel.infra.actor import Metrics, Outcome, Runtime, WorkerSpec
from postel.infra.model import ensure_model, model_of
from postel.infra.stores import RedisLoopStore
from postel.messages import Envelope, GenerationContinued, GenerationRequested, ValidationFailed
from postel.services.generation.stage import generate


async def handle(message: Envelope, runtime: Runtime) -> Outcome:
    assert isinstance(message, GenerationRequested | GenerationContinued | ValidationFailed)
    model = model_of(runtime, "generator")
    llm = model.metered()  # the job's own model is named by the loop's requests
    store = RedisLoopStore(runtime.redis, runtime.settings.job_ttl_s)
    result = await generate(message, llm, model.capability, store)
    metrics = Metrics.of_calls(
        llm.meter,
        iteration=result.iteration,
        repair=0 if isinstance(message, GenerationRequested) else message.repair,
        finish_reason=result.finish_reason,
        sections=result.sections,
        elements=result.elements,
    )
    return Outcome(result.messages, metrics, continued=result.continued)


WORKER = WorkerSpec(
    "generator",
    (GenerationRequested, GenerationContinued, ValidationFailed),
    handle,
    setup=ensure_model("generator"),
)
