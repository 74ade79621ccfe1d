"""Small text clean-ups shared by the coercers: code fences, quotes, markdown emphasis."""

from __future__ import annotations

import re

# A language tag counts only on the fence's own line: "```Paris```" is a fenced "Paris".
_FENCE = re.compile(r"```(?:[\w+.-]*[ \t]*\n)?(.*?)\n?[ \t]*```", re.DOTALL)
_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "«": "»", "`": "`"}
# Emphasis as markdown reads it: the opening marker starts a word and the closing one ends a
# word, so "2*3*4" or "snake_case_name" are not emphasis.
_EMPHASIS = re.compile(r"(?<!\w)(\*\*\*|\*\*|__|\*)(?=\S)(.+?)(?<=\S)\1(?!\w)", re.DOTALL)
# Longest first, so that "**x**" is read as bold, not as italic "*x*" around "*x*".
_WHOLE_MARKERS = ("***", "**", "*", "___", "__", "_", "``", "`")
_WRAPPINGS = 4  # layers of quotes and emphasis removed around a whole answer, at most
_DUNDER = re.compile(r"__[a-z][a-z0-9_]*__")
_INNER_APOSTROPHE = re.compile(r"(?<=\w)'(?=\w)")


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
    """Remove one pair of matching quotes around the whole text.

    Not when the same quote also appears inside ('"a" and "b"' is two quoted parts, not one);
    apostrophes inside words ("'It's'") do not count."""
    if len(text) < 2 or _QUOTES.get(text[0]) != text[-1]:
        return text
    inner = text[1:-1]
    if text[0] == text[-1] and text[0] in _INNER_APOSTROPHE.sub("", inner):
        return text
    return inner.strip()


def strip_emphasis(text: str) -> str:
    """Remove markdown emphasis or code marks that wrap the whole text (`**Paris**`,
    `__Paris__`, `*Paris*`, `_Paris_`, `` `Paris` ``), also nested in quotes; emphasis inside a
    sentence stays. A Python dunder name such as `__init__` is a name, not emphasis."""
    for _ in range(_WRAPPINGS):
        unquoted = strip_quotes(text)
        if unquoted == text:
            unquoted = _unemphasised(text)
        if unquoted == text:
            break
        text = unquoted
    return text


def _unemphasised(text: str) -> str:
    if _DUNDER.fullmatch(text):
        return text
    for marker in _WHOLE_MARKERS:
        if len(text) > 2 * len(marker) and text.startswith(marker) and text.endswith(marker):
            inner = text[len(marker) : -len(marker)]
            wraps = not inner[0].isspace() and not inner[-1].isspace() and marker not in inner
            return inner if wraps else text
    return text


def clean_scalar(text: str) -> str:
    """Fences, surrounding quotes and markdown emphasis removed: what a scalar answer says."""
    text = strip_quotes(strip_fences(text))
    return _EMPHASIS.sub(r"\2", text).strip()
