"""A deterministic token estimate used wherever postel counts or cuts text by tokens.

Real tokenizers differ per model; what postel needs is a count that is stable, cheap and
close to the usual ~4 characters per token, so caps, truncation and benchmarks agree. A
token here is a run of letters/digits (split every 4 characters), a run of spaces, or one
other character."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[^\W_]{1,4}|\s+|.", re.DOTALL)


def count_tokens(text: str) -> int:
    return sum(1 for _ in _TOKEN.finditer(text))


def truncate_to_tokens(text: str, max_tokens: int) -> tuple[str, bool]:
    """The first `max_tokens` tokens of `text`, and whether anything was cut."""
    if max_tokens <= 0:
        return "", bool(text)
    for index, match in enumerate(_TOKEN.finditer(text)):
        if index == max_tokens:
            return text[: match.start()], True
    return text, False
