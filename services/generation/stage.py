"""The generator worker's service: one model call per message, and the AI loop as messages.

- `generation.requested` starts a task's answer (the message is kept as the loop's anchor);
- `generation.continued` is the next iteration of a cut-off document;
- `validation.failed` is a repair request: a fresh loop with the error shown to the model.

A `document` answer runs the loop of `services.generation.loop`: complete JSON goes to the
validator, cut-off JSON re-enqueues `generation.continued` (any replica may take it), and
`loop_detected` / `iteration_cap` fail the job with what was delivered attached. Any other
desired type is one call whose text the validator coerces. Loop state lives behind
`LoopStore` (Redis in production); an iteration that runs twice adds nothing twice, because
`step` is keyed by iteration and the model is not called again for an applied iteration.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from postel.messages import (
    Envelope,
    GenerationCompleted,
    GenerationContinued,
    GenerationRequested,
    JobFailed,
    TypeSpec,
    ValidationFailed,
    ids,
)
from postel.messages.document import document_output_schema
from postel.messages.errors import NotFound
from postel.services.generation.evidence import fit_evidence
from postel.services.generation.loop import LoopState, StepResult, continuation_prompt, step
from postel.services.ipv.context import build_call_context, desired_type_for, render_call_context
from postel.services.ipv.profiles import Profile, effective_settings
from postel.services.llm.client import LLMClient
from postel.services.llm.models import ChatMessage, LLMRequest
from postel.services.llm.tokens import truncate_to_tokens
from postel.services.prompts import TEMPLATES, Capability, build_prompt
from postel.services.step import HopFigures, Step
from postel.services.validation import describe_type
from pydantic import ValidationError

EVIDENCE_MAX_TOKENS = 1200
TASK_MAX_TOKENS = 300


_DOCUMENT_SCHEMA = document_output_schema()


class LoopStore(Protocol):
    """Where the loop keeps its anchor and state between messages."""

    async def get_anchor(self, job_id: str, task_id: str) -> GenerationRequested | None: ...

    async def put_anchor(self, anchor: GenerationRequested) -> None: ...

    async def get_state(self, job_id: str, task_id: str, repair: int) -> LoopState | None: ...

    async def put_state(self, job_id: str, task_id: str, repair: int, state: LoopState) -> None: ...


@dataclass(frozen=True)
class GeneratorDeps:
    """The generator's model, and where the AI loop keeps its anchor and state."""

    llm: LLMClient
    capability: Capability
    store: LoopStore


class MissingAnchor(NotFound):
    pass


async def handle(
    message: GenerationRequested | GenerationContinued | ValidationFailed, deps: GeneratorDeps
) -> Step:
    """The generator's one entry point: one model call, then the loop's next message (the
    next iteration, the finished output, or the job's failure) and the iteration's figures."""
    llm, capability, store = deps.llm, deps.capability, deps.store
    if isinstance(message, GenerationRequested):
        await store.put_anchor(message)
        anchor, repair, iteration = message, 0, 1
    else:
        found = await store.get_anchor(message.job_id, message.task_id)
        if found is None:
            raise MissingAnchor(
                f"no generation anchor for job {message.job_id} task {message.task_id}: "
                "its loop state is gone from Redis"
            )
        anchor, repair = found, message.repair
        iteration = message.iteration if isinstance(message, GenerationContinued) else 1
    profile = effective_settings(anchor.request)
    spec = desired_type_for(anchor.request, anchor.progress)
    repair_note = message if isinstance(message, ValidationFailed) else None
    if spec.kind != "document":
        return await _one_value(
            message, anchor, spec, profile, llm, capability, repair, repair_note
        )

    state = await store.get_state(anchor.job_id, anchor.task_id, repair) or LoopState()
    if state.iteration >= iteration:
        result = step(state, "", None, profile.max_iterations, iteration)
        finish_reason = result.metrics.finish_reason or ""
    else:
        if iteration == 1:
            prompt = _first_prompt(anchor, capability, repair_note)
        else:
            prompt = _continuation_prompt(anchor, state, capability)
        response = await llm.complete(
            LLMRequest(
                messages=prompt,
                max_tokens=profile.max_tokens,
                temperature=profile.temperature,
                json_schema=_document_schema(iteration, capability),
                model=anchor.request.options.model,
            )
        )
        result = step(
            state, response.text, response.finish_reason, profile.max_iterations, iteration
        )
        await store.put_state(anchor.job_id, anchor.task_id, repair, result.state)
        finish_reason = response.finish_reason
    return _after_step(message, anchor, result, repair, iteration, finish_reason)


def _document_schema(iteration: int, capability: Capability) -> dict[str, Any] | None:
    """A continuation is the rest of the JSON text, which no schema describes, so only the
    first call is constrained to the document's shape. A minimal (small local) model cannot
    continue raw JSON text: it keeps the schema, so each of its answers is a whole document,
    read by the loop as a restart and merged by section id (an element longer than one of
    its answers stays out of its reach)."""
    if iteration == 1 or capability is Capability.MINIMAL:
        return _DOCUMENT_SCHEMA
    return None


