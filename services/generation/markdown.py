"""A sections document as Markdown, for people reading a result in a terminal; `said` reads
an element's words for the dashboard too (infra/web/templates/_macros.html)."""

from __future__ import annotations

from typing import Any

from postel.messages import SectionsDocument


def to_markdown(document: SectionsDocument | dict[str, Any]) -> str:
    doc = (
        document
        if isinstance(document, SectionsDocument)
        else SectionsDocument.model_validate(document)
    )
    blocks: list[str] = []
    for section in doc.sections:
        for element in section.elements:
            blocks.append(_element(section.content_type, element))
    return "\n\n".join(block for block in blocks if block)


def _element(content_type: str, element: dict[str, Any]) -> str:
    if content_type == "heading":
        level = element.get("level", 2)
        level = min(max(level if isinstance(level, int) else 2, 1), 6)
        return f"{'#' * level} {said(element, 'text')}"
    if content_type == "paragraph":
        return said(element, "text")
    if content_type in ("bullet_list", "numbered_list"):
        items = element.get("items") or []
        marker = (lambda n: f"{n}.") if content_type == "numbered_list" else (lambda _n: "-")
        return "\n".join(f"{marker(n)} {item}" for n, item in enumerate(items, 1))
    if content_type == "table":
        headers = [str(h) for h in element.get("headers") or []]
        rows = [[str(cell) for cell in row] for row in element.get("rows") or []]
        lines = []
        if headers:
            lines += ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    if content_type == "code_block":
        return f"```{element.get('language', '')}\n{said(element, 'code')}\n```"
    return ""


def said(element: dict[str, Any], field: str) -> str:
    """The element's `field`, or its other words when the model put them under the other
    name (a code block's `text`, a paragraph's `code`): shown, never silently dropped as
    an empty block."""
    for name in (field, "text", "code"):
        if name in element:
            return str(element[name])
    return ""
