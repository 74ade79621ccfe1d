"""A small model's rounds when the schema card gives the question's chains
(services.linking.paths): what needs no model call.

- The first plan: the card's one chain runs as it is; only between tied chains is the model
  asked, and its grammar lets it write nothing else (schema_grammar.chain_rules).
- After a card chain ran: rows in its answer variable are the answer (`${answer}`), as the
  model's COMPLETE would have said; an empty chain gives way to the next chain not yet run;
  when every chain came back empty, the empty variable is the answer, settled (no round to
  confirm it: nothing else would be walked). A chain that failed (an error, not an empty
  result) goes back to the model's round.
"""

from __future__ import annotations

from collections.abc import Sequence

from postel.messages.gasl import ExecutionRecord, GaslPlan
from postel.messages.pipeline import RoundNote
from postel.services.planner.hdt import RoundDecision, plan_id
from postel.services.planner.schema_grammar import SchemaChoice, answerable

CARD_CHAIN = "the schema card's chain for the question"
"""How the hypothesis of a plan run without asking the model begins."""


def _commands(commands: Sequence[str]) -> tuple[str, ...]:
    return tuple(" ".join(c.split()) for c in commands)


def chain_plan(
    focus: SchemaChoice, index: int, task_index: int, round_number: int
) -> RoundDecision:
    """Run the focus's chain `index` as round `round_number`, unasked."""
    chain = focus.chains[index]
    why = f"{CARD_CHAIN} ({index + 1} of {len(focus.chains)})"
    plan = GaslPlan(plan_id=plan_id(task_index, round_number), why=why, commands=list(chain))
    return RoundDecision("continue", "", why, None, plan)


def first_chain(focus: SchemaChoice | None, task_index: int) -> RoundDecision | None:
    """The first round's plan when the card gives one chain; None: ask the model."""
    if focus is None or len(focus.chains) != 1:
        return None
    return chain_plan(focus, 0, task_index, 0)


def after_chain(
    focus: SchemaChoice | None,
    plan: GaslPlan,
    records: Sequence[ExecutionRecord],
    history: Sequence[RoundNote],
    task_index: int,
    round_number: int,
) -> RoundDecision | None:
    """What follows a card chain's run (see the module's docstring); None when the plan was
    not a card chain or it failed: the model's round decides."""
    if focus is None or not focus.chains or not records:
        return None
    chains = [_commands(c) for c in focus.chains]
    if _commands(plan.commands) not in chains:
        return None
    filled = answerable(focus, records)
    if filled:
        why = f"{CARD_CHAIN} found rows: its answer variable is the answer"
        return RoundDecision("complete", why, why, f"${{{filled[0]}}}", None)
    last = records[-1]
    if last.status != "empty" or not last.variable:
        return None
    ran = {_commands(note.plan.commands) for note in history if note.plan is not None}
    for index, chain in enumerate(chains):
        if chain not in ran:
            return chain_plan(focus, index, task_index, round_number)
    why = f"every chain the schema card gives came back empty at {last.variable}: none"
    return RoundDecision("complete", why, why, f"${{{last.variable}}}", None, settled=True)
