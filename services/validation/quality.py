"""`says_nothing` and `check_quality`: problems with a coerced value beyond its type (IPV
VALIDATE, second half).

`says_nothing` is the one check no profile relaxes: an answer with nothing in it (empty or
blank text, an empty list or object, a document without sections or without a word in any
element's content) gives the success criteria nothing to be checked against, so it is
refused like a value of the wrong type. The validator accepts an empty list, text or object
only where the request allows none (`options.allow_empty`) or the evidence is empty too (the
answer is an empty state value the planner named); a document without text never.

`check_quality` is deliberately modest; two families of checks, each deterministic:
- Emptiness of parts, when the intent requires completeness (completeness_threshold > 0,
  which is the default when there is no intent) or the profile is strict: a section without
  elements in a document that says something elsewhere.
- Counting success criteria, the machine-checkable kind: "at least 3 items", "no more than
  100 words", "exactly five sections", "at most 2 paragraphs" ... Counted units: words
  and characters (of text or of a document's text), sections (of a document), and anything
  else counts list items (a list's length, or a document's bullet/numbered list items and
  table rows). Criteria that are not about counting are left to the model.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterator
from typing import Any

from postel.messages.intent import Intent
from postel.messages.limits import MAX_NUMERAL_DIGITS
from postel.messages.types import TypeSpec
from postel.services.validation.words import words_to_number

_BOUNDS: dict[str, tuple[Callable[[int, int], bool], str]] = {
    "at least": (operator.ge, "at least"),
    "no fewer than": (operator.ge, "at least"),
    "no less than": (operator.ge, "at least"),
    "minimum of": (operator.ge, "at least"),
    "at most": (operator.le, "at most"),
    "no more than": (operator.le, "at most"),
    "up to": (operator.le, "at most"),
    "maximum of": (operator.le, "at most"),
    "exactly": (operator.eq, "exactly"),
}
_CRITERION = re.compile(
    rf"\b(?P<bound>{'|'.join(_BOUNDS)})\s+(?P<count>\d+|[a-z]+(?:-[a-z]+)?)\s+(?P<unit>[a-z]+)",
    re.IGNORECASE,
)
_LIST_TYPES = ("bullet_list", "numbered_list")


def check_quality(
    value: Any, spec: TypeSpec, intent: Intent | None = None, *, strict: bool = False
) -> list[str]:
    """Problems found in `value` (already coerced to `spec`); empty when it passes.

    `strict` (the strict profile) checks emptiness whatever the intent's completeness."""
    problems: list[str] = []
    completeness = intent.quality_requirements.completeness_threshold if intent else 0.8
    if strict or completeness > 0:
        problems.extend(_emptiness(value, spec))
    for criterion in intent.success_criteria if intent else []:
        problems.extend(_counting(value, spec, criterion))
    return problems


def says_nothing(value: Any, spec: TypeSpec) -> str | None:
    """Why `value` (coerced to `spec`) holds nothing to check, or None when it holds
    something. A document's words count only in its elements' content (text, code, items,
    headers, rows): a code block's language or a heading's level says nothing."""
    if spec.kind == "document":
        sections = value.get("sections", [])
        if not sections:
            return "the document has no sections"
        if not any(_has_words(_content(s.get("elements", []))) for s in sections):
            return "the document has sections but no text in any of them"
        return None
    if value is None:
        return "there is no answer"
    if isinstance(value, str) and not value.strip():
        return "the answer is empty"
    if isinstance(value, list | dict) and not value:
        return f"the {'list' if isinstance(value, list) else 'object'} is empty"
    return None


def _emptiness(value: Any, spec: TypeSpec) -> list[str]:
    if spec.kind != "document" or says_nothing(value, spec):
        return []  # a value with nothing in it is refused before quality is judged
    return [
        f"section {section.get('id') or index} ({section['content_type']}) has no content"
        for index, section in enumerate(value.get("sections", []))
        if not _has_words(_content(section.get("elements", [])))
    ]


_CONTENT_KEYS = ("text", "code", "items", "headers", "rows")


def _content(elements: list[Any]) -> list[Any]:
    """What the document's elements say: their content fields (messages.document's
    shapes), or the whole element when it has none of them (an element kept as the model
    wrote it)."""
    said: list[Any] = []
    for element in elements:
        if isinstance(element, dict):
            fields = [element[key] for key in _CONTENT_KEYS if key in element]
            said.extend(fields if fields else [element])
        else:
            said.append(element)
    return said


def _has_words(value: Any) -> bool:
    """Whether any string inside `value` has a word character: empty `code`, `text` or
    `items` fill a document's shape without saying anything."""
    if isinstance(value, str):
        return any(ch.isalnum() for ch in value)
    if isinstance(value, dict):
        return any(_has_words(item) for item in value.values())
    if isinstance(value, list):
        return any(_has_words(item) for item in value)
    return False


def _counting(value: Any, spec: TypeSpec, criterion: str) -> Iterator[str]:
    for match in _CRITERION.finditer(criterion):
        wanted = _count(match["count"])
        counted = _measure(value, spec, match["unit"].lower())
        if wanted is None or counted is None:
            continue
        holds, phrase = _BOUNDS[match["bound"].lower()]
        if not holds(counted, wanted):
            yield (
                f"success criterion {criterion!r} not met: found {counted} {match['unit']}, "
                f"{phrase} {wanted} required"
            )


def _count(text: str) -> int | None:
    if text.isdecimal():
        # a count beyond the numeral limit is no count any answer could meet or break
        return int(text) if len(text) <= MAX_NUMERAL_DIGITS else None
    number = words_to_number(text)
    return int(number) if number is not None and number == int(number) else None


def _measure(value: Any, spec: TypeSpec, unit: str) -> int | None:
    """How many `unit`s `value` has, or None when that unit does not apply to it."""
    is_document = spec.kind == "document"
    if unit.startswith(("word", "character", "char")):
        text = " ".join(_document_text(value)) if is_document else value
        if not isinstance(text, str):
            return None
        return len(text.split()) if unit.startswith("word") else len(text)
    if is_document and unit.startswith("section"):
        return len(value.get("sections", []))
    if isinstance(value, list):
        return len(value)
    if is_document:
        return sum(_document_items(section) for section in value.get("sections", []))
    return None


def _document_items(section: dict[str, Any]) -> int:
    elements = section.get("elements", [])
    if section["content_type"] in _LIST_TYPES:
        return sum(len(e.get("items", [])) for e in elements)
    if section["content_type"] == "table":
        return sum(len(e.get("rows", [])) for e in elements)
    return 0


def _document_text(document: dict[str, Any]) -> Iterator[str]:
    for section in document.get("sections", []):
        for element in section.get("elements", []):
            for key in ("text", "code"):
                if isinstance(element.get(key), str):
                    yield element[key]
            yield from (str(item) for item in element.get("items", []))
