"""The planner's three handlers: pure functions from the incoming message to the next ones.

Each takes the message, an LLMClient, the model's Capability and the job graph's schema
summary (`services.gasl.schema_summary.summarize_graph(adapter)`, None without a graph),
and returns a PlannerStep: the outgoing messages, built with `derive` under deterministic
keys (`plan`, `task:<i>`, `gasl:<i>:<round>`, `gen:<i>`, `validate:<i>`, `failed`), and
what was decided, for the hop's event: the HDT `decision` (continue, refine, pivot,
complete, or `capped` when the round cap ended the task) and a short `rationale` (the
model's evaluation or hypothesis, the problem with an unusable answer, the task plan).
`notes`, when given, collects one line per decision worth logging (a default plan, an
unusable answer, the round cap). LLM errors propagate to the worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from postel.messages.envelope import Envelope
from postel.messages.gasl import GaslPlan
from postel.messages.pipeline import (
    GaslPlanExecuted,
    GaslPlanRequested,
    IntentAnalyzed,
    JobFailed,
    RoundNote,
    TaskPlanned,
)
from postel.messages.task import JobProgress, Task
from postel.services.ipv import effective_settings
from postel.services.llm import LLMClient
from postel.services.planner.finish import after_task, generation_request, graph_outcome
from postel.services.planner.hdt import (
    UNUSABLE,
    RoundDecision,
    decide_round,
    plan_id,
    probe_plan,
    question_of,
)
from postel.services.planner.render import outcome_digest
from postel.services.planner.round_prompt import RoundInputs
from postel.services.planner.task_plan import plan_tasks
from postel.services.prompts import Capability

_OUTCOME_CHARS = 400

StepDecision = Literal["", "continue", "refine", "pivot", "complete", "capped"]


@dataclass(frozen=True)
class PlannerStep:
    """One handler's result: the messages to send, and the decision of an HDT round with
    its rationale (empty for a step that decides no round)."""

    messages: list[Envelope]
    decision: StepDecision = ""
    rationale: str = ""


async def on_intent_analyzed(
    msg: IntentAnalyzed,
    llm: LLMClient,
    capability: Capability,
    graph_summary: dict[str, Any] | None = None,
    *,
    notes: list[str] | None = None,
) -> PlannerStep:
    """Plan the job's tasks -> TaskPlanned for the first one."""
    result = await plan_tasks(llm, msg.request, msg.progress.intent, capability, graph_summary)
    _note(notes, *(f"task plan ({result.source}): {line}" for line in result.notes))
    progress = msg.progress.model_copy(
        update={"plan": result.plan, "task_index": 0, "outcomes": []}
    )
    tasks = "; ".join(f"{t.id} {t.kind}: {t.objective}" for t in result.plan.tasks)
    return PlannerStep(
        [msg.derive(TaskPlanned, "plan", request=msg.request, progress=progress)],
        rationale=f"task plan ({result.source}): {tasks}",
    )


async def on_task_planned(
    msg: TaskPlanned,
    llm: LLMClient,
    capability: Capability,
    graph_summary: dict[str, Any] | None = None,
    *,
    notes: list[str] | None = None,
) -> PlannerStep:
    """A generation task -> GenerationRequested; a graph task -> its first GASL plan."""
    task = msg.progress.task
    if task is None:
        return _failed(msg, f"task.planned points at task {msg.progress.task_index}, past the plan")
    if task.kind == "generation":
        instructions = task.objective
        if task.objective.strip() != msg.request.prompt.strip():
            instructions += f"\n\nThe job's request: {msg.request.prompt}"
        return PlannerStep(
            [generation_request(msg, msg.request, msg.progress, task, instructions)],
            rationale=f"task {task.id}: written by the generator",
        )
    if msg.request.graph is None:
        return _failed(msg, f"task {task.id!r} analyses a graph, but the job names none")
    first = RoundInputs(
        question=question_of(task, msg.request),
        task_index=msg.progress.task_index,
        round_number=0,
        max_rounds=effective_settings(msg.request).max_rounds,
        graph_summary=graph_summary,
    )
    decision = await decide_round(llm, capability, msg.request, first)
    plan, hypothesis = _next_plan(decision, msg.progress.task_index, 0, graph_summary, notes)
    note = RoundNote(round=0, hypothesis=hypothesis, plan=plan)
    # a probe replacing an unusable answer (or a premature COMPLETE) is a refine
    taken = "refine" if hypothesis.startswith(UNUSABLE) else decision.decision
    return PlannerStep([_request_plan(msg, msg.progress, 0, plan, [note])], taken, hypothesis)


