"""The planner's entry point, `handle`, and its three handlers: pure functions from the
incoming message to the next ones.

Each handler takes the message, an LLMClient, the model's Capability and the job graph's
schema summary (`services.gasl.schema_summary.summarize_graph(adapter)`, None without a
graph), and returns a Step: the outgoing messages (ids from messages/ids.py) and what was
decided, for the hop's event: the HDT `decision` (continue, refine, pivot, complete, or
`capped` when the round cap ended the task), a short `rationale` (the model's evaluation or
hypothesis, the problem with an unusable answer, the task plan) and the round evaluated.
`notes`, when given, collects one line per decision worth logging (a default plan, an
unusable answer, the round cap). LLM errors propagate to the worker; a graph task on a job
that names no graph raises GraphNotFound (the runtime's one missing-graph policy).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

import structlog
from postel.messages import ids
from postel.messages.envelope import Envelope
from postel.messages.errors import GraphNotFound
from postel.messages.gasl import GaslPlan
from postel.messages.pipeline import (
    GaslPlanExecuted,
    GaslPlanRequested,
    IntentAnalyzed,
    JobFailed,
    RoundNote,
    TaskPlanned,
    ValidationRequested,
)
from postel.messages.task import JobProgress, Task
from postel.services.gasl.errors import PlanSyntaxError
from postel.services.gasl.executor import parse_plan
from postel.services.ipv import effective_settings
from postel.services.llm import LLMClient
from postel.services.planner.card_chains import after_chain, first_chain
from postel.services.planner.empty import (
    EMPTY_ANSWER,
    PlanStop,
    asked_to_confirm,
    confirm_empty,
    is_empty,
    never_reached,
    plan_stop,
)
from postel.services.planner.finish import after_task, generation_request, graph_outcome
from postel.services.planner.hdt import (
    UNUSABLE,
    RoundDecision,
    decide_round,
    plan_id,
    question_of,
)
from postel.services.planner.probe import linked_nodes, probe_plan
from postel.services.planner.reference import (
    ReferenceProblem,
    RoundReader,
    find_reference,
    resolve,
    rounds_to_search,
)
from postel.services.planner.render import outcome_digest
from postel.services.planner.round_prompt import RoundInputs
from postel.services.planner.schema_grammar import SchemaChoice, answerable, schema_choice
from postel.services.planner.task_plan import plan_tasks
from postel.services.prompts import Capability
from postel.services.step import HopFigures, Step

log = structlog.get_logger(__name__)

_OUTCOME_CHARS = 400

StepDecision = Literal["", "continue", "refine", "pivot", "complete", "capped"]


@dataclass(frozen=True)
class PlannerDeps:
    """The planner's model, the job graph's schema summary (None without a graph) and how to
    read the state a round left, for answers by reference (None: `COMPLETE: ${var}` is
    refused as unreadable)."""

    llm: LLMClient
    capability: Capability
    graph_summary: dict[str, Any] | None = None
    read_round: RoundReader | None = None
    # the graph's schema card (services.linking.card): with it, each round names only what
    # the question is about (services.planner.schema_grammar); None: the whole schema
    schema_card: dict[str, Any] | None = None


async def handle(
    message: IntentAnalyzed | TaskPlanned | GaslPlanExecuted, deps: PlannerDeps
) -> Step:
    """The planner's one entry point: the handler for the message's type; each decision
    worth a log line (a default plan, an unusable answer, the round cap) is logged."""
    notes: list[str] = []
    handler: Handler = HANDLERS[type(message)]
    reads: dict[str, Any] = {}
    if isinstance(message, GaslPlanExecuted):
        reads["read_round"] = deps.read_round
    if isinstance(message, TaskPlanned | GaslPlanExecuted):
        reads["schema_card"] = deps.schema_card
    step = await handler(
        message, deps.llm, deps.capability, deps.graph_summary, notes=notes, **reads
    )
    for note in notes:
        log.info("planner decision", note=note)
    return step


def _step(
    messages: list[Envelope], decision: StepDecision = "", rationale: str = "", round_: int = 0
) -> Step:
    """A handler's result: the messages, and the HDT round's decision with its rationale
    (empty for a step that decides no round)."""
    return Step(messages, HopFigures(round=round_, decision=decision, rationale=rationale))


async def on_intent_analyzed(
    msg: IntentAnalyzed,
    llm: LLMClient,
    capability: Capability,
    graph_summary: dict[str, Any] | None = None,
    *,
    notes: list[str] | None = None,
) -> Step:
    """Plan the job's tasks -> TaskPlanned for the first one."""
    result = await plan_tasks(llm, msg.request, msg.progress.intent, capability, graph_summary)
    _note(notes, *(f"task plan ({result.source}): {line}" for line in result.notes))
    progress = msg.progress.model_copy(
        update={"plan": result.plan, "task_index": 0, "outcomes": []}
    )
    tasks = "; ".join(f"{t.id} {t.kind}: {t.objective}" for t in result.plan.tasks)
    return _step(
        [msg.derive(TaskPlanned, ids.TASK_PLAN, request=msg.request, progress=progress)],
        rationale=_task_plan_rationale(result.source, tasks),
    )


