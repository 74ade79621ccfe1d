"""Units: the parts a long element is continued by, across responses.

A table, list or code block may be longer than one response, so it is continued unit by
unit: table rows, list items, whole code lines (each ending with its newline). Only closed
units are ever carried; the unit being written at the cut (a row with a cut number, an item
cut mid-string, a line without its newline) is sent again by the model. Headings and
paragraphs have no units: a cut one is sent again in full."""

from __future__ import annotations

from typing import Any

from postel.services.generation.spans import Span

UNIT_KEY: dict[str, str] = {
    "table": "rows",
    "bullet_list": "items",
    "numbered_list": "items",
    "code_block": "code",
}
UNIT_NAME: dict[str, str] = {
    "table": "rows",
    "bullet_list": "items",
    "numbered_list": "items",
    "code_block": "code lines",
}


def code_lines(code: str) -> list[str]:
    """Code split after each newline, newlines kept; the last line may lack one."""
    lines = code.split("\n")
    whole = [line + "\n" for line in lines[:-1]]
    return [*whole, lines[-1]] if lines[-1] else whole


def unit_count(element: dict[str, Any], content_type: str) -> int:
    key = UNIT_KEY.get(content_type)
    value = element.get(key) if key else None
    if isinstance(value, str):
        return len(code_lines(value))
    return len(value) if isinstance(value, list) else 0


def closed_units(fragment: Span, partial: dict[str, Any], content_type: str) -> list[Any]:
    """The closed units of a cut-off element.

    `fragment` is the element's span and `partial` its value from a partial parse with
    trailing strings kept (so a cut code string still shows its whole lines)."""
    key = UNIT_KEY.get(content_type)
    span = fragment.member(key) if key else None
    value = partial.get(key) if key else None
    if span is None or value is None:
        return []
    if isinstance(value, str):
        lines = code_lines(value)
        if not span.closed and lines and not lines[-1].endswith("\n"):
            lines.pop()
        return lines
    if isinstance(value, list):
        return value if span.closed else value[: span.closed_children]
    return []


def join_units(carried: list[Any], element: dict[str, Any], content_type: str) -> dict[str, Any]:
    """The element completed: the units carried so far, then the element's own units."""
    key = UNIT_KEY.get(content_type)
    if key is None or not carried:
        return element
    own = element.get(key)
    if key == "code":
        return {**element, key: "".join(carried) + (own if isinstance(own, str) else "")}
    return {**element, key: [*carried, *(own if isinstance(own, list) else [])]}


def remainder(element: dict[str, Any], content_type: str, delivered: int) -> dict[str, Any]:
    """The element without its first `delivered` units: how it is sent to continue it."""
    key = UNIT_KEY.get(content_type)
    value = element.get(key) if key else None
    if key is None or delivered <= 0 or value is None:
        return element
    if isinstance(value, str):
        return {**element, key: "".join(code_lines(value)[delivered:])}
    return {**element, key: value[delivered:]}
