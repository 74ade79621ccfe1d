"""Reading a yes/no answer.

Only unambiguous answers become a bool:
- the whole answer is a yes/no word ("yes", "No.", "true", "off", "correct", "negative");
- or a sentence opens with a clear yes/no word followed by punctuation ("Yes, the invoice
  is paid." / "No - it is not.").
Everything else is refused: uncertain answers ("unknown", "maybe", "n/a", "No idea") are
errors, never False (a missing answer is not a negative one); so are questions ("Right?"),
phrases that merely start like an answer ("No problem", "false positive", "on hold",
"Negative for COVID-19") and numbers other than 1 and 0 ("0.5", "-1")."""

from __future__ import annotations

import re

from postel.messages.limits import MAX_SCALAR_CHARS
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
# Words that answer a question on their own when a sentence opens with them.
_OPENERS = {
    True: frozenset({"yes", "true", "correct", "yep", "yeah", "affirmative"}),
    False: frozenset({"no", "false", "incorrect", "nope"}),
}
# fmt: on
_STRONG = {True: frozenset({"true", "yes"}), False: frozenset({"false", "no"})}
_UNCERTAIN = re.compile(
    r"\b(?:maybe|unknown|unsure|uncertain|perhaps|possibly|unclear|undetermined|depends|"
    r"partially|partly|none|null|nil|idea|not sure|don'?t know|cannot (?:tell|say|determine))\b"
    r"|(?<!\w)n/?a(?!\w)",
    re.IGNORECASE,
)
_OPENING = re.compile(r"(?P<word>[a-z]+)\s*(?:[,;:.!]|\s[-–—])")
_WORD = re.compile(r"[\w/]+")


def parse_bool(text: str) -> bool:
    if len(text) > MAX_SCALAR_CHARS:
        raise CoercionError.mismatch(
            "bool", text, f"an answer over {MAX_SCALAR_CHARS} characters is not a yes or no"
        )
    cleaned = clean_scalar(text).lower().rstrip(".!")
    if cleaned in _TRUE or cleaned in _FALSE:
        return cleaned in _TRUE
    if _UNCERTAIN.search(cleaned):
        raise CoercionError.mismatch("bool", text, "an uncertain answer is not yes or no")
    if "?" in cleaned:
        raise CoercionError.mismatch("bool", text, "a question is not a yes/no answer")
    words = set(_WORD.findall(cleaned))
    if _STRONG[True] & words and _STRONG[False] & words:
        raise CoercionError.mismatch("bool", text, "ambiguous: says both yes and no")
    opening = _OPENING.match(cleaned)
    for answer, openers in _OPENERS.items():
        if opening and opening["word"] in openers:
            return answer
    raise CoercionError.mismatch(
        "bool", text, "not a yes/no answer; answer with yes or no (true or false)"
    )