FELL_BACK = "task plan unusable, fell back to the default plan"
"""How a task-plan event's rationale begins when the model's plan could not be used."""


def _task_plan_rationale(source: str, tasks: str) -> str:
    """The task plan for the hop's event; a default plan says the model's was unusable, so
    nobody reads the fallback as the model's plan."""
    if source == "default":
        return f"{FELL_BACK}: {tasks}"
    if source == "unasked":
        return f"task plan (one graph task; a minimal model is not asked for one): {tasks}"
    return f"task plan ({source}): {tasks}"


async def on_task_planned(
    msg: TaskPlanned,
    llm: LLMClient,
    capability: Capability,
    graph_summary: dict[str, Any] | None = None,
    *,
    notes: list[str] | None = None,
    schema_card: dict[str, Any] | None = None,
) -> Step:
    """A generation task -> GenerationRequested; a graph task -> its first GASL plan."""
    task = msg.progress.task
    if task is None:
        return _failed(msg, f"task.planned points at task {msg.progress.task_index}, past the plan")
    if task.kind == "generation":
        instructions = task.objective
        if task.objective.strip() != msg.request.prompt.strip():
            instructions += f"\n\nThe job's request: {msg.request.prompt}"
        return _step(
            [generation_request(msg, msg.request, msg.progress, task, instructions)],
            rationale=f"task {task.id}: written by the generator",
        )
    if msg.request.graph is None:
        raise GraphNotFound(None)
    focus = _focus(schema_card, msg)
    if focus is not None and _small(capability) and not focus.entities:
        return _not_in_graph(msg, task)
    first = RoundInputs(
        question=question_of(task, msg.request),
        task_index=msg.progress.task_index,
        round_number=0,
        max_rounds=effective_settings(msg.request).max_rounds,
        graph_summary=graph_summary,
        linked=linked_nodes(msg.progress.intent),
        focus=focus,
    )
    unasked = first_chain(focus, msg.progress.task_index) if _small(capability) else None
    if unasked is not None:
        _note(notes, "round 0: the schema card gives one chain; it runs without a model call")
    decision = unasked or await decide_round(llm, capability, msg.request, first)
    plan, hypothesis = _next_plan(decision, first, notes)
    note = RoundNote(round=0, hypothesis=hypothesis, plan=plan)
    taken = _taken(decision, hypothesis)
    return _step([_request_plan(msg, msg.progress, 0, plan, [note])], taken, hypothesis)


async def on_gasl_executed(
    msg: GaslPlanExecuted,
    llm: LLMClient,
    capability: Capability,
    graph_summary: dict[str, Any] | None = None,
    *,
    notes: list[str] | None = None,
    read_round: RoundReader | None = None,
    schema_card: dict[str, Any] | None = None,
) -> Step:
    """Evaluate round `msg.round` and propose the next plan in one call; COMPLETE or the round
    cap ends the task (services.planner.finish says what follows). A COMPLETE by reference
    (`${var}`) is read through `read_round`; one that names nothing goes on as a refine whose
    next prompt shows why, and an empty one is confirmed once (services.planner.empty)."""
    task = msg.progress.task
    if task is None or task.kind != "graph_analysis":
        return _failed(msg, "gasl.plan_executed for a job that is not on a graph task")
    index, executed = msg.progress.task_index, msg.round
    history = _with_outcome(msg, outcome_digest(msg.records, msg.error))
    last = history[-1].hypothesis
    max_rounds = effective_settings(msg.request).max_rounds
    stop = plan_stop(msg.plan, msg.records)
    following = RoundInputs(
        question=question_of(task, msg.request),
        task_index=index,
        round_number=executed + 1,
        max_rounds=max_rounds,
        graph_summary=graph_summary,
        focus=_focus(schema_card, msg),
        state_summary=msg.state_summary,
        history=history,
        records=msg.records,
        error=msg.error,
        problem=last if last.startswith((UNUSABLE, EMPTY_ANSWER)) else None,
        stopped=stop.text(),
        linked=linked_nodes(msg.progress.intent),
    )
    unasked = (
        after_chain(following.focus, msg.plan, msg.records, history, index, executed + 1)
        if _small(capability)
        else None
    )
    if unasked is not None:
        _note(notes, f"round {executed + 1}: decided from the card chain's result, unasked")
        decision = unasked
    else:
        decision = await decide_round(llm, capability, msg.request, following)
    if _small(capability):
        decision = _same_plan_answers(decision, msg, following.focus)
    if decision.evaluation:
        judged = f"{history[-1].outcome}; judged: {decision.evaluation}"[:_OUTCOME_CHARS]
        history[-1] = history[-1].model_copy(update={"outcome": judged})
    judgement = decision.evaluation or decision.hypothesis
    if decision.decision == "complete":
        try:
            answer, reference = await _answer_of(decision.answer, msg, read_round, stop)
        except ReferenceProblem as problem:
            decision = replace(decision, decision="refine", problem=f"{UNUSABLE}: {problem}")
        else:
            if reference is not None and is_empty(answer):
                confirmed = (
                    decision.settled or asked_to_confirm(history) or msg.request.options.allow_empty
                )
                if not confirmed and executed + 1 < max_rounds:
                    problem = confirm_empty(reference)
                    decision = replace(decision, decision="refine", problem=problem)
        if decision.decision == "complete":
            answered = judgement or f"answer: {reference or decision.answer}"
            finished = _finish(msg, task, answer, incomplete=False, reference=reference)
            return _step(finished, "complete", answered, executed)
    if executed + 1 >= max_rounds:
        _note(notes, f"task {task.id}: round cap {max_rounds} reached without COMPLETE")
        why = decision.problem or judgement
        capped = f"round cap {max_rounds} reached without COMPLETE; {why}".rstrip("; ")
        return _step(_finish(msg, task, None, incomplete=True), "capped", capped, executed)
    decision = _refuse_repeat(decision, history)
    plan, hypothesis = _next_plan(decision, following, notes)
    taken = _taken(decision, hypothesis)
    history, state_from = _branch(history, taken, msg)
    if state_from is not None:
        _note(notes, f"task {task.id}: pivot; round {executed + 1} starts from round {state_from}")
    note = RoundNote(round=executed + 1, hypothesis=hypothesis, plan=plan, decision=taken)
    return _step(
        [_request_plan(msg, msg.progress, executed + 1, plan, [*history, note], state_from)],
        taken,
        decision.problem or judgement,
        executed,
    )


