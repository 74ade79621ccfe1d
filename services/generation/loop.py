"""The AI loop's state machine: one generator answer in, a decision out.

"Complete JSON = stop, cut-off JSON = continue", with guards. The answers join as one JSON
text (the contract is in `merge`): each continuation goes on from the character where the
last answer was cut, inside a string if that is where the cut fell, so an element of any
length is written over as many answers as it needs.

Progress is judged by the resume point, never by how the text looks: an answer progresses
when reading it moves the resume point (`JsonStream.offset`) past at least one character of
JSON that is not whitespace, or, for a restart (a new `{"sections":` document instead of a
continuation, which sends delivered content again), when it adds an element. A document
whose lines, rows or answers repeat each other (a code block of identical lines, where two
cut answers can be byte for byte the same) progresses like any other. Decisions, in the
order they are checked:
  complete       the document's JSON closed and finish_reason is not "length"; the
                 document goes to the validator.
  loop_detected  reason "repeated_output": the model ended the answer itself
                 (finish_reason not "length") with the document still open, and the answer
                 is the text of the answer before it again (after trimming). A model that
                 follows the contract ends an answer only when cut at max_tokens or with
                 the document closed, so this is a model sending its answer again, never
                 a document repeating itself; the answer is not applied.
  loop_detected  reason "no_progress": the answer does not move the resume point (no JSON,
                 only whitespace, or a syntax error at its first character; a restart that
                 adds no element).
  iteration_cap  the cap is reached with the JSON still open: the job fails with the
                 delivered document attached. This is also how a model that keeps writing
                 valid JSON that repeats itself ends: its answers cannot be told from a
                 document that repeats itself.
  continue       cut off and progressing: the generator re-enqueues itself with
                 `continuation_prompt(state)`.

`step` is keyed by iteration number: an answer for an iteration already applied returns the
stored outcome and the state unchanged, so a re-run handler adds nothing twice. The state
is a pydantic model: `state.model_dump_json()` / `LoopState.model_validate_json(...)`."""

from __future__ import annotations

import time
from typing import Any, Literal

from postel.messages.document import SectionsDocument
from postel.services.generation.continuation import (
    ContinuationText,
    build_continuation_context,
    render_continuation,
)
from postel.services.generation.merge import (
    continuation_text,
    deliver,
    find_json_start,
    is_restart,
    open_section,
    take_closed_sections,
)
from postel.services.generation.stream import JsonStream, feed
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
    new_characters: int  # characters of JSON this answer added (whitespace between values not)
    restarted: bool = False  # the answer started a new document instead of continuing
    read_error: str | None = None  # why reading stopped before the answer's end
    parse_ms: float  # reading this answer alone


class LoopState(BaseModel):
    iteration: int = 0  # last iteration applied
    sections: list[dict[str, Any]] = Field(default_factory=list)  # delivered, closed
    stream: JsonStream = Field(default_factory=JsonStream)  # the open part of the document
    restarted: bool = False  # a restart happened: sections merge by id from then on
    last_raw_response: str | None = None  # the answer before: the repeat check's reference
    history: list[IterationMetrics] = Field(default_factory=list)

    @property
    def finished(self) -> bool:
        return bool(self.history) and self.history[-1].decision != "continue"

    def delivered_sections(self) -> list[dict[str, Any]]:
        """The closed sections, then the open one with its closed elements."""
        section = open_section(self.stream)
        return deliver(self.sections, [section] if section else [], self.restarted)

    def document(self) -> SectionsDocument:
        return SectionsDocument.model_validate({"sections": self.delivered_sections()})


class StepResult(BaseModel):
    state: LoopState
    decision: Decision
    metrics: IterationMetrics
    replayed: bool = False  # this iteration had been applied before; nothing changed


def _sent_again(state: LoopState, response_text: str, finish_reason: str | None) -> bool:
    """The model ended this answer itself, and it is the answer before it again."""
    before = state.last_raw_response
    return (
        finish_reason != "length" and before is not None and before.strip() == response_text.strip()
    )


def _element_count(sections: list[dict[str, Any]]) -> int:
    return sum(len(section.get("elements") or []) for section in sections)


def continuation_prompt(state: LoopState) -> ContinuationText:
    """The text for the next call after a `continue` decision."""
    return render_continuation(build_continuation_context(state.delivered_sections(), state.stream))


class _Read(BaseModel):
    state: LoopState
    new_characters: int
    restarted: bool
    error: str | None
    parse_ms: float


def _read(state: LoopState, response_text: str) -> _Read:
    """`state` with the answer read into it; `state` itself is not changed."""
    began = time.perf_counter()
    stream = state.stream.model_copy(deep=True)
    sections, restarted_now = state.sections, False
    if stream.started and is_restart(response_text):
        section = open_section(stream)
        sections = deliver(sections, [section] if section else [], state.restarted)
        stream, restarted_now = JsonStream(), True
    if stream.started:
        piece = continuation_text(response_text)
    else:
        start = find_json_start(response_text)
        piece = response_text[start:] if start is not None else ""
    fed = feed(stream, piece)
    restarted = state.restarted or restarted_now
    sections = deliver(sections, take_closed_sections(stream), restarted)
    new_state = state.model_copy(
        update={"sections": sections, "stream": stream, "restarted": restarted}
    )
    return _Read(
        state=new_state,
        new_characters=fed.progress,
        restarted=restarted_now,
        error=fed.error,
        parse_ms=(time.perf_counter() - began) * 1000,
    )


def step(
    state: LoopState,
    response_text: str,
    finish_reason: str | None,
    max_iterations: int,
    iteration: int | None = None,
) -> StepResult:
    """Apply the answer of `iteration` (default: the next one) to `state`."""
    number = state.iteration + 1 if iteration is None else iteration
    if number <= state.iteration:
        stored = state.history[number - 1]
        return StepResult(state=state, decision=stored.decision, metrics=stored, replayed=True)
    if number != state.iteration + 1:
        raise ValueError(f"iteration {number} after {state.iteration}: one was skipped")
    if state.finished:
        raise ValueError(f"the loop already ended ({state.history[-1].decision})")

    elements_before = _element_count(state.delivered_sections())
    decision: Decision
    reason: Reason
    read = _read(state, response_text)
    delivered = _element_count(read.state.delivered_sections())
    progressed = delivered > elements_before if read.restarted else read.new_characters > 0
    if read.state.stream.done and finish_reason != "length":
        decision, reason = "complete", "parsed_complete"
    elif _sent_again(state, response_text, finish_reason):
        read = _Read(state=state, new_characters=0, restarted=False, error=None, parse_ms=0.0)
        decision, reason = "loop_detected", "repeated_output"
    elif not progressed:
        decision, reason = "loop_detected", "no_progress"
    elif number >= max_iterations:
        decision, reason = "iteration_cap", "cap_reached"
    else:
        decision, reason = "continue", "cut_off"
    sections = read.state.delivered_sections()
    elements = _element_count(sections)
    metrics = IterationMetrics(
        iteration=number,
        finish_reason=finish_reason,
        decision=decision,
        reason=reason,
        json_complete=read.state.stream.done,
        sections_delivered=len(sections),
        elements_delivered=elements,
        new_elements=elements - elements_before,
        new_characters=read.new_characters,
        restarted=read.restarted,
        read_error=read.error,
        parse_ms=read.parse_ms,
    )
    new_state = read.state.model_copy(
        update={
            "iteration": number,
            "last_raw_response": response_text,
            "history": [*state.history, metrics],
        }
    )
    return StepResult(state=new_state, decision=decision, metrics=metrics)
