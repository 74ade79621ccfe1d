"""Reading a yes/no answer.

Uncertain answers ("unknown", "maybe", "n/a", "it depends") are errors, never False: a
missing answer is not a negative one."""

from __future__ import annotations

import re

from postel.services.validation.errors import CoercionError
from postel.services.validation.text import clean_scalar

# fmt: off
_TRUE = frozenset({
    "true", "yes", "y", "t", "1", "on", "correct", "right", "affirmative", "yep", "yeah", "ok",
    "confirmed", "present",
})
_FALSE = frozenset({
    "false", "no", "n", "f", "0", "off", "incorrect", "wrong", "negative", "nope", "absent",
})
# fmt: on
_STRONG = {True: frozenset({"true", "yes"}), False: frozenset({"false", "no"})}
_UNCERTAIN = re.compile(
    r"\b(?:maybe|unknown|unsure|uncertain|perhaps|possibly|unclear|undetermined|depends|"
    r"partially|partly|none|null|nil|not sure|don'?t know|cannot (?:tell|say|determine))\b"
    r"|(?<!\w)n/?a(?!\w)",
    re.IGNORECASE,
)
_WORD = re.compile(r"[\w/]+")


def parse_bool(text: str) -> bool:
    cleaned = clean_scalar(text).lower().rstrip(".!")
    if cleaned in _TRUE or cleaned in _FALSE:
        return cleaned in _TRUE
    if _UNCERTAIN.search(cleaned):
        raise CoercionError.mismatch("bool", text, "an uncertain answer is not yes or no")
    words = _WORD.findall(cleaned)
    if not words or (words[0] not in _TRUE and words[0] not in _FALSE):
        raise CoercionError.mismatch("bool", text, "not a yes/no answer")
    answer = words[0] in _TRUE
    if _STRONG[not answer].intersection(words[1:]):
        raise CoercionError.mismatch("bool", text, "ambiguous: says both yes and no")
    return answer
