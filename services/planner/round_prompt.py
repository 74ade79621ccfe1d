"""The HDT round prompt, fitted into a token budget.

Everything a round needs travels in one ANALYSIS group (one data notice instead of six):
QUESTION, GRAPH, STATE, HISTORY, LAST RESULTS, ROUND and, when the previous answer was
unusable, PROBLEM, each part between markers of its own. The question holds the job's
prompt and the graph's, state's and results' texts come from graphs and models, so no part
may pose as another: a prompt holding "LAST RESULTS:" stays inside the QUESTION part. When
the prompt is over budget the parts are cut in this order until it fits: history (oldest
rounds first), state, graph schema (each to a floor), the sample rows of LAST RESULTS
(earlier records' first), the question (to a floor). Every record's head (command, status,
count, error and hint, fields, how many rows are not shown and how to name them) stays; only
if even the heads cannot fit are the earliest left to one line. When the prompt has slack,
the parts cut at their usual limits grow into it, the question first. The gasl error is
shown once: the newest round's outcome in HISTORY points to LAST RESULTS for it. Budgets follow
capability: minimal models are the 2048-token local ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from postel.messages.gasl import ExecutionRecord
from postel.messages.intent import LinkedEntity
from postel.messages.pipeline import RoundNote
from postel.services.llm import ChatMessage
from postel.services.llm.tokens import count_tokens, truncate_to_tokens
from postel.services.planner.render import (
    RecordText,
    failure_line,
    graph_text,
    history_text,
    outcome_digest,
    record_texts,
    results_text,
    state_text,
)
from postel.services.planner.schema_grammar import SchemaChoice, schema_focus
from postel.services.prompts import Capability, build_prompt
from postel.services.prompts.templates import HDT_ROUND, HDT_ROUND_FOCUSED

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
    stopped: str | None = None  # services.planner.empty.PlanStop.text of the last plan
    linked: Sequence[LinkedEntity] = ()  # what the question links to, for a probe plan
    # what the question's rounds may name (its grammar); a small model's GRAPH part shows it
    focus: SchemaChoice | None = None


@dataclass
class _Part:
    title: str
    text: str
    limit: int  # tokens this part may use now
    floor: int  # tokens it keeps however tight the budget


@dataclass
class _Results:
    """LAST RESULTS, fitted by rows rather than tokens: every record's head stays; what a
    tight prompt cuts is sample rows, the earlier records' first."""

    texts: list[RecordText]
    failure: str | None
    shown: list[int]
    hidden: int = 0  # earliest records left to one line: only when their heads cannot fit

    def text(self) -> str:
        return results_text(self.texts, self.failure, self.shown, self.hidden)


# The order parts are cut in when the prompt is over budget, and the reverse of the order
# slack is given back in: history first, the question last.
_CUT_ORDER = ("HISTORY", "STATE", "GRAPH", "QUESTION")


def round_messages(capability: Capability, round_: RoundInputs) -> list[ChatMessage]:
    """The chat messages asking for the round's plan; at `round_number == max_rounds` the
    model is told to complete."""
    status = (
        f"plan {round_.round_number + 1} of at most {round_.max_rounds}"
        if round_.round_number < round_.max_rounds
        else "no plan may run any more: decide complete with what the evidence holds"
    )
    texts = record_texts(round_.records)
    opening = [round_.stopped, failure_line(round_.records, round_.error)]
    results = _Results(
        texts, "\n".join(line for line in opening if line) or None, [len(t.rows) for t in texts]
    )
    newest = (
        outcome_digest(round_.records, round_.error, errors_shown=True)
        if round_.records or round_.error
        else None
    )
    parts = {
        "QUESTION": _Part("QUESTION", round_.question, 250, 80),
        "GRAPH": _Part("GRAPH", _graph_part(capability, round_), 350, 160),
        "STATE": _Part("STATE", state_text(round_.state_summary), 250, 40),
        "HISTORY": _Part("HISTORY (newest first)", history_text(round_.history, newest), 250, 60),
        "ROUND": _Part("ROUND", status, 40, 40),
    }
    if round_.problem:
        parts["PROBLEM"] = _Part("PROBLEM WITH YOUR LAST ANSWER", round_.problem, 150, 60)
    budget = BUDGETS[capability]
    focused = round_.focus is not None and capability != Capability.STANDARD

    def render() -> list[ChatMessage]:
        return _render(capability, parts, results, focused)

    messages = render()
    if _size(messages) > budget:
        messages = _shrink(parts, results, budget, render)
    else:
        messages = _grow(parts, budget, render)
    return messages


def _graph_part(capability: Capability, round_: RoundInputs) -> str:
    """A small model with a focus sees only the focus (and the focused template)."""
    if round_.focus is not None and capability != Capability.STANDARD:
        return schema_focus(round_.focus)
    return graph_text(round_.graph_summary)


def _shrink(
    parts: dict[str, _Part],
    results: _Results,
    budget: int,
    render: Callable[[], list[ChatMessage]],
) -> list[ChatMessage]:
    """Cut until the prompt fits: history, state and schema to their floors, then sample
    rows (earlier records' first), then the question to its floor; the records' heads go
    last, the earliest first, and the answer's record is never left out."""
    messages = render()
    for name in _CUT_ORDER[:-1]:
        part = parts[name]
        while _size(messages) > budget and part.limit > part.floor:
            part.limit = max(part.floor, part.limit // 2)
            messages = render()
    for index in range(len(results.shown)):
        while _size(messages) > budget and results.shown[index] > 0:
            results.shown[index] -= 1
            messages = render()
    question = parts["QUESTION"]
    while _size(messages) > budget and question.limit > question.floor:
        question.limit = max(question.floor, question.limit // 2)
        messages = render()
    while _size(messages) > budget and results.hidden < len(results.texts) - 1:
        results.hidden += 1
        messages = render()
    return messages


def _grow(
    parts: dict[str, _Part], budget: int, render: Callable[[], list[ChatMessage]]
) -> list[ChatMessage]:
    """Give the budget's slack to the parts that were cut at their usual limits, the
    question first: each grows to its whole text or to the largest limit that fits."""
    messages = render()
    for name in reversed(_CUT_ORDER):
        part = parts[name]
        whole = count_tokens(part.text)
        if whole <= part.limit:
            continue
        low, high = part.limit, whole
        while low < high:  # the largest limit that keeps the prompt within budget
            part.limit = (low + high + 1) // 2
            if _size(render()) <= budget:
                low = part.limit
            else:
                high = part.limit - 1
        part.limit = low
        messages = render()
    return messages


def _render(
    capability: Capability, parts: dict[str, _Part], results: _Results, focused: bool
) -> list[ChatMessage]:
    template = HDT_ROUND_FOCUSED if focused else HDT_ROUND
    texts: dict[str, str] = {}
    for name, part in parts.items():
        if name == "ROUND":
            texts["LAST RESULTS"] = results.text()
        text, cut = truncate_to_tokens(part.text, part.limit)
        texts[part.title] = f"{text}{' …(cut)' if cut else ''}"
    return build_prompt(template, capability, context={"ANALYSIS": texts})


def _size(messages: list[ChatMessage]) -> int:
    return count_tokens("\n".join(m.content for m in messages))
