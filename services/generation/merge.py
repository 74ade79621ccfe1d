"""Merging one analysed response into the document delivered so far (seed 002, step 9 D).

The continuation contract (stated to the model by `continuation.CONTINUATION_RULES`): every
response is a whole `{"sections": [...]}` document. When a section was cut, the response's
first section continues it: same id (or none, if it had none) and same content_type, and its
elements start with the cut-off element completed:
  - heading, paragraph: the element again, in full;
  - table, bullet_list, numbered_list, code_block: the element with its other keys in full
    and only the units (rows, items, code lines) not yet delivered; they are appended to the
    units carried from the fragment.
When the cut fell between elements, the first section's elements are the next elements.
Any further section of the response is a new section.

Merge rules:
  - the completed element takes the fragment's place (the fragment itself was never stored);
  - a heading or paragraph that the model repeats at the seam (equal to the element before
    the cut, and not a completion of the fragment) is dropped. Units are not checked for
    repeats: a repeated row cannot be told from a legitimately equal row;
  - a response without a single usable section changes nothing (the cut stays where it was);
  - when the response does not continue the cut section, the fragment is abandoned and the
    response's sections are appended (liberal: an imperfect model still makes progress)."""

from __future__ import annotations

from typing import Any

from postel.services.generation.cutoff import ResponseAnalysis
from postel.services.generation.units import UNIT_KEY, join_units
from pydantic import BaseModel, Field
from pydantic_core import from_json


class PendingCut(BaseModel):
    """The cut section: always the document's last section."""

    fragment: str | None = None  # raw cut-off element as received; None: cut between elements
    carried_units: list[Any] = Field(default_factory=list)  # closed units of the cut element


def covers(whole: Any, partial: Any) -> bool:
    """Whether `whole` is a completion of `partial` (a partial parse of a cut value)."""
    if isinstance(partial, dict):
        return isinstance(whole, dict) and all(
            key in whole and covers(whole[key], value) for key, value in partial.items()
        )
    if isinstance(partial, list):
        if not isinstance(whole, list) or len(partial) > len(whole):
            return False
        return all(covers(w, p) for w, p in zip(whole, partial, strict=False))
    if isinstance(partial, str):
        return isinstance(whole, str) and whole.startswith(partial)
    if isinstance(partial, bool) or partial is None:
        return whole == partial
    # A cut number keeps only its leading digits.
    return isinstance(whole, int | float) and str(whole).startswith(str(partial))


def _fragment_value(fragment: str) -> Any:
    try:
        return from_json(fragment, allow_partial="trailing-strings")
    except ValueError:
        return {}


def _continues(first: dict[str, Any], cut_section: dict[str, Any]) -> bool:
    return first.get("id") == cut_section.get("id") and first.get(
        "content_type"
    ) == cut_section.get("content_type")


def _is_seam_repeat(
    head: dict[str, Any], cut_section: dict[str, Any], fragment: str, content_type: str
) -> bool:
    elements = cut_section.get("elements") or []
    return (
        content_type not in UNIT_KEY
        and bool(elements)
        and head == elements[-1]
        and not covers(head, _fragment_value(fragment))
    )


def merge_response(
    sections: list[dict[str, Any]], pending: PendingCut | None, analysis: ResponseAnalysis
) -> tuple[list[dict[str, Any]], PendingCut | None]:
    """The delivered sections and the pending cut after this response; inputs are not changed."""
    if not analysis.sections:
        return sections, pending  # nothing usable arrived (a header cut, or not JSON)
    merged = [dict(section) for section in sections]
    incoming = [dict(section) for section in analysis.sections]
    carried_before: list[Any] = []
    continued_open = False
    if pending is not None and merged and incoming and _continues(incoming[0], merged[-1]):
        cut_section = merged[-1]
        first = incoming.pop(0)
        content_type = str(cut_section.get("content_type"))
        elements = list(first.get("elements") or [])
        if pending.fragment is not None and elements:
            if _is_seam_repeat(elements[0], cut_section, pending.fragment, content_type):
                elements.pop(0)
            if elements:
                elements[0] = join_units(pending.carried_units, elements[0], content_type)
        cut_section["elements"] = [*(cut_section.get("elements") or []), *elements]
        continued_open = not incoming and analysis.open_section
        # The continued element was cut again: its units keep adding up.
        if continued_open and not elements and pending.fragment is not None:
            if analysis.cut is not None and analysis.cut.fragment is None:
                return merged, pending  # nothing of the cut element arrived this time
            carried_before = pending.carried_units
    merged.extend(incoming)
    if not analysis.open_section or analysis.cut is None:
        return merged, None
    return merged, PendingCut(
        fragment=analysis.cut.fragment,
        carried_units=[*carried_before, *analysis.cut.closed_units],
    )
