"""`postel bench loop`: the AI loop over the real bus, with an oracle model.

The generator and validator workers run on an embedded Redis (or POSTEL_REDIS_URL); the
model is `postel.testing.oracle`: it knows the target document and answers each prompt
as a perfect model would, reading where to resume from the prompt text alone. A
`generation.requested` for a `document` is enqueued; each iteration is a
`generation.continued` message. Figures come from the job's events (prompt and completion
tokens per iteration), the loop state kept in Redis (the time to read each answer) and a
naive baseline that re-parses the whole accumulated document at every iteration.
"""

from __future__ import annotations

from typing import Any

from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.runner import load_worker
from postel.infra.runtime.settings import Settings
from postel.infra.runtime.submit import start_job
from postel.infra.store.events import HANDLED
from postel.infra.store.redis_server import configured_or_scratch
from postel.messages import (
    GenerationRequested,
    Intent,
    JobOptions,
    JobProgress,
    JobRequest,
    TypeSpec,
    new_job_id,
)
from postel.services.generation.loop import LoopState, step
from postel.services.generation.summary import summary_lines
from postel.services.llm import LLMRequest, ScriptedClient
from postel.services.llm.tokens import truncate_to_tokens
from postel.services.prompts import Capability

from postel.testing.oracle import Oracle
from postel_bench.loop import (
    IterationFigures,
    naive_parse_ms,
    scale_row,
    scaled,
    summarise_run,
)

TASK_ID = "bench"


async def run_loop_bus_bench(
    settings: Settings, document: dict[str, Any], max_tokens: int, max_iterations: int = 500
) -> dict[str, Any]:
    oracle = Oracle(document, max_tokens)
    responses: list[str] = []

    def respond(request: LLMRequest) -> str:
        text = oracle.full_text(request.prompt_text())
        # The client cuts the answer to max_tokens; the replay needs it as delivered.
        responses.append(truncate_to_tokens(text, max_tokens)[0])
        return text

    model = Model(ScriptedClient(responder=respond), Capability.STANDARD)
    specs = [load_worker("generator"), load_worker("validator")]
    async with (
        configured_or_scratch(settings.redis_url) as url,
        LocalSystem(settings, redis_url=url, specs=specs, resources={RESOURCE: model}),
        Client(url, settings) as client,
    ):
        job_id = await _start(client, max_tokens, max_iterations)
        record = await client.wait(job_id, timeout=600)
        events = [
            e
            for e in await client.events.read(job_id)
            if e.worker == "generator" and e.status in HANDLED
        ]
        raw_state = await client.pool.get(client.keyspace.loop_state(job_id, TASK_ID, 0))
    state = LoopState.model_validate_json(raw_state) if raw_state else LoopState()
    figures = _figures(events, state, responses, max_iterations)
    final = (
        record.result
        if isinstance(record.result, dict)
        else {"sections": state.delivered_sections()}
    )
    report = summarise_run(document, max_tokens, figures, final)
    report["job_status"] = record.status
    report["failure"] = record.failure
    return report


async def _start(client: Client, max_tokens: int, max_iterations: int) -> str:
    request = JobRequest(
        prompt="Write the document.",
        desired_type=TypeSpec(kind="document"),
        options=JobOptions(max_tokens=max_tokens, max_iterations=max_iterations),
    )
    intent = Intent(
        detected_language="en",
        normalized_request=request.prompt,
        intent=request.prompt,
        primary_goal="the document",
        data_type="documents",
    )
    job_id = new_job_id()
    first = GenerationRequested(
        job_id=job_id,
        message_id=f"{job_id}:gen:{TASK_ID}",
        request=request,
        progress=JobProgress(intent=intent),
        task_id=TASK_ID,
        instructions=request.prompt,
    )
    await start_job(client.pool, client.events, client.jobs, first, source="bench")
    return job_id


def _figures(
    events: list[Any], state: LoopState, responses: list[str], max_iterations: int
) -> list[IterationFigures]:
    """Per iteration: tokens from the events, reading time from the stored loop state, and the
    naive baseline measured by replaying the same responses."""
    replay = LoopState()
    figures: list[IterationFigures] = []
    for event, metrics, text in zip(events, state.history, responses, strict=False):
        replay = step(replay, text, metrics.finish_reason, max_iterations).state
        figures.append(
            IterationFigures(
                iteration=metrics.iteration,
                prompt_tokens=event.prompt_tokens,
                completion_tokens=event.completion_tokens,
                finish_reason=metrics.finish_reason,
                decision=metrics.decision,
                parse_ms=metrics.parse_ms,
                naive_parse_ms=naive_parse_ms(replay.delivered_sections()),
                summary_lines=len(summary_lines(replay.delivered_sections())),
            )
        )
    return figures


async def run_loop_bus_scale(
    settings: Settings, base_document: dict[str, Any], factors: list[int], max_tokens: int
) -> dict[str, Any]:
    """The same document at growing lengths, each run over the bus: whether the
    continuation prompt stays small as the document grows."""
    rows = []
    for factor in factors:
        report = await run_loop_bus_bench(settings, scaled(base_document, factor), max_tokens)
        rows.append(scale_row(base_document, factor, report))
    return {"max_tokens": max_tokens, "factors": rows}
