"""IPV VALIDATE: the validator worker's service.

It sits above services.validation (the pure coercion and checks) and services.ipv (the
call context), so that ipv can ask the model through the validation core without a
package cycle (tests/contract/test_layers.py).

The last task's output is coerced to the job's desired type (an answer by reference, a
state value the planner named, is read as rows first: services.validation.rows), refused
when it says nothing (unless the request allows none or the evidence is empty too:
services.validation.quality.says_nothing), refused when it is text that names none of the
rows the graph analysis found (services.validation.grounding), and checked for quality (the
intent's success criteria, completeness; not an empty answer that passed, a "none" the
counting criteria were not written for). On success the job completes; an earlier task's
output becomes its outcome and the plan moves on to the next task. On failure a bounded
repair request goes back to the generator (`validation.failed`, up to the profile's
max_repairs); an answer the planner sent straight here (`validation.requested`) is handed to
the generator once to be rewritten in the desired type; past that the job fails as
`validation_failed` with the output attached. A JSON Schema postel cannot check fails the
job at once (`invalid_request`): no repair of the output could fix it.
"""

from __future__ import annotations

import json
from typing import Any

from postel.messages import (
    Envelope,
    GenerationCompleted,
    GenerationRequested,
    JobCompleted,
    JobFailed,
    TaskOutcome,
    TaskPlanned,
    TypeSpec,
    ValidationFailed,
    ValidationRequested,
    ids,
)
from postel.services.ipv.context import desired_type_for, is_last_task
from postel.services.ipv.profiles import effective_settings
from postel.services.step import HopFigures, Step
from postel.services.validation.coerce import coerce
from postel.services.validation.describe import describe_type
from postel.services.validation.errors import CoercionError, UnsupportedSchemaError
from postel.services.validation.grounding import TEXT_KINDS, found_names, ungrounded
from postel.services.validation.quality import check_quality, says_nothing
from postel.services.validation.rows import from_state

_EMPTY_RULE = (
    "an empty answer passes only where the request allows none (options.allow_empty) or the "
    "evidence is empty too; a document needs text"
)


async def handle(message: GenerationCompleted | ValidationRequested, deps: None = None) -> Step:
    """The validator's one entry point (it needs nothing from outside): the messages and the
    verdict for the hop's event."""
    messages = validate(message)
    repair = message.repair if isinstance(message, GenerationCompleted) else 0
    return Step(messages, verdict(messages, repair))


def verdict(messages: list[Envelope], repair: int) -> HopFigures:
    """The hop's decision: accepted, repair (back to the generator with the reason), rewrite
    (a graph answer handed to the generator) or rejected (the job fails)."""
    for sent in messages:
        if isinstance(sent, ValidationFailed):
            return HopFigures(repair=repair, decision="repair", rationale=sent.error)
        if isinstance(sent, GenerationRequested):
            reason = str(sent.evidence.get("validation_error", ""))
            return HopFigures(repair=repair, decision="rewrite", rationale=reason)
        if isinstance(sent, JobFailed):
            return HopFigures(repair=repair, decision="rejected", rationale=sent.error)
    return HopFigures(repair=repair, decision="accepted")


def validate(message: GenerationCompleted | ValidationRequested) -> list[Envelope]:
    request, progress = message.request, message.progress
    last = is_last_task(progress)
    spec = desired_type_for(request, progress)
    profile = effective_settings(request)
    by_reference = _by_reference(message)
    output = message.output
    if by_reference is not None and isinstance(message, ValidationRequested):
        output = from_state(output, spec)  # rows GASL found, read as the type asks
    try:
        value = _coerce(output, spec, request.ambient.locale)
    except UnsupportedSchemaError as exc:
        return [message.derive(JobFailed, ids.FAILED, status="invalid_request", error=str(exc))]
    except CoercionError as exc:
        failure = f"the output is not {describe_type(spec)}: {exc}"
        return [_after_failure(message, failure, spec, profile.max_repairs)]
    empty = says_nothing(value, spec)
    if empty and not _may_be_empty(spec, request.options.allow_empty, by_reference):
        failure = f"the output says nothing: {empty}; {_EMPTY_RULE}"
        return [_after_failure(message, failure, spec, profile.max_repairs)]
    if spec.kind in TEXT_KINDS and (why := ungrounded(value, found_names(progress.outcomes))):
        failure = f"the answer is not grounded: {why}"
        return [_after_failure(message, failure, spec, profile.max_repairs)]
    # an empty answer that passed is a "none" (allowed, or confirmed on empty evidence): the
    # intent's counting criteria ("at least 1 item") were written for an answer that has some
    problems = (
        []
        if empty
        else check_quality(
            value, spec, progress.task_intent(), strict=profile.strictness == "strict"
        )
    )
    if problems and profile.quality_blocks:
        failure = f"the output is not {describe_type(spec)}: {'; '.join(problems)}"
        return [_after_failure(message, failure, spec, profile.max_repairs)]
    outcome = TaskOutcome(task_id=message.task_id, answer=value)
    outcomes = [*progress.outcomes, outcome]
    if not last:
        advanced = progress.model_copy(
            update={"task_index": progress.task_index + 1, "outcomes": outcomes}
        )
        return [
            message.derive(
                TaskPlanned, ids.task_start(advanced.task_index), request=request, progress=advanced
            )
        ]
    results = {o.task_id: o.answer for o in outcomes}
    return [message.derive(JobCompleted, ids.COMPLETED, result=value, task_results=results)]


