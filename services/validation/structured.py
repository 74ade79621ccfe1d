"""Reading JSON values and lists out of model output.

JSON syntax slop (single quotes, trailing commas, unquoted keys, comments, a cut-off tail,
prose around the object) is repaired by `json_repair`. Lists are also read from markdown
bullets, numbered lines and comma-separated text."""

from __future__ import annotations

import json
import re
from typing import Any

import json_repair
from postel.services.validation.errors import CoercionError
from postel.services.validation.text import strip_fences, strip_quotes

_BULLET = re.compile(r"^\s*(?:[-*•+–]|\d+[.)]|\(\d+\))\s+(?P<item>.*\S)\s*$")


def load_json(text: str, *, expected: str) -> Any:
    """The JSON value in `text`, repaired if needed."""
    body = strip_fences(text)
    try:
        return json.loads(body)
    except ValueError:
        pass
    repaired = json_repair.loads(body)
    # json_repair answers "" when it finds no JSON at all
    if repaired == "" and body not in ('""', "''"):
        raise CoercionError.mismatch(expected, text, "no JSON value found")
    return repaired


def load_object(raw: Any, *, expected: str) -> dict[str, Any]:
    value = load_json(raw, expected=expected) if isinstance(raw, str) else raw
    if not isinstance(value, dict):
        raise CoercionError.mismatch(expected, raw, f"not a JSON object but {_kind(value)}")
    return value


def split_list(raw: Any, *, expected: str) -> list[Any]:
    """The raw items of a list answer, not yet coerced to the item type.

    Accepted: a JSON array (fenced or in prose), an object wrapping exactly one array
    ({"names": [...]}), bullet or numbered lines (intro lines such as "Names:" are dropped),
    one item per line, or items separated by ";" or commas. A single value is a one-item
    list; empty text is an empty list."""
    if isinstance(raw, list):
        return raw
    if isinstance(raw, dict):
        return _unwrap(raw, raw, expected)
    if not isinstance(raw, str):
        return [raw]
    body = strip_fences(raw)
    if not body:
        return []
    if body[0] in "[{" or ("[" in body and "]" in body):
        value = load_json(body, expected=expected)
        if isinstance(value, list):
            return value
        if isinstance(value, dict):
            return _unwrap(value, raw, expected)
    return _split_text(body)


def _unwrap(value: dict[str, Any], raw: Any, expected: str) -> list[Any]:
    lists = [v for v in value.values() if isinstance(v, list)]
    if len(value) == 1 and len(lists) == 1:
        return lists[0]
    raise CoercionError.mismatch(expected, raw, "a JSON object, not a list")


def _split_text(body: str) -> list[str]:
    lines = [line for line in body.splitlines() if line.strip()]
    bullets = [m["item"] for m in map(_BULLET.match, lines) if m]
    if bullets:
        return [_tidy(item) for item in bullets]
    if len(lines) > 1:
        if lines[0].rstrip().endswith(":"):
            lines = lines[1:]
        return [_tidy(line) for line in lines]
    line = lines[0]
    if ";" in line:
        parts = line.split(";")
    elif re.search(r",\s", line):
        # "1,299.99, 5" keeps its thousands separator; bare commas split only without spaces
        parts = re.split(r",\s+", line)
    else:
        parts = line.split(",")
    items = [_tidy(part) for part in parts]
    if len(items) > 1:
        items[-1] = re.sub(r"^(?:and|or)\s+", "", items[-1])
    return [item for item in items if item]


def _tidy(item: str) -> str:
    return strip_quotes(item.strip().rstrip(".;").strip())


def _kind(value: Any) -> str:
    names = {list: "a list", str: "text", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number" if isinstance(value, int | float) else "a value")
