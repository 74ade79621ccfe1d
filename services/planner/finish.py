"""What follows a finished task: the next task, the writer, or the validator.

- tasks remain -> TaskPlanned for the next one;
- the last task answered and the job wants `document` or `str` -> GenerationRequested: the
  writer turns the answer and its findings into the final text, citing sources;
- the last task answered and the job wants a value (number, bool, list, dict, JSON Schema)
  -> ValidationRequested with the answer as output: the validator coerces it directly;
- the last task ended at the round cap without an answer -> GenerationRequested marked
  `incomplete_evidence`, whatever the type: there is no answer to validate, only findings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from postel.messages import ids
from postel.messages.envelope import Envelope
from postel.messages.gasl import ExecutionRecord
from postel.messages.job import JobRequest
from postel.messages.pipeline import (
    GaslPlanExecuted,
    GenerationRequested,
    TaskPlanned,
    ValidationRequested,
)
from postel.messages.task import JobProgress, Task, TaskOutcome
from postel.services.planner.render import compact
from postel.services.validation.grounding import found_names

MAX_SOURCES = 100
_WRITTEN_TYPES = frozenset({"document", "str"})
_SOURCE_KEYS = frozenset({"source_ids", "source_id", "provenance", "sources"})


def provenance_of(records: Sequence[ExecutionRecord], state_summary: dict[str, Any]) -> list[str]:
    """Source ids behind a task's answer: the records' first, then any in the state sample."""
    found: dict[str, None] = {}
    for record in records:
        found.update(dict.fromkeys(record.provenance))
    _collect_sources(state_summary, found)
    return list(found)[:MAX_SOURCES]


def _collect_sources(value: Any, found: dict[str, None], under_source_key: bool = False) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _collect_sources(item, found, key in _SOURCE_KEYS)
    elif isinstance(value, list):
        for item in value:
            _collect_sources(item, found, under_source_key)
    elif under_source_key and isinstance(value, str) and value:
        found.setdefault(value, None)


def graph_outcome(
    task: Task,
    message: GaslPlanExecuted,
    answer: Any,
    *,
    incomplete: bool,
    reference: str | None = None,
) -> TaskOutcome:
    """A graph task's outcome: the state summary as evidence, plus the last plan's results
    (values such as a COUNT live in context variables, not in the state)."""
    last_results = [
        {
            "command": record.command,
            "status": record.status,
            "count": record.count,
            "rows": [compact(row) for row in record.rows],
            **({"error": record.error} if record.error else {}),
        }
        for record in message.records
    ]
    return TaskOutcome(
        task_id=task.id,
        answer=answer,
        reference=reference,
        incomplete=incomplete,
        evidence={**message.state_summary, "last_results": last_results},
        provenance=provenance_of(message.records, message.state_summary),
    )


def evidence_of(progress: JobProgress) -> dict[str, Any]:
    """Earlier tasks' outcomes, as the writer reads them."""
    objectives = {t.id: t.objective for t in progress.plan.tasks} if progress.plan else {}
    return {
        "tasks": [
            {
                "task_id": outcome.task_id,
                "objective": objectives.get(outcome.task_id, ""),
                "answer": outcome.answer,
                # the answer is that state value, whole: the model did not type it
                **({"reference": outcome.reference} if outcome.reference else {}),
                "incomplete": outcome.incomplete,
                "findings": outcome.evidence,
                "sources": outcome.provenance,
            }
            for outcome in progress.outcomes
        ]
    }


def generation_request(
    message: Envelope, request: JobRequest, progress: JobProgress, task: Task, instructions: str
) -> GenerationRequested:
    return message.derive(
        GenerationRequested,
        ids.generation(progress.task_index),
        request=request,
        progress=progress,
        task_id=task.id,
        instructions=instructions,
        evidence=evidence_of(progress),
        incomplete_evidence=any(outcome.incomplete for outcome in progress.outcomes),
    )


def after_task(message: Envelope, request: JobRequest, progress: JobProgress) -> list[Envelope]:
    """The next message once the current task's outcome is the last of `progress.outcomes`."""
    task, outcome = progress.task, progress.outcomes[-1]
    assert task is not None and progress.plan is not None  # the caller just finished `task`
    index = progress.task_index
    if index + 1 < len(progress.plan.tasks):
        following = progress.model_copy(update={"task_index": index + 1})
        return [
            message.derive(
                TaskPlanned, ids.task_start(index + 1), request=request, progress=following
            )
        ]
    if outcome.incomplete or request.desired_type.kind in _WRITTEN_TYPES:
        return [
            generation_request(message, request, progress, task, _write_up(task, request, outcome))
        ]
    return [
        message.derive(
            ValidationRequested,
            ids.validation(index),
            request=request,
            progress=progress,
            task_id=task.id,
            output=outcome.answer,
        )
    ]


def _write_up(task: Task, request: JobRequest, outcome: TaskOutcome) -> str:
    if outcome.incomplete:
        verdict = (
            "The graph analysis reached its round limit before it concluded: write the best "
            "result the findings support and say plainly what could not be established."
        )
    elif outcome.reference:
        verdict = (
            f"The analysis's answer is the value of {outcome.reference} it found, given whole "
            "in the evidence (the task's answer): write the final result from all of it."
        )
    else:
        verdict = "Write the final result from the analysis's answer and its findings."
    names = found_names([outcome])
    state = f"\nThe analysis found these; state them: {'; '.join(names)}" if names else ""
    return (
        f"{verdict} Cite the source ids behind each claim.\n"
        f"Analysis task: {task.objective}\nThe job's request: {request.prompt}{state}"
    )
