"""Small text clean-ups shared by the coercers: code fences, quotes, markdown emphasis."""

from __future__ import annotations

import re

_FENCE = re.compile(r"```[\w+.-]*[ \t]*\n?(.*?)\n?[ \t]*```", re.DOTALL)
_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "«": "»", "`": "`"}
_EMPHASIS = re.compile(r"(\*\*|__|\*)(.+?)\1", re.DOTALL)


def strip_fences(text: str) -> str:
    """The body of the first fenced code block, or the text itself when there is none.

    A model that fences its answer usually wraps the value in prose ("Here it is: ```...```");
    the fenced part is the answer."""
    match = _FENCE.search(text)
    return match.group(1).strip() if match else text.strip()


def unwrap_fence(text: str) -> str:
    """The body of a fence that wraps the whole text; prose around a fence is kept intact."""
    match = _FENCE.fullmatch(text.strip())
    return match.group(1).strip() if match else text.strip()


def strip_quotes(text: str) -> str:
    """Remove one pair of matching quotes around the whole text."""
    if len(text) >= 2 and _QUOTES.get(text[0]) == text[-1]:
        return text[1:-1].strip()
    return text


def clean_scalar(text: str) -> str:
    """Fences, surrounding quotes and markdown emphasis removed: what a scalar answer says."""
    text = strip_quotes(strip_fences(text))
    return _EMPHASIS.sub(r"\2", text).strip()
