"""Is a generator response complete? Decided by parsing only (seed 002, step 7).

A response is complete when its JSON parses strictly and the provider did not stop it for
length. The last character is never looked at: a `}` at the end proves nothing, and a model
stopped for length may have closed its JSON by chance."""

from __future__ import annotations

import json
import re
from typing import Any

from postel.services.generation.spans import Span, scan

# Models wrap JSON in markdown fences or lead with prose; the document starts at its root key.
_SECTIONS_ROOT = re.compile(r'\{\s*"sections"\s*:')
_ANY_ROOT = re.compile(r"[{\[]")


def find_json_start(raw: str) -> int | None:
    """Offset of the response's JSON document, skipping fences and leading prose."""
    found = _SECTIONS_ROOT.search(raw) or _ANY_ROOT.search(raw)
    return found.start() if found else None


def locate_json(raw: str) -> tuple[int, Span] | None:
    """The start offset and span tree of the response's JSON, or None when it has none."""
    start = find_json_start(raw)
    if start is None:
        return None
    root = scan(raw, start)
    return None if root is None else (start, root)


def strict_parse(raw: str) -> Any | None:
    """The response's JSON value when it parses strictly, else None; text around it is ignored."""
    located = locate_json(raw)
    if located is None or not located[1].closed:
        return None
    start, root = located
    try:
        return json.loads(raw[start : root.end])
    except ValueError:
        return None


def is_complete(raw: str, finish_reason: str | None) -> bool:
    return finish_reason != "length" and strict_parse(raw) is not None
