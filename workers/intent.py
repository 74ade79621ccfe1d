"""intent worker (IPV INFER): `job.submitted` -> one intent-analysis call -> `intent.analyzed`."""

from __future__ import annotations

from postel.infra.runtime.actor import HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.model import ensure_model, model_of
from postel.messages import Envelope, JobSubmitted
from postel.messages.intent import LinkedEntity
from postel.services.ipv import infer
from postel.services.linking.names import link
from postel.services.step import ModelDeps


async def handle(message: Envelope, runtime: Runtime) -> HopOutcome:
    assert isinstance(message, JobSubmitted)
    model = model_of(runtime, "intent")
    llm = model.metered(message.request.options.model)
    graph = message.request.graph
    linked: list[LinkedEntity] = []
    if graph is not None and runtime.settings.schema_help:
        # a missing graph fails the job here, as it would at the planner
        aids = await runtime.graphs().aids(graph)
        linked = link(message.request.prompt, aids.names)
    step = await infer.handle(message, ModelDeps(llm, model.capability), linked)
    return HopOutcome.of(step, llm.meter)


WORKER = WorkerSpec("intent", (JobSubmitted,), handle, setup=ensure_model("intent"))
