"""generator worker (IPV PROCESS): one model call per message; a cut-off document re-enqueues
itself as `generation.continued` until its JSON parses completely (the AI loop)."""

from __future__ import annotations

from postel.infra.runtime.actor import HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.model import ensure_model, model_of
from postel.infra.store.stores import RedisLoopStore
from postel.messages import Envelope, GenerationContinued, GenerationRequested, ValidationFailed
from postel.services.generation import stage


async def handle(message: Envelope, runtime: Runtime) -> HopOutcome:
    assert isinstance(message, GenerationRequested | GenerationContinued | ValidationFailed)
    model = model_of(runtime, "generator")
    llm = model.metered()  # the job's own model is named by the loop's requests
    store = RedisLoopStore(runtime.redis, runtime.keyspace, runtime.settings.job_ttl_s)
    step = await stage.handle(message, stage.GeneratorDeps(llm, model.capability, store))
    return HopOutcome.of(step, llm.meter)


WORKER = WorkerSpec(
    "generator",
    (GenerationRequested, GenerationContinued, ValidationFailed),
    handle,
    setup=ensure_model("generator"),
)
