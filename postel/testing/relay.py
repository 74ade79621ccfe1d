"""Relay workers: the five stages reduced to routing, for measuring the runtime itself.

Each relay takes its stage's message and emits the next stage's, with no service work, so a
job crosses all five real queues: intent -> planner -> gasl -> generator -> validator -> done.
`postel bench bus` and the runtime's tests use them; the real workers live in `workers/`.
"""

from __future__ import annotations

from postel.infra.runtime.actor import HopOutcome, Runtime, WorkerSpec
from postel.messages import (
    Envelope,
    GaslPlan,
    GaslPlanRequested,
    GenerationCompleted,
    GenerationRequested,
    Intent,
    IntentAnalyzed,
    JobCompleted,
    JobProgress,
    JobSubmitted,
    ids,
)


async def _intent(message: Envelope, runtime: Runtime) -> HopOutcome:
    assert isinstance(message, JobSubmitted)
    prompt = message.request.prompt
    intent = Intent(
        detected_language="en", normalized_request=prompt, intent=prompt, primary_goal=prompt
    )
    progress = JobProgress(intent=intent)
    return HopOutcome(
        [message.derive(IntentAnalyzed, ids.INTENT, request=message.request, progress=progress)]
    )


async def _planner(message: Envelope, runtime: Runtime) -> HopOutcome:
    assert isinstance(message, IntentAnalyzed)
    plan = GaslPlan(plan_id="relay", commands=["DECLARE relay AS COUNTER"])
    routed = message.derive(
        GaslPlanRequested,
        ids.gasl_round(0, 0),
        request=message.request,
        progress=message.progress,
        round=0,
        plan=plan,
    )
    return HopOutcome([routed])


async def _gasl(message: Envelope, runtime: Runtime) -> HopOutcome:
    assert isinstance(message, GaslPlanRequested)
    routed = message.derive(
        GenerationRequested,
        ids.generation(0),
        request=message.request,
        progress=message.progress,
        task_id="relay",
        instructions=message.request.prompt,
    )
    return HopOutcome([routed])


async def _generator(message: Envelope, runtime: Runtime) -> HopOutcome:
    assert isinstance(message, GenerationRequested)
    routed = message.derive(
        GenerationCompleted,
        ids.generation_done("relay", 0),
        request=message.request,
        progress=message.progress,
        task_id=message.task_id,
        output=message.request.prompt,
    )
    return HopOutcome([routed])


async def _validator(message: Envelope, runtime: Runtime) -> HopOutcome:
    assert isinstance(message, GenerationCompleted)
    return HopOutcome([message.derive(JobCompleted, ids.COMPLETED, result=message.output)])


RELAY_WORKERS: list[WorkerSpec] = [
    WorkerSpec("intent", (JobSubmitted,), _intent),
    WorkerSpec("planner", (IntentAnalyzed,), _planner),
    WorkerSpec("gasl", (GaslPlanRequested,), _gasl),
    WorkerSpec("generator", (GenerationRequested,), _generator),
    WorkerSpec("validator", (GenerationCompleted,), _validator),
]
