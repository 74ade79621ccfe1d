"""The AI loop's state machine: one generator response in, a decision out (seed 002, 7-11).

"Complete JSON = stop, cut-off JSON = continue", with guards. Decisions, in the order they
are checked:
  loop_detected  reason "repeated_output": the response is byte-identical (after trimming)
                 to an earlier one; it is not merged. A legitimately identical window (say
                 two runs of the same rows) is read the same way: the one known false alarm.
  complete       the response parses strictly and finish_reason is not "length"
                 (`completeness.is_complete`); it is merged, and the document goes to the
                 validator.
  loop_detected  reason "no_progress": merged, yet nothing was delivered: no new section,
                 element or unit, and the cut point did not move. This is also where an
                 element larger than one response ends: a heading, paragraph, table row,
                 list item or code line that cannot fit in max_tokens is sent again cut at
                 the same place every time, so the loop stops at the next iteration (as
                 repeated_output when that response is byte-identical).
  iteration_cap  the cap is reached with the JSON still cut: the job fails with the
                 delivered document attached.
  continue       cut off and progressing: the generator re-enqueues itself with
                 `continuation_prompt(state)`.

`step` is keyed by iteration number: a response for an iteration already applied returns
the stored outcome and the state unchanged, so a re-run handler adds nothing twice. The state
is a pydantic model: `state.model_dump_json()` / `LoopState.model_validate_json(...)`."""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from postel.messages.document import SectionsDocument
from postel.services.generation.completeness import is_complete
from postel.services.generation.continuation import (
    ContinuationText,
    build_continuation_context,
    render_continuation,
)
from postel.services.generation.cutoff import analyse_response
from postel.services.generation.merge import PendingCut, merge_response
from pydantic import BaseModel, Field

Decision = Literal["complete", "continue", "loop_detected", "iteration_cap"]
Reason = Literal["parsed_complete", "cut_off", "repeated_output", "no_progress", "cap_reached"]


class IterationMetrics(BaseModel):
    iteration: int
    finish_reason: str | None
    decision: Decision
    reason: Reason
    json_complete: bool
    sections_delivered: int
    elements_delivered: int
    new_elements: int
    parse_ms: float  # cut-off analysis (partial parse) of this response alone


class LoopState(BaseModel):
    iteration: int = 0  # last iteration applied
    sections: list[dict[str, Any]] = Field(default_factory=list)  # delivered, closed elements
    pending: PendingCut | None = None  # set while the last section is cut
    last_raw_response: str | None = None
    fingerprints: list[str] = Field(default_factory=list)
    history: list[IterationMetrics] = Field(default_factory=list)

    @property
    def finished(self) -> bool:
        return bool(self.history) and self.history[-1].decision != "continue"

    def document(self) -> SectionsDocument:
        return SectionsDocument.model_validate({"sections": self.sections})


class StepResult(BaseModel):
    state: LoopState
    decision: Decision
    metrics: IterationMetrics
    replayed: bool = False  # this iteration had been applied before; nothing changed


def fingerprint(response_text: str) -> str:
    return hashlib.sha256(response_text.strip().encode("utf-8", "surrogatepass")).hexdigest()


def _element_count(sections: list[dict[str, Any]]) -> int:
    return sum(len(section.get("elements") or []) for section in sections)


def _position(sections: list[dict[str, Any]], pending: PendingCut | None) -> tuple[Any, ...]:
    """Where the cut point is; progress means it moved."""
    if pending is None:
        return (len(sections), _element_count(sections), False, 0)
    return (len(sections), _element_count(sections), True, len(pending.carried_units))


def continuation_prompt(state: LoopState) -> ContinuationText:
    """The text for the next call after a `continue` decision."""
    return render_continuation(build_continuation_context(state.sections, state.pending))


def step(
    state: LoopState,
    response_text: str,
    finish_reason: str | None,
    max_iterations: int,
    iteration: int | None = None,
) -> StepResult:
    """Apply the response of `iteration` (default: the next one) to `state`."""
    number = state.iteration + 1 if iteration is None else iteration
    if number <= state.iteration:
        stored = state.history[number - 1]
        return StepResult(state=state, decision=stored.decision, metrics=stored, replayed=True)
    if number != state.iteration + 1:
        raise ValueError(f"iteration {number} after {state.iteration}: one was skipped")
    if state.finished:
        raise ValueError(f"the loop already ended ({state.history[-1].decision})")

    analysis = analyse_response(response_text)
    seen = fingerprint(response_text)
    complete = is_complete(response_text, finish_reason)
    sections, pending = state.sections, state.pending
    decision: Decision
    reason: Reason
    if seen in state.fingerprints:
        decision, reason = "loop_detected", "repeated_output"
    else:
        sections, pending = merge_response(state.sections, state.pending, analysis)
        if complete:
            decision, reason, pending = "complete", "parsed_complete", None
        elif _position(sections, pending) == _position(state.sections, state.pending):
            decision, reason = "loop_detected", "no_progress"
        elif number >= max_iterations:
            decision, reason = "iteration_cap", "cap_reached"
        else:
            decision, reason = "continue", "cut_off"
    elements = _element_count(sections)
    metrics = IterationMetrics(
        iteration=number,
        finish_reason=finish_reason,
        decision=decision,
        reason=reason,
        json_complete=complete,
        sections_delivered=len(sections),
        elements_delivered=elements,
        new_elements=elements - _element_count(state.sections),
        parse_ms=analysis.parse_ms,
    )
    new_state = LoopState(
        iteration=number,
        sections=sections,
        pending=pending,
        last_raw_response=response_text,
        fingerprints=[*state.fingerprints, seen],
        history=[*state.history, metrics],
    )
    return StepResult(state=new_state, decision=decision, metrics=metrics)