async def on_gasl_executed(
    msg: GaslPlanExecuted,
    llm: LLMClient,
    capability: Capability,
    graph_summary: dict[str, Any] | None = None,
    *,
    notes: list[str] | None = None,
) -> PlannerStep:
    """Evaluate round `msg.round` and propose the next plan in one call; COMPLETE or the round
    cap ends the task (services.planner.finish says what follows)."""
    task = msg.progress.task
    if task is None or task.kind != "graph_analysis":
        return _failed(msg, "gasl.plan_executed for a job that is not on a graph task")
    index, executed = msg.progress.task_index, msg.round
    history = _with_outcome(msg, outcome_digest(msg.records, msg.error))
    last = history[-1].hypothesis
    max_rounds = effective_settings(msg.request).max_rounds
    following = RoundInputs(
        question=question_of(task, msg.request),
        task_index=index,
        round_number=executed + 1,
        max_rounds=max_rounds,
        graph_summary=graph_summary,
        state_summary=msg.state_summary,
        history=history,
        records=msg.records,
        error=msg.error,
        problem=last if last.startswith(UNUSABLE) else None,
    )
    decision = await decide_round(llm, capability, msg.request, following)
    if decision.evaluation:
        judged = f"{history[-1].outcome}; judged: {decision.evaluation}"[:_OUTCOME_CHARS]
        history[-1] = history[-1].model_copy(update={"outcome": judged})
    judgement = decision.evaluation or decision.hypothesis
    if decision.decision == "complete":
        answered = judgement or f"answer: {decision.answer}"
        return PlannerStep(
            _finish(msg, task, decision.answer, incomplete=False), "complete", answered
        )
    if executed + 1 >= max_rounds:
        _note(notes, f"task {task.id}: round cap {max_rounds} reached without COMPLETE")
        capped = f"round cap {max_rounds} reached without COMPLETE; {judgement}".rstrip("; ")
        return PlannerStep(_finish(msg, task, None, incomplete=True), "capped", capped)
    plan, hypothesis = _next_plan(decision, index, executed + 1, graph_summary, notes)
    note = RoundNote(round=executed + 1, hypothesis=hypothesis, plan=plan)
    return PlannerStep(
        [_request_plan(msg, msg.progress, executed + 1, plan, [*history, note])],
        decision.decision,
        decision.problem or judgement,
    )


def _next_plan(
    decision: RoundDecision,
    task_index: int,
    round_number: int,
    graph_summary: dict[str, Any] | None,
    notes: list[str] | None,
) -> tuple[GaslPlan, str]:
    """The plan to run and the hypothesis to remember; an unusable answer, or a COMPLETE
    before any plan has run, becomes a probe and a problem for the next prompt."""
    problem = decision.problem
    if decision.plan is None and problem is None:
        problem = f"{UNUSABLE}: answer only after a plan has gathered evidence from the graph"
    if problem is not None:
        _note(notes, f"round {round_number}: {problem}; a probe plan runs instead")
        return probe_plan(plan_id(task_index, round_number), graph_summary), problem
    assert decision.plan is not None  # no problem means the model gave a plan
    if decision.alternatives:
        _note(
            notes,
            f"round {round_number}: took the most confident of {decision.alternatives + 1} plans",
        )
    return decision.plan, decision.hypothesis


def _with_outcome(msg: GaslPlanExecuted, digest: str) -> list[RoundNote]:
    """The history with round `msg.round`'s outcome filled in (its note added if missing)."""
    history = list(msg.history)
    if history and history[-1].round == msg.round:
        history[-1] = history[-1].model_copy(update={"outcome": digest[:_OUTCOME_CHARS]})
    else:
        history.append(RoundNote(round=msg.round, plan=msg.plan, outcome=digest[:_OUTCOME_CHARS]))
    return history


def _finish(msg: GaslPlanExecuted, task: Task, answer: Any, *, incomplete: bool) -> list[Envelope]:
    outcome = graph_outcome(task, msg, answer, incomplete=incomplete)
    progress = msg.progress.model_copy(update={"outcomes": [*msg.progress.outcomes, outcome]})
    return after_task(msg, msg.request, progress)


def _request_plan(
    msg: TaskPlanned | GaslPlanExecuted,
    progress: JobProgress,
    round_number: int,
    plan: GaslPlan,
    history: list[RoundNote],
) -> GaslPlanRequested:
    return msg.derive(
        GaslPlanRequested,
        f"gasl:{progress.task_index}:{round_number}",
        request=msg.request,
        progress=progress,
        round=round_number,
        plan=plan,
        history=history,
    )


def _failed(msg: Envelope, error: str) -> PlannerStep:
    return PlannerStep([msg.derive(JobFailed, "failed", status="plan_failed", error=error)])


def _note(notes: list[str] | None, *lines: str) -> None:
    if notes is not None:
        notes.extend(lines)
