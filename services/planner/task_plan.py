"""The task plan: one model call, one repair, then a default plan.

Normalisation of a model's plan, because of how the pipeline runs tasks:
- without a graph on the job, graph_analysis tasks are dropped (nothing could answer them);
- a generation task hands its output to the validator, which ends the job, so generation
  tasks run last: they are merged into one final task (objectives joined, the last one's
  overrides and id kept), after the graph tasks in the model's order;
- at most MAX_GRAPH_TASKS graph tasks are kept, each may take the job's whole round budget;
- an invalid override value (an unknown dataType, say) is dropped with a note rather than
  failing a plan that is otherwise usable.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from postel.messages.intent import Intent, TaskIntentOverride
from postel.messages.job import JobRequest
from postel.messages.task import Task, TaskKind, TaskPlan
from postel.services.llm import ChatMessage, LLMClient
from postel.services.llm.ask import AnswerError, ask_json, read_object
from postel.services.planner.answers import planner_question, text_of
from postel.services.planner.render import graph_text
from postel.services.prompts import Capability, build_prompt
from postel.services.prompts.templates import TASK_PLAN
from pydantic import ValidationError

MAX_GRAPH_TASKS = 4
ANSWER_TOKENS = 600

_KINDS: dict[str, TaskKind] = {
    "graph_analysis": "graph_analysis",
    "graph": "graph_analysis",
    "analysis": "graph_analysis",
    "graph_query": "graph_analysis",
    "gasl": "graph_analysis",
    "generation": "generation",
    "generate": "generation",
    "write": "generation",
    "writing": "generation",
}
# Override keys as the model may spell them -> the TaskIntentOverride field.
_OVERRIDES = {
    "dataType": "data_type",
    "data_type": "data_type",
    "expectedFormats": "expected_formats",
    "expected_formats": "expected_formats",
    "qualityRequirements": "quality_requirements",
    "quality_requirements": "quality_requirements",
}


@dataclass(frozen=True)
class TaskPlanResult:
    """The plan, where it came from (`model`, `repaired`, `default` when the model's was
    unusable, `unasked` when the model was not asked), and notes on what was corrected or
    why the default was used, for the worker's log."""

    plan: TaskPlan
    source: Literal["model", "repaired", "default", "unasked"]
    notes: list[str] = field(default_factory=list)


async def plan_tasks(
    llm: LLMClient,
    request: JobRequest,
    intent: Intent,
    capability: Capability,
    graph_summary: dict[str, Any] | None,
) -> TaskPlanResult:
    """Ask for the task plan; one repair carrying the error; else `default_plan`. A minimal
    model is not asked when the request names entities of the job's graph: its plans were
    unusable, and one graph task over the request is the plan such a question needs."""
    has_graph = request.graph is not None
    if has_graph and capability == Capability.MINIMAL and intent.linked_entities:
        reason = "a minimal model on a question naming the graph's entities: one graph task"
        return TaskPlanResult(default_plan(request, intent), "unasked", [reason])
    context = _context(request, intent, graph_summary)
    answer = await ask_json(
        llm,
        planner_question(
            lambda repair: _prompt(capability, request, {**context, **repair}),
            lambda text: read_task_plan(text, has_graph=has_graph),
            request,
            ANSWER_TOKENS,
        ),
    )
    if answer.value is None:
        reason = f"task plan unusable twice ({'; then '.join(answer.problems)}): default plan used"
        return TaskPlanResult(default_plan(request, intent), "default", [reason])
    plan, notes = answer.value
    if answer.repaired:
        first = f"first answer unusable: {answer.problems[0]}"
        return TaskPlanResult(plan, "repaired", [first, *notes])
    return TaskPlanResult(plan, "model", notes)


def default_plan(request: JobRequest, intent: Intent) -> TaskPlan:
    """With a graph: analyse it for the request (the answer then goes to the validator, or
    to the writer for a text; services.planner.finish). Without: write it. The objective is
    the request's own prompt: a model's normalized request may be garbled."""
    if request.graph is None:
        write = Task(id="write", objective=request.prompt, kind="generation")
        return TaskPlan(overview="default plan: answer the request directly", tasks=[write])
    analyse = Task(id="analyse", objective=request.prompt, kind="graph_analysis")
    return TaskPlan(overview="default plan: analyse the graph for the request", tasks=[analyse])


