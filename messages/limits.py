"""How large and how deep anything a producer or a model sends may be.

Every entrance (ingress, queue payloads, the HTTP API, the client) checks these before it
parses, so that no input can exhaust memory, the stack or the CPU; an input over a limit is
refused with a LimitExceeded that names the limit. docs/API.md's "Limits" table lists them.
"""

from __future__ import annotations

import re

from postel.messages.errors import LimitExceeded

MAX_PAYLOAD_BYTES = 1_048_576
"""One ingress entry's `job` field, one queued message, one HTTP request body."""

MAX_MESSAGE_BYTES = 8 * 1_048_576
"""One message on a queue, as JSON (a message carries the request and what stages added)."""

MAX_JSON_DEPTH = 64
"""Nesting of objects and arrays in any JSON postel reads from outside or from a queue."""

MAX_VALUE_DEPTH = 32
"""Nesting of a job's arguments and of a desired type's JSON Schema, leaving room for the
message around them within MAX_JSON_DEPTH."""

MAX_PROMPT_CHARS = 100_000
"""A job's prompt."""

MAX_ARGUMENTS_BYTES = 512_000
"""A job's arguments, as JSON."""

MAX_TYPE_DEPTH = 16
"""Nesting of a desired type: `list[list[int]]` is depth 3."""

MAX_RECORDED_CALL_BYTES = 262_144
"""A model call recorded with its job (infra/store/calls.py) keeps at most this much of its prompt
and of its answer; a longer one is recorded cut, and marked `truncated`."""

MAX_REFERENCE_BYTES = 2 * 1_048_576
"""A value the planner makes the answer by reference (`COMPLETE: ${var}`), as JSON: it
travels whole in the messages after it (twice in one: as the answer and in the progress), so
within MAX_MESSAGE_BYTES."""

MAX_INLINE_RESULT_BYTES = 65_536
"""A terminal message larger than this is not copied into the `postel:results` stream: the
entry says `in: record`, and the result is read from the job record."""

MAX_DEADLINE_S = 30 * 24 * 3600.0
"""The furthest a job's deadline may lie."""

MAX_NUMERAL_DIGITS = 1_000
"""A number read from a model's answer: at most this many digits, and its magnitude between
10**-MAX_NUMERAL_DIGITS and 10**MAX_NUMERAL_DIGITS (so `1e1000000` is refused before any
arithmetic, and every int result stays far below Python's 4,300-digit str/int limit)."""

MAX_GRAPH_BYTES = 64 * 1_048_576
"""A graph uploaded over HTTP, unpacked (the body itself stays within MAX_PAYLOAD_BYTES:
send a larger GraphML file gzip-compressed)."""


MAX_JSON_REPAIR_CHARS = 10_000
"""A model's answer that is not valid JSON as it stands is repaired (quotes, commas, a cut-off
tail) only up to this many characters: repairing is pure Python and slows down quadratically
on some slop (many unquoted values: about 1 s at this size), so a longer answer must be valid
JSON."""

MAX_SCALAR_CHARS = 10_000
"""A model's answer read as one number or one yes/no (also each item of a list of them): a
longer text is prose, not a value, and is refused before it is searched."""

MAX_LIST_ITEMS = 10_000
"""Items in a list a model answers (a JSON array, bullets, lines or comma-separated text),
checked before each item is coerced."""


def check_json_text(
    text: str | bytes,
    *,
    what: str = "payload",
    max_bytes: int = MAX_PAYLOAD_BYTES,
    max_depth: int = MAX_JSON_DEPTH,
) -> None:
    """Refuse JSON text over `max_bytes` or nested deeper than `max_depth`, without parsing
    it (a parser would recurse into the depth it is meant to refuse)."""
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "replace"))
    if size > max_bytes:
        raise LimitExceeded(f"{what} size limit", max_bytes, f"got {size} bytes")
    # Nesting needs an opening bracket per level: text with few of them (most messages) is
    # shallow enough without the scan.
    openers = (
        text.count("[") + text.count("{")
        if isinstance(text, str)
        else (text.count(b"[") + text.count(b"{"))
    )
    if openers <= max_depth:
        return
    depth = json_depth(
        text if isinstance(text, str) else text.decode("utf-8", "replace"), max_depth
    )
    if depth > max_depth:
        raise LimitExceeded(f"{what} nesting limit", max_depth, f"got depth {depth} or more")


# One pass over the tokens that matter: an escape (its character never ends a string), a
# quote, a bracket. Linear in the text, whatever it holds.
_TOKEN = re.compile(r'\\.|["\[\]{}]', re.DOTALL)


def json_depth(text: str, stop_above: int | None = None) -> int:
    """The deepest nesting of `[` and `{` outside strings in JSON text; with `stop_above`,
    the first depth beyond it (the scan stops there)."""
    depth = deepest = 0
    in_string = False
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token == '"':
            in_string = not in_string
        elif in_string or len(token) == 2:
            continue
        elif token in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if stop_above is not None and depth > stop_above:
                return depth
        else:
            depth -= 1
    return deepest
