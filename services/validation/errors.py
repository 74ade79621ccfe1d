"""Errors raised while turning raw model output into the desired type."""

from __future__ import annotations

import math
import reprlib
from typing import Any

from postel.messages.errors import InvalidInput

_SHOWN_CHARS = 80
_SHOWN_INT_BITS = 4_000


class CoercionError(InvalidInput):
    """The raw output cannot be read as the desired type.

    The message is meant for two readers: a person looking at a failed job, and the model
    receiving a repair request. `path` locates the offending part inside nested values
    (`$.items[2].price`); it is empty for a top-level value.
    """

    def __init__(self, reason: str, *, path: str = "") -> None:
        self.reason = reason
        self.path = path
        super().__init__(f"at ${path}: {reason}" if path else reason)

    @classmethod
    def mismatch(cls, expected: str, raw: Any, why: str) -> CoercionError:
        return cls(f"expected {expected}, got {show(raw)}: {why}")

    def within(self, step: str) -> CoercionError:
        """The same error seen from the enclosing value (`step` is `[2]` or `.price`)."""
        return CoercionError(self.reason, path=step + self.path)


class UnsupportedSchemaError(InvalidInput):
    """The desired JSON Schema is malformed ({"properties": 5}) or uses a keyword outside the
    supported subset.

    Not a CoercionError on purpose: no repair of the model's output can fix the schema, so a
    validator should fail the job at once instead of asking for a repair."""


def show(raw: Any) -> str:
    """A short quoted rendering of an offending value for error messages (bounded work for
    any value: a huge or deeply nested one is abbreviated, not rendered whole)."""
    if isinstance(raw, int) and raw.bit_length() > _SHOWN_INT_BITS:
        # rendering a huge int in decimal is itself slow (and refused past 4,300 digits)
        return f"an int of about {int(raw.bit_length() * math.log10(2))} digits"
    text = raw[: _SHOWN_CHARS + 1] if isinstance(raw, str) else _SHORT_REPR.repr(raw)
    if len(text) > _SHOWN_CHARS:
        text = text[: _SHOWN_CHARS - 1] + "…"
    return repr(text) if isinstance(raw, str) else text


_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxlevel = 3
_SHORT_REPR.maxstring = _SHOWN_CHARS
