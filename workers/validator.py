"""validator worker (IPV VALIDATE): coerce and check the output; complete the job, move to
the next task, or send a bounded repair request back to the generator."""

from __future__ import annotations

from postel.infra.runtime.actor import HopOutcome, Runtime, WorkerSpec
from postel.messages import Envelope, GenerationCompleted, ValidationRequested
from postel.services import validator


async def handle(message: Envelope, runtime: Runtime) -> HopOutcome:
    assert isinstance(message, GenerationCompleted | ValidationRequested)
    return HopOutcome.of(await validator.handle(message))


WORKER = WorkerSpec("validator", (GenerationCompleted, ValidationRequested), handle)
