"""Empty answers, done so that an empty variable is never taken for "none" unasked, and a
true "none" can always end the task.

- A plan that stopped at an `empty` command (continue_on_empty off) still says which of its
  variables came back empty and which it never reached (`PlanStop`): the round prompt shows
  both, and a reference to a variable never reached says to name the empty one instead.
- An empty answer by reference (`COMPLETE: ${a_h2}` naming []) is confirmed once: the
  planner is told the answer is empty and asked to confirm it or query again
  (`EMPTY_ANSWER`); the second empty answer of the task is accepted. With
  `options.allow_empty` (the request says none is a valid answer), or on the last round
  (nothing is left to ask), it is accepted at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from postel.messages.gasl import ExecutionRecord, GaslPlan
from postel.messages.pipeline import RoundNote
from postel.services.gasl.errors import PlanSyntaxError
from postel.services.gasl.executor import parse_plan

EMPTY_ANSWER = "your answer is empty"
"""How the hypothesis of a round that asks to confirm an empty answer begins."""


def is_empty(value: Any) -> bool:
    return value is None or value in ([], {}, "")


@dataclass(frozen=True)
class PlanStop:
    """The variables of a plan that came back empty, and those it never reached."""

    empty: tuple[str, ...] = ()
    unreached: tuple[str, ...] = ()

    def text(self) -> str | None:
        """The line LAST RESULTS opens with, when the plan stopped short."""
        if not self.unreached:
            return None
        empty = ", ".join(self.empty) or "none"
        return (
            f"the plan stopped early: empty: {empty}; never reached (not assigned): "
            f"{', '.join(self.unreached)}"
        )


def plan_stop(plan: GaslPlan, records: Sequence[ExecutionRecord]) -> PlanStop:
    """Which of `plan`'s variables `records` show empty, and which it assigns that no record
    does (the plan stopped before them)."""
    empty = tuple(dict.fromkeys(r.variable for r in records if r.status == "empty" and r.variable))
    try:
        commands = parse_plan(plan.commands)
    except PlanSyntaxError:
        return PlanStop(empty)
    assigned = {r.variable for r in records if r.variable}
    targets = dict.fromkeys(c.target for c in commands if c.target)
    return PlanStop(empty, tuple(t for t in targets if t not in assigned))


def never_reached(name: str, stop: PlanStop) -> str:
    """The problem with naming `name`, a variable the plan stopped before assigning."""
    named = " or ".join("${" + n + "}" for n in stop.empty)
    instead = f"COMPLETE: {named} if nothing matches" if named else "COMPLETE with what you found"
    return (
        f"${{{name}}} was never assigned: the plan stopped before the command that assigns it "
        f"({stop.text()}); answer {instead}, or query again"
    )


def confirm_empty(reference: str) -> str:
    """The problem a first empty answer becomes: shown to the model with a probe's rows."""
    return (
        f"{EMPTY_ANSWER}: {reference} holds nothing. An empty result is as often a query "
        "that missed (a name spelt otherwise, a relation walked the wrong way, a wrong "
        f"type) as a true 'none'. If the graph really holds none, answer COMPLETE: {reference} "
        "again to confirm it; otherwise query again."
    )


def asked_to_confirm(history: Sequence[RoundNote]) -> bool:
    """Was the model already asked to confirm an empty answer in this task?"""
    return any(note.hypothesis.startswith(EMPTY_ANSWER) for note in history)
