"""intent worker (IPV INFER): `job.submitted` -> one intent-analysis call -> `intent.analyzed`."""

from __future__ import annotations

from postel.infra.runtime.actor import HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.model import ensure_model, model_of
from postel.messages import Envelope, JobSubmitted
from postel.services.ipv import infer
from postel.services.step import ModelDeps


async def handle(message: Envelope, runtime: Runtime) -> HopOutcome:
    assert isinstance(message, JobSubmitted)
    model = model_of(runtime, "intent")
    llm = model.metered(message.request.options.model)
    step = await infer.handle(message, ModelDeps(llm, model.capability))
    return HopOutcome.of(step, llm.meter)


WORKER = WorkerSpec("intent", (JobSubmitted,), handle, setup=ensure_model("intent"))
