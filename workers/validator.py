"""validator worker (IPV VALIDATE): coerce and check the output; complete the job, move to
the next task, or send a bounded repair request back to the generator."""

from __future__ import annotations

from postel.infra.actor import Metrics, Outcome, Runtime, WorkerSpec
from postel.messages import (
    Envelope,
    GenerationCompleted,
    GenerationRequested,
    JobFailed,
    ValidationFailed,
    ValidationRequested,
)
from postel.services.validation.stage import validate


async def handle(message: Envelope, runtime: Runtime) -> Outcome:
    assert isinstance(message, GenerationCompleted | ValidationRequested)
    messages = validate(message)
    repair = message.repair if isinstance(message, GenerationCompleted) else 0
    return Outcome(messages, verdict(messages, repair))


def verdict(messages: list[Envelope], repair: int) -> Metrics:
    """The hop's decision for its event: accepted, repair (back to the generator with the
    reason), rewrite (a graph answer handed to the generator) or rejected (the job fails)."""
    for sent in messages:
        if isinstance(sent, ValidationFailed):
            return Metrics(repair=repair, decision="repair", rationale=sent.error)
        if isinstance(sent, GenerationRequested):
            reason = str(sent.evidence.get("validation_error", ""))
            return Metrics(repair=repair, decision="rewrite", rationale=reason)
        if isinstance(sent, JobFailed):
            return Metrics(repair=repair, decision="rejected", rationale=sent.error)
    return Metrics(repair=repair, decision="accepted")


WORKER = WorkerSpec("validator", (GenerationCompleted, ValidationRequested), handle)
