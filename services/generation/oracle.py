"""The oracle: a perfect model of the continuation contract, for tests and benchmarks.

Given a target sections document and max_tokens, it answers a prompt as a model that follows
the contract exactly would, and is cut like a real one: its answer is truncated to max_tokens
(`truncate_to_tokens`) with finish_reason "length", else "stop". It knows nothing of the loop
but the target: where to resume is read from the prompt text alone (the resume point, and the
cut-off element, which must match the target there), which shows the continuation text
carries enough to continue. A prompt without a resume point is a first call."""

from __future__ import annotations

import json
from typing import Any

from postel.services.generation.continuation import (
    ResumePoint,
    read_cut_off_element,
    read_resume_point,
)
from postel.services.generation.merge import covers
from postel.services.generation.units import UNIT_KEY, remainder
from postel.services.llm.tokens import count_tokens, truncate_to_tokens
from pydantic import BaseModel
from pydantic_core import from_json


class OracleError(ValueError):
    """The prompt does not point at the target document."""


class OracleReply(BaseModel):
    text: str
    finish_reason: str
    completion_tokens: int


def serialise(document: dict[str, Any]) -> str:
    """The oracle's fixed serialisation: compact JSON, non-ASCII kept."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def _check_fragment(fragment: str, element: dict[str, Any], content_type: str) -> None:
    try:
        partial = from_json(fragment, allow_partial="trailing-strings")
    except ValueError as error:
        raise OracleError(f"unreadable cut-off element: {error}") from error
    if not isinstance(partial, dict):
        raise OracleError("the cut-off element is not an object")
    # Units of a continued element restart in each response, so only its other keys compare.
    partial.pop(UNIT_KEY.get(content_type, ""), None)
    if not covers(element, partial):
        raise OracleError("the cut-off element does not match the target at the resume point")


def resume_sections(target: dict[str, Any], resume: ResumePoint, prompt: str) -> list[Any]:
    """The target's sections from the resume point, in the contract's continuation form."""
    sections = list(target.get("sections") or [])
    if resume.mode == "start":
        return sections[resume.section - 1 :]
    if not 1 <= resume.section <= len(sections):
        raise OracleError(f"no section {resume.section} in the target")
    section = sections[resume.section - 1]
    content_type = str(section.get("content_type"))
    elements = list(section.get("elements") or [])[resume.element - 1 :]
    fragment = read_cut_off_element(prompt)
    if elements and fragment is not None:
        _check_fragment(fragment, elements[0], content_type)
        elements[0] = remainder(elements[0], content_type, resume.units)
    return [{**section, "elements": elements}, *sections[resume.section :]]


class Oracle:
    def __init__(self, target: dict[str, Any], max_tokens: int) -> None:
        self.target = target
        self.max_tokens = max_tokens

    def full_text(self, prompt: str) -> str:
        """The whole answer to `prompt`, before the max_tokens cut."""
        resume = read_resume_point(prompt)
        if resume is None:
            return serialise(self.target)
        return serialise({"sections": resume_sections(self.target, resume, prompt)})

    def answer(self, prompt: str) -> OracleReply:
        text, was_cut = truncate_to_tokens(self.full_text(prompt), self.max_tokens)
        return OracleReply(
            text=text,
            finish_reason="length" if was_cut else "stop",
            completion_tokens=count_tokens(text),
        )
