"""The HDT round prompt, fitted into a token budget.

Everything a round needs travels in one ANALYSIS group (one data notice instead of six):
QUESTION, GRAPH, STATE, HISTORY, LAST RESULTS, ROUND and, when the previous answer was
unusable, PROBLEM, each part between markers of its own. The question holds the job's
prompt and the graph's, state's and results' texts come from graphs and models, so no part
may pose as another: a prompt holding "LAST RESULTS:" stays inside the QUESTION part. When
the prompt is over budget the parts are cut in this order until it fits: history (oldest
rounds first), state, graph schema, last results, question; each part keeps a floor.
Budgets follow capability: minimal models are the 2048-token local ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from postel.messages.gasl import ExecutionRecord
from postel.messages.pipeline import RoundNote
from postel.services.llm import ChatMessage
from postel.services.llm.tokens import count_tokens, truncate_to_tokens
from postel.services.planner.render import graph_text, history_text, records_text, state_text
from postel.services.prompts import Capability, build_prompt
from postel.services.prompts.templates import HDT_ROUND

BUDGETS: dict[Capability, int] = {
    Capability.MINIMAL: 1500,
    Capability.LIMITED: 2000,
    Capability.STANDARD: 3000,
}


@dataclass(frozen=True)
class RoundInputs:
    """Everything one HDT round is decided from: the question, the graph's schema summary
    (None without a graph), the state, the rounds so far and the last round's results.
    `round_number` is the plan being asked for (0-based) of at most `max_rounds`; `problem`
    is the previous answer's problem, shown to the model once more."""

    question: str
    task_index: int
    round_number: int
    max_rounds: int
    graph_summary: dict[str, Any] | None = None
    state_summary: dict[str, Any] = field(default_factory=dict)
    history: Sequence[RoundNote] = ()
    records: Sequence[ExecutionRecord] = ()
    error: str | None = None
    problem: str | None = None


@dataclass
class _Part:
    title: str
    text: str
    limit: int  # tokens this part may use now
    floor: int  # tokens it keeps however tight the budget


def round_messages(capability: Capability, round_: RoundInputs) -> list[ChatMessage]:
    """The chat messages asking for the round's plan; at `round_number == max_rounds` the
    model is told to complete."""
    status = (
        f"plan {round_.round_number + 1} of at most {round_.max_rounds}"
        if round_.round_number < round_.max_rounds
        else "no plan may run any more: decide complete with what the evidence holds"
    )
    results = records_text(round_.records, round_.error)
    parts = {
        "QUESTION": _Part("QUESTION", round_.question, 250, 80),
        "GRAPH": _Part("GRAPH", graph_text(round_.graph_summary), 350, 160),
        "STATE": _Part("STATE", state_text(round_.state_summary), 250, 40),
        "HISTORY": _Part("HISTORY (newest first)", history_text(round_.history), 250, 60),
        "LAST RESULTS": _Part("LAST RESULTS", results, 450, 120),
        "ROUND": _Part("ROUND", status, 40, 40),
    }
    if round_.problem:
        parts["PROBLEM"] = _Part("PROBLEM WITH YOUR LAST ANSWER", round_.problem, 150, 60)
    budget = BUDGETS[capability]
    messages = _render(capability, parts.values())
    for name in ("HISTORY", "STATE", "GRAPH", "LAST RESULTS", "QUESTION"):
        part = parts[name]
        while _size(messages) > budget and part.limit > part.floor:
            part.limit = max(part.floor, part.limit // 2)
            messages = _render(capability, parts.values())
    return messages


def _render(capability: Capability, parts: Iterable[_Part]) -> list[ChatMessage]:
    texts: dict[str, str] = {}
    for part in parts:
        text, cut = truncate_to_tokens(part.text, part.limit)
        texts[part.title] = f"{text}{' …(cut)' if cut else ''}"
    return build_prompt(HDT_ROUND, capability, context={"ANALYSIS": texts})


def _size(messages: list[ChatMessage]) -> int:
    return count_tokens("\n".join(m.content for m in messages))
