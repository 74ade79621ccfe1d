"""The delivered-data summary shown to the model when it continues.

One line per section that has an id (a section without one cannot be referred to, so it is
left out): headings by level and text, the other types by count (paragraph texts, list
items, table rows, code lines). Past 200 lines the first and last 100 are kept, with the
number left out between them, so the summary's size has a fixed bound; each line is capped
too, since heading texts and ids come from the model."""

from __future__ import annotations

import json
from typing import Any

MAX_LINES = 200
KEEP_EACH_END = 100
MAX_LINE_CHARS = 160

_COUNTED = {
    "paragraph": "texts",
    "bullet_list": "items",
    "numbered_list": "items",
    "table": "rows",
    "code_block": "code lines",
}
_UNIT_KEY = {
    "bullet_list": "items",
    "numbered_list": "items",
    "table": "rows",
    "code_block": "code",
}


def unit_count(element: dict[str, Any], content_type: str) -> int:
    """List items, table rows or code lines of an element (a last line without its newline
    counts)."""
    value = element.get(_UNIT_KEY.get(content_type, ""))
    if isinstance(value, str):
        lines = value.split("\n")
        return len(lines) - (lines[-1] == "")
    return len(value) if isinstance(value, list) else 0


def _clip(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"


def section_line(section: dict[str, Any]) -> str | None:
    section_id = section.get("id")
    if not section_id:
        return None
    content_type = str(section.get("content_type"))
    elements = [e for e in section.get("elements") or [] if isinstance(e, dict)]
    name = json.dumps(section_id, ensure_ascii=False)
    if content_type == "heading":
        titles = "; ".join(
            f"{e.get('level', '?')} {json.dumps(e.get('text', ''), ensure_ascii=False)}"
            for e in elements
        )
        return _clip(f"- heading {name}: {titles}")
    if content_type == "paragraph":
        count = sum(1 for e in elements if e.get("text"))
    else:
        count = sum(unit_count(e, content_type) for e in elements)
    return _clip(f"- {content_type} {name} with {count} {_COUNTED.get(content_type, 'elements')}")


def summary_lines(sections: list[dict[str, Any]]) -> list[str]:
    lines = [line for line in map(section_line, sections) if line is not None]
    if len(lines) <= MAX_LINES:
        return lines
    left_out = len(lines) - 2 * KEEP_EACH_END
    return [
        *lines[:KEEP_EACH_END],
        f"- … {left_out} more sections left out …",
        *lines[-KEEP_EACH_END:],
    ]
