"""One HDT round with the model: evaluate the last plan's records and, in the same call,
decide and propose the next plan (evaluating and hypothesizing in one call saves a round trip).

The model may rank several `next_actions` (a hook for searching several branches later); the
planner takes the most confident. An unusable answer is not an error: the round becomes a
`refine` whose plan is a read-only probe, and the problem goes back to the model in the next
prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from postel.messages.gasl import GaslPlan
from postel.messages.job import JobRequest
from postel.messages.task import Task
from postel.services.llm import LLMClient
from postel.services.llm.ask import ask_json
from postel.services.planner.answers import planner_question
from postel.services.planner.probe import probe_plan
from postel.services.planner.round_answer import Decision, read_round_answer
from postel.services.planner.round_grammar import round_answer_gbnf
from postel.services.planner.round_prompt import RoundInputs, round_messages
from postel.services.planner.schema_grammar import answerable, schema_round_gbnf
from postel.services.prompts import Capability

ANSWER_TOKENS = 512
# Marks a round whose plan the planner chose because the model's answer was unusable.
UNUSABLE = "your previous answer could not be used"


@dataclass(frozen=True)
class RoundDecision:
    """What the planner does next. `problem` is set when the answer was unusable; `plan` is
    None only for `complete`."""

    decision: Decision
    evaluation: str
    hypothesis: str
    answer: Any
    plan: GaslPlan | None
    alternatives: int = 0
    problem: str | None = None
    # an empty answer that needs no confirming round (services.planner.card_chains)
    settled: bool = False


def plan_id(task_index: int, round_number: int) -> str:
    """Deterministic and unique per job: the executor refuses an id it has cancelled."""
    return f"t{task_index}-r{round_number}"


def question_of(task: Task, request: JobRequest) -> str:
    if task.objective.strip() == request.prompt.strip():
        return task.objective
    return f"{task.objective}\n(the job's request: {request.prompt})"


async def decide_round(
    llm: LLMClient, capability: Capability, request: JobRequest, round_: RoundInputs
) -> RoundDecision:
    """Ask the model about round `round_.round_number` (the plan it proposes runs as that
    round)."""
    question = planner_question(
        lambda _: round_messages(capability, round_), read_round_answer, request, ANSWER_TOKENS
    )
    # an endpoint that takes a grammar decodes the answer under it: every command parses, and
    # with a focus every name in it is one of the graph's (a complete only of rows found)
    grammar = (
        round_answer_gbnf()
        if round_.focus is None
        else schema_round_gbnf(
            round_.focus,
            answerable(round_.focus, round_.records),
            compact=capability != Capability.STANDARD,
        )
    )
    question = replace(question, grammar=grammar)
    if round_.focus is not None and capability != Capability.STANDARD:
        # a small model choosing among a few names: greedy, so a question gets one answer
        question = replace(question, temperature=0.0)
    # one call: an unusable answer is not repaired here but becomes a probe plan, and its
    # problem is shown in the next round's prompt
    asked = await ask_json(llm, question, repairs=0)
    name = plan_id(round_.task_index, round_.round_number)
    answer = asked.value
    if answer is None:
        return RoundDecision(
            decision="refine",
            evaluation="",
            hypothesis="",
            answer=None,
            plan=probe_plan(name, round_.graph_summary, round_.question, round_.linked),
            problem=f"{UNUSABLE}: {asked.error}",
        )
    if answer.decision == "complete":
        return RoundDecision("complete", answer.evaluation, answer.hypothesis, answer.answer, None)
    best = answer.actions[0]
    plan = GaslPlan(plan_id=name, why=best.why, commands=best.commands, config=best.config)
    return RoundDecision(
        decision=best.action,
        evaluation=answer.evaluation,
        hypothesis=answer.hypothesis or best.why,
        answer=None,
        plan=plan,
        alternatives=len(answer.actions) - 1,
    )
