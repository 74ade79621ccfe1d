"""Cut-off analysis of one generator response (seed 002, step 9 B).

A cut response is read with pydantic_core's partial parser for the values and with `spans`
for where each value starts and whether it was closed. The result:
  - the sections delivered: every closed section, then the one open section (there is at
    most one: JSON is cut at a single point) with its header and its closed elements;
  - the cut-off element AS-IS: the raw text from its opening `{` to the end of the response,
    never a value (a partial parser keeps `2` of a cut `29.99` as if whole);
  - the element before it in the same section (None when the cut is in the first element);
  - the closed units of the cut-off element (see `units`).
Only this response is parsed, never everything accumulated, so the cost stays bounded."""

from __future__ import annotations

import time
from typing import Any

from postel.services.generation.completeness import locate_json
from postel.services.generation.spans import Span
from postel.services.generation.units import closed_units
from pydantic import BaseModel, Field
from pydantic_core import from_json


class CutOff(BaseModel):
    element_index: int  # index of the cut-off element in its section (= closed elements before it)
    fragment: str | None  # raw cut-off element; None when the cut falls between elements
    element_before: dict[str, Any] | None
    closed_units: list[Any] = Field(default_factory=list)


class ResponseAnalysis(BaseModel):
    found_json: bool
    json_closed: bool
    sections: list[dict[str, Any]] = Field(default_factory=list)
    open_section: bool = False  # the last of `sections` is the cut one
    cut: CutOff | None = None  # set when open_section
    restart_section: bool = False  # cut inside a section's header: left out, sent again whole
    parse_ms: float = 0.0


def _partial(text: str, mode: bool | str = True) -> Any:
    try:
        return from_json(text, allow_partial=mode)  # type: ignore[arg-type]
    except ValueError:  # not JSON at all, only cut JSON is expected here
        return None


def _header_complete(span: Span) -> bool:
    content_type = span.member("content_type")
    section_id = span.member("id")
    return (
        content_type is not None
        and content_type.closed
        and (section_id is None or section_id.closed)
    )


def _open_section(raw: str, span: Span, value: Any) -> tuple[dict[str, Any], CutOff] | None:
    if span.kind != "object" or not isinstance(value, dict) or not _header_complete(span):
        return None
    header = {
        key: value[key]
        for key, child in zip(span.keys, span.children, strict=True)
        if key not in (None, "elements") and child.closed and key in value
    }
    elements_span = span.member("elements")
    values = value.get("elements")
    if elements_span is None or elements_span.kind != "array" or not isinstance(values, list):
        no_elements = CutOff(element_index=0, fragment=None, element_before=None)
        return {**header, "elements": []}, no_elements
    closed = elements_span.closed_children
    elements = [element for element in values[:closed] if isinstance(element, dict)]
    fragment: str | None = None
    units: list[Any] = []
    if len(elements_span.children) > closed:
        cut_span = elements_span.children[closed]
        fragment = raw[cut_span.start :]
        partial = _partial(fragment, "trailing-strings")
        if cut_span.kind == "object" and isinstance(partial, dict):
            units = closed_units(cut_span, partial, str(header.get("content_type")))
    cut = CutOff(
        element_index=closed,
        fragment=fragment,
        element_before=elements[-1] if elements else None,
        closed_units=units,
    )
    return {**header, "elements": elements}, cut


def analyse_response(raw: str) -> ResponseAnalysis:
    began = time.perf_counter()
    analysis = _analyse(raw)
    analysis.parse_ms = (time.perf_counter() - began) * 1000
    return analysis


def _analyse(raw: str) -> ResponseAnalysis:
    located = locate_json(raw)
    if located is None:
        return ResponseAnalysis(found_json=False, json_closed=False)
    start, root = located
    value = _partial(raw[start : root.end])
    result = ResponseAnalysis(found_json=True, json_closed=root.closed)
    # Liberal: a bare list of sections is read as the sections document.
    if root.kind == "array":
        sections_span, sections_value = root, value
    else:
        sections_span = root.member("sections")
        sections_value = value.get("sections") if isinstance(value, dict) else None
    if sections_span is None or sections_span.kind != "array":
        return result
    if not isinstance(sections_value, list):
        sections_value = []
    closed = sections_span.closed_children
    result.sections = [s for s in sections_value[:closed] if isinstance(s, dict)]
    if len(sections_span.children) == closed:
        return result
    opened = _open_section(
        raw,
        sections_span.children[closed],
        sections_value[closed] if len(sections_value) > closed else None,
    )
    if opened is None:
        result.restart_section = True
        return result
    section, cut = opened
    result.sections.append(section)
    result.open_section = True
    result.cut = cut
    return result
