"""The oracle: a perfect model of the continuation contract, for tests and benchmarks.

Given a target sections document and max_tokens, it answers a prompt as a model that follows
the contract exactly would, and is cut like a real one: its answer is truncated to max_tokens
(`truncate_to_tokens`) with finish_reason "length", else "stop". Its whole document is the
target in one fixed serialisation (compact JSON; non-ASCII kept, or with `ascii_only` every
non-ASCII character as a `\\uXXXX` escape, surrogate pairs included). It knows nothing of the
loop but the target: where to resume is read from the prompt text alone (the resume point),
and the end of the text the prompt shows as delivered must be the target's text just before
it (as `continuation.shown_json` writes it), which shows the continuation text carries the
cut-off part exactly as written and unchanged by the prompt builder. A prompt without a
resume point is a first call.

Since every answer goes on from the exact character where the last one was cut, and the
token estimate reads a text the same from any token boundary, the answers together are the
serialised target with nothing sent twice: a run takes ceil(target tokens / max_tokens)
calls, the minimum any loop can reach."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from postel.messages.errors import PostelError
from postel.services.generation.continuation import (
    read_resume_offset,
    read_text_so_far,
    shown_json,
)
from postel.services.llm.tokens import count_tokens, truncate_to_tokens


class OracleError(PostelError, ValueError):
    """The prompt does not point at the target document."""


class OracleReply(BaseModel):
    text: str
    finish_reason: str
    completion_tokens: int


def serialise(document: dict[str, Any], ascii_only: bool = False) -> str:
    """The oracle's fixed serialisation: compact JSON."""
    return json.dumps(document, ensure_ascii=ascii_only, separators=(",", ":"))


class Oracle:
    def __init__(self, target: dict[str, Any], max_tokens: int, ascii_only: bool = False) -> None:
        self.target = target
        self.max_tokens = max_tokens
        self.text = serialise(target, ascii_only)

    def full_text(self, prompt: str) -> str:
        """The whole answer to `prompt`, before the max_tokens cut."""
        offset = read_resume_offset(prompt)
        if offset is None:
            return self.text
        if offset > len(self.text):
            raise OracleError(f"resume point {offset} is past the target's end")
        shown = read_text_so_far(prompt)
        if shown is None:
            raise OracleError("the prompt shows no text as delivered")
        # Shown, a character takes at least its own length: the window holds the whole end.
        expected = shown_json(self.text[max(0, offset - len(shown)) : offset])
        if not expected.endswith(shown):
            raise OracleError(
                f"the text shown as delivered is not the target's text before {offset}: "
                f"{shown[-40:]!r} vs {expected[-40:]!r}"
            )
        return self.text[offset:]

    def answer(self, prompt: str) -> OracleReply:
        text, was_cut = truncate_to_tokens(self.full_text(prompt), self.max_tokens)
        return OracleReply(
            text=text,
            finish_reason="length" if was_cut else "stop",
            completion_tokens=count_tokens(text),
        )
