"""The continuation context and its text for the next generator call (seed 002, steps 9-10).

The context is the summary of what was delivered, the resume point, the element before the
cut-off and the cut-off element as received. It is rendered into two plain strings the
generator places into the prompt builder's parts: `instructions` (a constant: the output
format and the continuation contract of `merge`) and `user_text` (the context). Apart from
the capped summary the text has a fixed bound: the element before is clipped, and the cut-off
element is part of one response. The resume point is one line in a fixed format, so a
program (the oracle model) can read it as well as an LLM."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from postel.services.generation.merge import PendingCut
from postel.services.generation.summary import summary_lines
from postel.services.generation.units import UNIT_KEY, UNIT_NAME
from postel.services.llm.tokens import truncate_to_tokens
from postel.services.prompts.templates import CONTINUATION_RULES
from postel.services.prompts.templates import SECTIONS_OUTPUT_FORMAT as OUTPUT_FORMAT
from pydantic import BaseModel

ELEMENT_BEFORE_MAX_TOKENS = 200
# Two angle brackets, not three: the prompt builder neutralises runs of three inside data
# blocks, and this text travels inside one.
BEFORE_OPEN, BEFORE_CLOSE = "<<ELEMENT_BEFORE", "ELEMENT_BEFORE>>"
CUT_OPEN, CUT_CLOSE = "<<CUT_OFF", "CUT_OFF>>"

_RESUME = re.compile(
    r"^Resume point: (?P<mode>start|continue) section (?P<section>\d+)"
    r"(?: at element (?P<element>\d+) after (?P<units>\d+) units)?$",
    re.MULTILINE,
)


class ResumePoint(BaseModel):
    mode: Literal["start", "continue"]
    section: int  # 1-based
    element: int = 1  # 1-based, within the section
    units: int = 0  # units of that element already delivered

    def render(self) -> str:
        line = f"Resume point: {self.mode} section {self.section}"
        if self.mode == "continue":
            line += f" at element {self.element} after {self.units} units"
        return line


def read_resume_point(text: str) -> ResumePoint | None:
    found = _RESUME.search(text)
    if found is None:
        return None
    return ResumePoint(
        mode=found["mode"],  # type: ignore[arg-type]
        section=int(found["section"]),
        element=int(found["element"] or 1),
        units=int(found["units"] or 0),
    )


def read_cut_off_element(text: str) -> str | None:
    """The raw cut-off element shown in a continuation text. JSON holds no raw newline inside
    its strings, so a marker alone on its own line cannot come from the element itself."""
    start = text.rfind(CUT_OPEN + "\n")
    end = text.rfind("\n" + CUT_CLOSE)
    return text[start + len(CUT_OPEN) + 1 : end] if 0 <= start < end else None


class ContinuationContext(BaseModel):
    delivered_summary: list[str]
    resume: ResumePoint
    section_id: str | None = None
    content_type: str | None = None
    element_before: dict[str, Any] | None = None
    cut_off_element: str | None = None


class ContinuationText(BaseModel):
    instructions: str
    user_text: str


def build_continuation_context(
    sections: list[dict[str, Any]], pending: PendingCut | None
) -> ContinuationContext:
    summary = summary_lines(sections)
    if pending is None or not sections:
        return ContinuationContext(
            delivered_summary=summary,
            resume=ResumePoint(mode="start", section=len(sections) + 1),
        )
    cut_section = sections[-1]
    elements = cut_section.get("elements") or []
    return ContinuationContext(
        delivered_summary=summary,
        resume=ResumePoint(
            mode="continue",
            section=len(sections),
            element=len(elements) + 1,
            units=len(pending.carried_units),
        ),
        section_id=cut_section.get("id"),
        content_type=cut_section.get("content_type"),
        element_before=elements[-1] if elements else None,
        cut_off_element=pending.fragment,
    )


def _clipped_json(element: dict[str, Any]) -> str:
    text, was_cut = truncate_to_tokens(
        json.dumps(element, ensure_ascii=False), ELEMENT_BEFORE_MAX_TOKENS
    )
    return text + " …(clipped)" if was_cut else text


def _cut_sentence(context: ContinuationContext) -> str:
    resume = context.resume
    if resume.mode == "start":
        done = resume.section - 1
        return f"Sections 1 to {done} are complete; start with section {resume.section}."
    name = json.dumps(context.section_id, ensure_ascii=False)
    where = f"Section {resume.section} (id {name}, {context.content_type})"
    if context.cut_off_element is None:
        after = resume.element - 1
        return f"{where} was cut after element {after}; continue with its next elements."
    if str(context.content_type) in UNIT_KEY:
        unit = UNIT_NAME[str(context.content_type)]
        return (
            f"{where} was cut in element {resume.element}; {resume.units} {unit} of it are "
            f"complete: send it with its other keys in full and only the {unit} after those."
        )
    return f"{where} was cut in element {resume.element}: send that element again in full."


def render_continuation(context: ContinuationContext) -> ContinuationText:
    parts = [
        "Already delivered (one line per section with an id):",
        "\n".join(context.delivered_summary) or "- nothing with an id yet",
        "",
        context.resume.render(),
        _cut_sentence(context),
    ]
    if context.element_before is not None:
        parts += [
            "Last complete element before the cut-off:",
            BEFORE_OPEN,
            _clipped_json(context.element_before),
            BEFORE_CLOSE,
        ]
    if context.cut_off_element is not None:
        parts += [
            "Cut-off element, exactly as received (incomplete):",
            CUT_OPEN,
            context.cut_off_element,
            CUT_CLOSE,
        ]
    parts.append(
        "Check whether the delivered data and the cut-off element make the full response. "
        "If not, deliver the remaining part."
    )
    return ContinuationText(
        instructions=f"{OUTPUT_FORMAT}\n\n{CONTINUATION_RULES}", user_text="\n".join(parts)
    )