def _small(capability: Capability) -> bool:
    """A model that chooses among the names it is shown rather than writing plans."""
    return capability != Capability.STANDARD


def _focus(card: dict[str, Any] | None, msg: TaskPlanned | GaslPlanExecuted) -> SchemaChoice | None:
    """What the job's rounds may name, ranked against the request's own words."""
    if card is None:
        return None
    return schema_choice(card, msg.request.prompt, msg.progress.intent.linked_entities)


NOT_IN_GRAPH = "Not in the graph: graph {graph!r} holds nothing the request names."
"""The answer when a small model's question names no entity of the job's graph."""


def _not_in_graph(msg: TaskPlanned, task: Task) -> Step:
    """A small model walks from the entities the request names; when the graph holds none of
    them there is nothing to walk from, and the answer says so instead of inventing one: a
    text answer is that sentence, any other type fails the job with it."""
    said = NOT_IN_GRAPH.format(graph=msg.request.graph)
    if msg.request.desired_type.kind == "str":
        answer = msg.derive(
            ValidationRequested,
            ids.validation(msg.progress.task_index),
            request=msg.request,
            progress=msg.progress,
            task_id=task.id,
            output=said,
        )
        return _step([answer], "complete", said)
    failed = msg.derive(JobFailed, ids.FAILED, status="invalid_request", error=said)
    return _step([failed], rationale=said)


def _same_plan_answers(
    decision: RoundDecision, msg: GaslPlanExecuted, focus: SchemaChoice | None
) -> RoundDecision:
    """On a small model's question with a focus, a model that proposes again the plan that
    just found rows says that plan answers it: running it again could find nothing new, so its last
    variable is the answer (`${var}`), as a COMPLETE naming it would have said."""
    if focus is None or decision.plan is None:
        return decision
    filled = answerable(focus, msg.records)
    if not filled or _commands_of(decision.plan) != _commands_of(msg.plan):
        return decision
    why = "the plan proposed again is the one that just found rows: its result is the answer"
    return replace(
        decision,
        decision="complete",
        answer=f"${{{filled[0]}}}",
        plan=None,
        evaluation=decision.evaluation or why,
    )


def _next_plan(
    decision: RoundDecision, inputs: RoundInputs, notes: list[str] | None
) -> tuple[GaslPlan, str]:
    """The plan to run as round `inputs.round_number` and the hypothesis to remember; an
    unusable answer, a COMPLETE before any plan has run, or an empty answer to confirm
    becomes a probe of what the question names, and a problem for the next prompt."""
    problem = decision.problem
    round_number = inputs.round_number
    if decision.plan is None and problem is None:
        problem = f"{UNUSABLE}: answer only after a plan has gathered evidence from the graph"
    if problem is not None:
        _note(notes, f"round {round_number}: {problem}; a probe plan runs instead")
        name = plan_id(inputs.task_index, round_number)
        return probe_plan(name, inputs.graph_summary, inputs.question, inputs.linked), problem
    assert decision.plan is not None  # no problem means the model gave a plan
    if decision.alternatives:
        _note(
            notes,
            f"round {round_number}: took the most confident of {decision.alternatives + 1} plans",
        )
    return decision.plan, decision.hypothesis


