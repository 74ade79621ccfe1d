"""How large and how deep anything a producer or a model sends may be.

Every entrance (ingress, queue payloads, the HTTP API, the client) checks these before it
parses, so that no input can exhaust memory, the stack or the CPU; an input over a limit is
refused with a LimitExceeded that names the limit. The README's "Limits" table lists them.
"""

from __future__ import annotations

import re

from postel.messages.errors import LimitExceeded

MAX_PAYLOAD_BYTES = 1_048_576
"""One ingress entry's `job` field, one queued message, one HTTP request body."""

MAX_JSON_DEPTH = 64
"""Nesting of objects and arrays in any JSON postel reads from outside."""

MAX_PROMPT_CHARS = 100_000
"""A job's prompt."""

MAX_ARGUMENTS_BYTES = 512_000
"""A job's arguments, as JSON."""

MAX_TYPE_DEPTH = 16
"""Nesting of a desired type: `list[list[int]]` is depth 3."""

MAX_DEADLINE_S = 30 * 24 * 3600.0
"""The furthest a job's deadline may lie."""

MAX_GRAPH_BYTES = 64 * 1_048_576
"""A graph uploaded over HTTP, unpacked (the body itself stays within MAX_PAYLOAD_BYTES:
send a larger GraphML file gzip-compressed)."""


def check_json_text(text: str | bytes, *, what: str = "payload") -> None:
    """Refuse JSON text over MAX_PAYLOAD_BYTES or nested deeper than MAX_JSON_DEPTH, without
    parsing it (a parser would recurse into the depth it is meant to refuse)."""
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "replace"))
    if size > MAX_PAYLOAD_BYTES:
        raise LimitExceeded(f"{what} size limit", MAX_PAYLOAD_BYTES, f"got {size} bytes")
    depth = json_depth(text if isinstance(text, str) else text.decode("utf-8", "replace"))
    if depth > MAX_JSON_DEPTH:
        raise LimitExceeded(f"{what} nesting limit", MAX_JSON_DEPTH, f"got depth {depth}")


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKET = re.compile(r"[\[\]{}]")


def json_depth(text: str) -> int:
    """The deepest nesting of `[` and `{` outside strings in JSON text."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub("", text)):
        if match.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest
