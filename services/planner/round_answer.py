"""Reading one HDT round answer: the evaluation of the last plan and the next step.

Liberal on input, but not on an echo: a decision copied from the prompt's template
(`continue|refine|pivot|complete`, a round label `plan t0-r0: ...`) is refused as no
decision. A bare `COMPLETE: <answer>` line (how models end a search by habit) is a complete
decision; `decision` may be a synonym ("done", "retry") or `COMPLETE: <answer>` itself; a plan
may be a plan object, a list of commands, or commands in one string;
`plan`/`commands` at the top level count as one action. The model's plan ids are ignored:
the planner names each plan after its task and round.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from postel.messages.gasl import PlanConfig
from postel.services.llm.ask import AnswerError, read_object
from postel.services.planner.answers import text_of
from pydantic import ValidationError

Decision = Literal["continue", "refine", "pivot", "complete"]

_DECISIONS: dict[str, Decision] = {
    "continue": "continue",
    "next": "continue",
    "proceed": "continue",
    "refine": "refine",
    "retry": "refine",
    "fix": "refine",
    "pivot": "pivot",
    "change": "pivot",
    "complete": "complete",
    "completed": "complete",
    "done": "complete",
    "terminate": "complete",
    "final": "complete",
    "stop": "complete",
}
_COMPLETE_LINE = re.compile(r"^\s*COMPLETE\s*:\s*(?P<answer>.+)", re.IGNORECASE | re.DOTALL)
_COMPLETE_IN_TEXT = re.compile(r"^\s*COMPLETE\s*:\s*(?P<answer>.+)$", re.IGNORECASE | re.MULTILINE)
DEFAULT_CONFIDENCE = 0.5
# what a model copies from the prompt instead of deciding: the format's list of decisions
# ("continue|refine|pivot|complete") or a round's label from HISTORY ("plan t0-r0: ...")
_ECHOED = re.compile(r"\w\s*\|\s*\w|^\s*plan\s+t\d+-r\d+", re.IGNORECASE)


@dataclass(frozen=True)
class NextAction:
    action: Decision
    confidence: float
    why: str
    commands: list[str]
    config: PlanConfig


@dataclass(frozen=True)
class RoundAnswer:
    """`actions` are ranked: the most confident first, ties in the model's order."""

    decision: Decision
    evaluation: str
    hypothesis: str
    answer: Any
    actions: list[NextAction]


def read_round_answer(text: str) -> RoundAnswer:
    """Raises AnswerError (worded for the model) when there is neither a final answer nor a
    usable plan."""
    whole = _COMPLETE_LINE.match(text)
    if whole and not text.lstrip().startswith("{"):
        return RoundAnswer("complete", "", "", whole.group("answer").strip(), [])
    try:
        raw = read_object(text)
    except AnswerError:
        line = _COMPLETE_IN_TEXT.search(text)
        if line:
            return RoundAnswer("complete", "", "", line.group("answer").strip(), [])
        raise
    answer = raw.get("answer")
    decision_text = text_of(raw.get("decision") or raw.get("action"))
    if _ECHOED.search(decision_text):
        raise AnswerError(
            f"the decision {decision_text[:60]!r} is the prompt's template echoed, not a "
            'decision: write one of "continue", "refine", "pivot", "complete"'
        )
    stated = _COMPLETE_LINE.match(decision_text)
    if stated:
        decision: Decision | None = "complete"
        answer = stated.group("answer").strip() if answer is None else answer
    else:
        decision = _DECISIONS.get(decision_text.lower())
    problems: list[str] = []
    actions = _actions(raw, decision or "continue", problems)
    if decision is None:
        # an unknown word: judge by what the answer holds
        decision = "continue" if actions else ("complete" if answer is not None else None)
    if decision == "complete":
        if answer is None or answer == "":
            raise AnswerError('decision "complete" needs the final answer in "answer"')
        actions = []
    elif not actions:
        detail = "; ".join(problems) if problems else "next_actions is empty"
        raise AnswerError(f"no usable plan in next_actions ({detail})")
    return RoundAnswer(
        decision=decision or "continue",
        evaluation=text_of(raw.get("evaluation")),
        hypothesis=text_of(raw.get("hypothesis")),
        answer=answer,
        actions=sorted(actions, key=lambda a: -a.confidence),
    )


def _actions(raw: dict[str, Any], default: Decision, problems: list[str]) -> list[NextAction]:
    listed = raw.get("next_actions")
    if not isinstance(listed, list):
        listed = [listed] if isinstance(listed, dict) else []
    if not listed and (raw.get("plan") is not None or raw.get("commands") is not None):
        listed = [{"plan": raw.get("plan") or {"commands": raw.get("commands")}}]
    out = []
    for index, item in enumerate(listed):
        try:
            out.append(_action(item, default))
        except AnswerError as error:
            problems.append(f"next_actions[{index}]: {error}")
    return out


def _action(item: Any, default: Decision) -> NextAction:
    if not isinstance(item, dict):
        item = {"plan": item}
    plan = item.get("plan", item.get("commands"))
    why = text_of(item.get("rationale"))
    config: Any = None
    if isinstance(plan, dict):
        why = text_of(plan.get("why")) or why
        config = plan.get("config")
        plan = plan.get("commands")
    commands = _commands(plan)
    if not commands:
        raise AnswerError('the plan has no commands; give "plan": {"why": ..., "commands": [...]}')
    # cap changes the model asks for (a refine that wants more results) run first
    commands = [*_cap_commands(item.get("caps")), *commands]
    action = _DECISIONS.get(text_of(item.get("action")).lower(), default)
    if action == "complete":  # an action carries a plan, so it goes on
        action = "continue"
    return NextAction(
        action=action,
        confidence=_confidence(item.get("confidence")),
        why=why,
        commands=commands,
        config=_config(config),
    )


def _cap_commands(caps: Any) -> list[str]:
    if not isinstance(caps, dict):
        return []
    return [
        f"SET adapter.caps.{name}={int(value)}"
        for name, value in caps.items()
        if isinstance(name, str) and name.isidentifier() and isinstance(value, int | float)
    ]


def _commands(plan: Any) -> list[str]:
    if isinstance(plan, str):  # GASL itself separates statements by newlines or `;`
        plan = [plan]
    if not isinstance(plan, list):
        return []
    return [text_of(c) for c in plan if isinstance(c, str) and c.strip()]


def _confidence(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return DEFAULT_CONFIDENCE
    if number > 1.0:  # 80 for 0.8
        number /= 100.0
    return min(max(number, 0.0), 1.0)


def _config(value: Any) -> PlanConfig:
    if not isinstance(value, dict):
        return PlanConfig()
    try:
        return PlanConfig.model_validate(value)
    except ValidationError:
        return PlanConfig()