def _commands_of(plan: GaslPlan) -> tuple[str, ...]:
    return tuple(" ".join(command.split()) for command in plan.commands)


def _refuse_repeat(decision: RoundDecision, history: list[RoundNote]) -> RoundDecision:
    """A plan that does not parse fails the same way every time, whatever the state: one
    identical (commands, whitespace aside) to a plan already run is not run again; the
    round becomes a refine (a probe runs) and the model is told which round ran it.
    A plan that parsed may be proposed again: its failure may depend on the state."""
    if decision.plan is None or decision.problem is not None:
        return decision
    try:
        parse_plan(decision.plan.commands)
    except PlanSyntaxError as error:
        proposed = _commands_of(decision.plan)
        for note in reversed(history):
            if note.plan is not None and _commands_of(note.plan) == proposed:
                problem = (
                    f"{UNUSABLE}: its plan is the one round {note.round} ran, which does not "
                    f"parse ({error}); it was not run again. Propose a different plan"
                )
                return replace(decision, decision="refine", problem=problem)
    return decision


def _taken(decision: RoundDecision, hypothesis: str) -> StepDecision:
    """The decision the round acts on: a probe replacing an unusable answer (or a premature
    COMPLETE) is a refine."""
    return "refine" if hypothesis.startswith(UNUSABLE) else decision.decision


def _branch(
    history: list[RoundNote], decision: str, failed: GaslPlanExecuted
) -> tuple[list[RoundNote], int | None]:
    """A pivot gives up the hypothesis of the round just run: that round is marked abandoned
    and the next one starts from the state it started from (its base round's). Continue and
    refine build on what it left (None: the round before)."""
    if decision != "pivot":
        return history, None
    marked = [
        note.model_copy(update={"abandoned": True}) if note.round == failed.round else note
        for note in history
    ]
    return marked, failed.base_round


def _with_outcome(msg: GaslPlanExecuted, digest: str) -> list[RoundNote]:
    """The history with round `msg.round`'s outcome filled in (its note added if missing)."""
    history = list(msg.history)
    if history and history[-1].round == msg.round:
        history[-1] = history[-1].model_copy(update={"outcome": digest[:_OUTCOME_CHARS]})
    else:
        history.append(RoundNote(round=msg.round, plan=msg.plan, outcome=digest[:_OUTCOME_CHARS]))
    return history


async def _answer_of(
    written: Any, msg: GaslPlanExecuted, read_round: RoundReader | None, stop: PlanStop
) -> tuple[Any, str | None]:
    """The task's answer and, when the model named a state value, that reference (a variable
    the plan just run stopped before assigning names nothing, whatever earlier rounds left)."""
    reference = find_reference(written)
    if reference is None:
        return written, None
    if reference.name in stop.unreached:
        raise ReferenceProblem(never_reached(reference.name, stop))
    rounds = rounds_to_search(msg)
    value = await resolve(reference, read_round, msg.progress.task_index, rounds)
    return value, reference.text


def _finish(
    msg: GaslPlanExecuted,
    task: Task,
    answer: Any,
    *,
    incomplete: bool,
    reference: str | None = None,
) -> list[Envelope]:
    outcome = graph_outcome(task, msg, answer, incomplete=incomplete, reference=reference)
    progress = msg.progress.model_copy(update={"outcomes": [*msg.progress.outcomes, outcome]})
    return after_task(msg, msg.request, progress)


def _request_plan(
    msg: TaskPlanned | GaslPlanExecuted,
    progress: JobProgress,
    round_number: int,
    plan: GaslPlan,
    history: list[RoundNote],
    state_from: int | None = None,
) -> GaslPlanRequested:
    return msg.derive(
        GaslPlanRequested,
        ids.gasl_round(progress.task_index, round_number),
        request=msg.request,
        progress=progress,
        round=round_number,
        plan=plan,
        history=history,
        state_from=state_from,
    )


def _failed(msg: Envelope, error: str) -> Step:
    return _step([msg.derive(JobFailed, ids.FAILED, status="plan_failed", error=error)])


def _note(notes: list[str] | None, *lines: str) -> None:
    if notes is not None:
        notes.extend(lines)


Handler = Callable[..., Awaitable[Step]]
HANDLERS: dict[type[Envelope], Handler] = {
    IntentAnalyzed: on_intent_analyzed,
    TaskPlanned: on_task_planned,
    GaslPlanExecuted: on_gasl_executed,
}