def _after_step(
    message: Envelope,
    anchor: GenerationRequested,
    result: StepResult,
    repair: int,
    iteration: int,
    finish_reason: str,
) -> Step:
    delivered = _delivered(result)
    figures = HopFigures(
        iteration=iteration,
        repair=repair,
        finish_reason=finish_reason,
        sections=result.metrics.sections_delivered,
        elements=result.metrics.elements_delivered,
    )
    task = anchor.task_id
    if result.decision == "continue":
        nxt = message.derive(
            GenerationContinued,
            ids.generation_continued(task, repair, iteration + 1),
            task_id=task,
            iteration=iteration + 1,
            repair=repair,
        )
        return Step([nxt], figures, continued=True)
    if result.decision == "complete":
        done = message.derive(
            GenerationCompleted,
            ids.generation_done(task, repair),
            request=anchor.request,
            progress=anchor.progress,
            task_id=task,
            output=delivered,
            iterations=iteration,
            repair=repair,
        )
        return Step([done], figures)
    stuck = {
        "no_progress": "its answer did not move the resume point (no_progress)",
        "repeated_output": "it ended its answer with the document open and sent the one "
        "before again (repeated_output)",
    }
    why = {
        "loop_detected": f"the model is stuck at iteration {iteration}: "
        f"{stuck.get(result.metrics.reason, result.metrics.reason)}",
        "iteration_cap": f"the document was still cut off after {iteration} iterations "
        "(the profile's max_iterations)",
    }[result.decision]
    failed = message.derive(
        JobFailed, ids.FAILED, status=result.decision, error=why, partial=delivered
    )
    return Step([failed], figures)


def _delivered(result: StepResult) -> dict[str, Any]:
    """What the loop delivered: the document, or, where the model's answer cannot be read
    as one (a section without its `content_type`), the sections as the model wrote them. An
    answer of the wrong shape is the validator's to refuse, which sends the repair turn that
    shows the model its error; reading it here would fail the hop as if something outside
    had broken."""
    try:
        return result.state.document().model_dump(mode="json")
    except ValidationError:
        return {"sections": result.state.delivered_sections()}


async def _one_value(
    message: Envelope,
    anchor: GenerationRequested,
    spec: TypeSpec,
    profile: Profile,
    llm: LLMClient,
    capability: Capability,
    repair: int,
    repair_note: ValidationFailed | None,
) -> Step:
    context = _context_blocks(anchor, repair_note)
    schema = value_schema(spec)
    wrapped = schema is not None and spec.kind != "json_schema"
    context["DESIRED TYPE"] = describe_type(spec) + (
        ', given as the JSON object {"value": <the value>}' if wrapped else ""
    )
    prompt = build_prompt(
        TEMPLATES.get("generate_value"), capability, user_text=_task_text(anchor), context=context
    )
    response = await llm.complete(
        LLMRequest(
            messages=prompt,
            max_tokens=profile.max_tokens,
            temperature=profile.temperature,
            json_schema=schema,
            model=anchor.request.options.model,
        )
    )
    done = message.derive(
        GenerationCompleted,
        ids.generation_done(anchor.task_id, repair),
        request=anchor.request,
        progress=anchor.progress,
        task_id=anchor.task_id,
        output=response.text,
        repair=repair,
    )
    return Step(
        [done], HopFigures(iteration=1, repair=repair, finish_reason=response.finish_reason)
    )


_JSON_TYPES: dict[str, dict[str, Any]] = {
    "float": {"type": "number"},
    "int": {"type": "integer"},
    "bool": {"type": "boolean"},
    "dict": {"type": "object"},
}


def _json_type(spec: TypeSpec) -> dict[str, Any] | None:
    if spec.kind == "list" and spec.items is not None:
        items = _json_type(spec.items)
        return {"type": "array", "items": items} if items is not None else None
    if spec.kind == "json_schema":
        return spec.json_schema
    return _JSON_TYPES.get(spec.kind)


def value_schema(spec: TypeSpec) -> dict[str, Any] | None:
    """Structured output for a value: a JSON Schema's own, else `{"value": <typed>}` so a
    grammar-constrained model cannot answer a number with prose. Text is left free."""
    if spec.kind == "json_schema":
        return spec.json_schema
    inner = _json_type(spec)
    if inner is None:
        return None
    return {"type": "object", "properties": {"value": inner}, "required": ["value"]}


def _task_text(anchor: GenerationRequested) -> str:
    text, _cut = truncate_to_tokens(anchor.instructions, TASK_MAX_TOKENS * 4)
    return text


def _context_blocks(
    anchor: GenerationRequested, repair_note: ValidationFailed | None
) -> dict[str, str]:
    intent = anchor.progress.task_intent()
    blocks = {
        # the call itself: the prompt, its arguments (the invoice of `text=`), the code site
        "REQUEST": render_call_context(build_call_context(anchor.request)),
        "INTENT": json.dumps(
            intent.model_dump(
                include={
                    "normalized_request",
                    "primary_goal",
                    "data_type",
                    "expected_formats",
                    "success_criteria",
                    "detected_language",
                }
            ),
            ensure_ascii=False,
        ),
    }
    if anchor.evidence:
        evidence = fit_evidence(anchor.evidence, EVIDENCE_MAX_TOKENS)
        note = "INCOMPLETE: the analysis stopped at its round cap.\n" * anchor.incomplete_evidence
        blocks["EVIDENCE"] = note + evidence
    if repair_note is not None:
        blocks["PREVIOUS ANSWER"] = str(repair_note.output)[:4000]
        blocks["VALIDATION ERROR"] = repair_note.error
    return blocks


def _first_prompt(
    anchor: GenerationRequested,
    capability: Capability,
    repair_note: ValidationFailed | None,
) -> list[ChatMessage]:
    return build_prompt(
        TEMPLATES.get("generate_document"),
        capability,
        user_text=_task_text(anchor),
        context=_context_blocks(anchor, repair_note),
    )


def _continuation_prompt(
    anchor: GenerationRequested, state: LoopState, capability: Capability
) -> list[ChatMessage]:
    """Small however long the document grows: the task, the capped evidence, the
    delivered summary and the cut-off point; never the document itself."""
    text = continuation_prompt(state)
    context = _context_blocks(anchor, None)
    context["TASK"] = _task_text(anchor)
    return build_prompt(
        TEMPLATES.get("continue_document"), capability, user_text=text.user_text, context=context
    )