def read_task_plan(text: str, *, has_graph: bool) -> tuple[TaskPlan, list[str]]:
    """The plan in a model answer, normalised (module docstring), and notes on corrections.
    Raises AnswerError when the answer holds no usable task."""
    answer = read_object(text)
    raw_tasks = answer.get("tasks")
    if not isinstance(raw_tasks, list) or not raw_tasks:
        raise AnswerError('"tasks" must be a non-empty list of task objects')
    notes: list[str] = []
    tasks = [_read_task(raw, index, notes) for index, raw in enumerate(raw_tasks)]
    tasks = _normalise(_unique_ids(tasks), has_graph, notes)
    return TaskPlan(overview=text_of(answer.get("overview")), tasks=tasks), notes


def _read_task(raw: Any, index: int, notes: list[str]) -> Task:
    where = f"tasks[{index}]"
    if not isinstance(raw, dict):
        raise AnswerError(f"{where} must be an object with id, objective and kind")
    objective = text_of(raw.get("objective") or raw.get("description") or raw.get("task"))
    if not objective:
        raise AnswerError(f"{where}.objective is missing")
    kind_text = text_of(raw.get("kind") or raw.get("type")).lower().replace("-", "_")
    kind = _KINDS.get(kind_text.replace(" ", "_"))
    if kind is None:
        expected = '"graph_analysis" or "generation"'
        raise AnswerError(f"{where}.kind must be {expected}, not {kind_text!r}")
    task_id = text_of(raw.get("id")) or f"t{index + 1}"
    return Task(id=task_id, objective=objective, kind=kind, override=_override(raw, where, notes))


def _override(raw: dict[str, Any], where: str, notes: list[str]) -> TaskIntentOverride:
    values = {_OVERRIDES[k]: v for k, v in raw.items() if k in _OVERRIDES and v is not None}
    formats = values.get("expected_formats")
    if isinstance(formats, str):  # "csv" or "csv, pdf" for ["csv"] / ["csv", "pdf"]
        values["expected_formats"] = [f for f in formats.replace(",", " ").split() if f]
    if isinstance(values.get("expected_formats"), list):
        values["expected_formats"] = [
            str(f).strip().lstrip(".").lower() for f in values["expected_formats"] if str(f).strip()
        ]
    kept: dict[str, Any] = {}
    for name, value in values.items():
        try:
            TaskIntentOverride.model_validate({name: value})
        except ValidationError:
            notes.append(f"{where}: dropped the invalid override {name}={json.dumps(value)}")
            continue
        kept[name] = value
    return TaskIntentOverride.model_validate(kept)


def _unique_ids(tasks: list[Task]) -> list[Task]:
    seen: set[str] = set()
    out = []
    for task in tasks:
        task_id, n = task.id, 2
        while task_id in seen:
            task_id, n = f"{task.id}-{n}", n + 1
        seen.add(task_id)
        out.append(task if task_id == task.id else task.model_copy(update={"id": task_id}))
    return out


def _normalise(tasks: list[Task], has_graph: bool, notes: list[str]) -> list[Task]:
    graph = [t for t in tasks if t.kind == "graph_analysis"]
    writes = [t for t in tasks if t.kind == "generation"]
    if graph and not has_graph:
        notes.append(f"dropped {len(graph)} graph_analysis task(s): the job has no graph")
        graph = []
    if len(graph) > MAX_GRAPH_TASKS:
        notes.append(f"kept the first {MAX_GRAPH_TASKS} of {len(graph)} graph_analysis tasks")
        graph = graph[:MAX_GRAPH_TASKS]
    if len(writes) > 1:
        notes.append(f"merged {len(writes)} generation tasks into the last one")
        objective = "\n".join(t.objective for t in writes)
        writes = [writes[-1].model_copy(update={"objective": objective})]
    kinds = [t.kind for t in tasks]
    if graph and kinds != sorted(kinds, key=lambda kind: kind == "generation"):
        notes.append("moved the generation task after the graph_analysis tasks")
    if not graph and not writes:
        raise AnswerError("no task is left: graph_analysis needs a graph, and none is attached")
    return graph + writes


def _context(
    request: JobRequest, intent: Intent, graph_summary: dict[str, Any] | None
) -> dict[str, str]:
    wanted = intent.model_dump(
        by_alias=True,
        include={
            "primary_goal",
            "data_type",
            "expected_formats",
            "quality_requirements",
            "success_criteria",
        },
    )
    wanted["resultType"] = request.desired_type.spelling()
    graph = (
        f"graph {request.graph!r}\n{graph_text(graph_summary, max_types=15)}"
        if request.graph
        else "No graph is attached to this job: plan no graph_analysis task."
    )
    return {"INTENT": json.dumps(wanted, ensure_ascii=False), "GRAPH": graph}


def _prompt(
    capability: Capability, request: JobRequest, context: dict[str, str]
) -> list[ChatMessage]:
    return build_prompt(TASK_PLAN, capability, user_text=request.prompt, context=context)