def _by_reference(message: GenerationCompleted | ValidationRequested) -> TaskOutcome | None:
    """The task's graph outcome when its answer is a state value the planner named
    (`COMPLETE: ${var}`), else None."""
    for outcome in reversed(message.progress.outcomes):
        if outcome.task_id == message.task_id:
            return outcome if outcome.reference is not None else None
    return None


def _may_be_empty(spec: TypeSpec, allow_empty: bool, by_reference: TaskOutcome | None) -> bool:
    """An empty list, text or object passes where the request allows none, or where the
    evidence is empty too: the answer is a state value the planner named, and it is empty."""
    if spec.kind == "document":
        return False
    evidence_empty = by_reference is not None and by_reference.answer in ([], {}, "")
    return allow_empty or evidence_empty


def _coerce(output: Any, spec: TypeSpec, locale: str | None) -> Any:
    """A document or JSON value may arrive already parsed; coercion takes text too. The
    generator's structured answer for a value, `{"value": ...}`, is unwrapped first."""
    output = _unwrapped(output) if spec.kind != "json_schema" else output
    if spec.kind in ("str", "float", "int", "bool") or isinstance(output, str):
        return coerce(output, spec, locale=locale)
    return coerce(_as_json(output), spec, locale=locale)


def _unwrapped(output: Any) -> Any:
    if isinstance(output, str) and output.lstrip().startswith("{"):
        try:
            parsed = json.loads(output)
        except (ValueError, RecursionError):
            return output  # coercion reads it, or says why it cannot
        if isinstance(parsed, dict) and list(parsed) == ["value"]:
            value = parsed["value"]
            return value if isinstance(value, str) else _as_json(value)
    return output


def _as_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (ValueError, RecursionError) as error:
        raise CoercionError(f"the output is not JSON that can be read: {error}") from None


def _answered(message: ValidationRequested) -> str:
    """What the analysis answered, for the rewrite: a state value it named stays in the
    evidence (fitted to the writer's budget), not pasted into the instructions."""
    outcome = _by_reference(message)
    if outcome is None:
        return f"The analysis answered: {message.output}"
    size = len(outcome.answer) if isinstance(outcome.answer, list | dict) else 1
    return (
        f"The analysis answered with the value of {outcome.reference} ({size} items), given "
        "in the evidence as `answer`."
    )


def _after_failure(
    message: GenerationCompleted | ValidationRequested,
    failure: str,
    spec: TypeSpec,
    max_repairs: int,
) -> Envelope:
    if isinstance(message, GenerationCompleted) and message.repair < max_repairs:
        return message.derive(
            ValidationFailed,
            ids.repair(message.task_id, message.repair + 1),
            task_id=message.task_id,
            error=failure,
            output=message.output,
            repair=message.repair + 1,
        )
    if isinstance(message, ValidationRequested) and max_repairs > 0:
        return message.derive(
            GenerationRequested,
            ids.generation_rewrite(message.task_id),
            request=message.request,
            progress=message.progress,
            task_id=message.task_id,
            instructions=(
                f"{message.request.prompt}\n\n{_answered(message)}\n"
                f"Give this answer as {describe_type(spec)}."
            ),
            evidence={"answer": message.output, "validation_error": failure},
        )
    repairs = getattr(message, "repair", 0)
    return message.derive(
        JobFailed,
        ids.FAILED,
        status="validation_failed",
        error=f"{failure} (after {repairs} repair(s))",
        partial=message.output,
    )
