"""A deterministic token estimate used wherever postel counts or cuts text by tokens.

Real tokenizers differ per model; what postel needs is a count that is stable, cheap and
a little above what real tokenizers count (so budgets err on the safe side), so caps,
truncation and benchmarks agree. A token here is a run of up to 5 letters/digits or up to 2
punctuation marks, each with an optional leading space (as BPE vocabularies merge " word"),
or a run of whitespace. That is about 3.2 characters per token on English prose and 2.6 on
JSON, where real tokenizers give about 4 and 3."""

from __future__ import annotations

import re

_TOKEN = re.compile(r" ?[^\W_]{1,5}| ?[^\w\s]{1,2}|\s+|.", re.DOTALL)


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
