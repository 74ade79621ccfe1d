"""Reading one number out of model output: currency, separators, percentages, words, prose.

Decisions (documented for callers and tests):
- Percentages are fractions: "45%" reads as 0.45 (a float result is a quantity, and 45% of
  something is 0.45 of it). For an int result "100%" is 1 and "45%" fails.
- Accounting negatives: "(5.00)" is -5.0 when the parentheses wrap only the amount.
- Thousands and decimal separators: price_parser decides ("1.299,99" and "1,299.99" both read
  1299.99). The one ambiguous shape, a single separator followed by exactly three digits
  ("1,234" / "1.234"), follows the locale's decimal separator; without a locale, "." is the
  decimal separator, so "1,234" is 1234 and "1.234" is 1.234.
- Prose: a number inside a sentence is accepted when it is the only value there ("The total
  is $165.50." -> 165.5). Several different values are refused as ambiguous, never guessed.
- Number words ("twelve", "three point five") are read only when no digits are present.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, localcontext
from typing import Any

from postel.services.validation.errors import CoercionError
from postel.services.validation.text import clean_scalar
from postel.services.validation.words import find_number_words, words_to_number
from price_parser import Price

_CURRENCY = r"(?:US\$|[$€£¥₹₩₽¢]|\b[A-Z]{3}\b)"
_GROUPED = r"\d{1,3}(?P<sep>[,.'\u00a0\u202f ])\d{3}(?:(?P=sep)\d{3})*(?:[.,]\d+)?"
_PLAIN = r"\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?|\.\d+"
_SCALE_WORDS = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_TOKEN = re.compile(
    rf"""(?<![\w.,])
    (?P<open>\(\s*)?
    (?P<sign>[-−–+])?
    (?:{_CURRENCY}\s?)?
    (?P<sign2>[-−+])?
    (?P<num>{_GROUPED}|{_PLAIN})(?!\d)
    (?:\s+(?P<scale>{"|".join(_SCALE_WORDS)})\b)?
    (?:\s?{_CURRENCY})?
    (?P<pct>\s?%)?
    (?P<close>\s*\))?""",
    re.VERBOSE,
)
_AMBIGUOUS_GROUP = re.compile(r"\d{1,3}[.,]\d{3}")
_NEGATIVE = {"-", "−", "–"}
_PRECISION = 100  # digits kept in arithmetic (even negation); the default 28 rounds long ints

# Languages writing "," as the decimal separator; regional exceptions below use ".".
# fmt: off
_DECIMAL_COMMA = frozenset({
    "de", "fr", "es", "it", "pt", "nl", "ru", "pl", "cs", "sk", "sv", "da", "fi", "nb", "nn",
    "no", "tr", "id", "vi", "uk", "el", "ro", "hu", "bg", "hr", "sl", "sr", "lt", "lv", "et",
    "ca", "is", "az", "kk", "be",
})
# fmt: on
_DECIMAL_POINT_REGIONS = frozenset({"de-ch", "de-li", "it-ch"})


def decimal_separator(locale: str | None) -> str:
    """The decimal separator of a locale such as "de-DE", "fr_FR.UTF-8" or "en"."""
    if not locale:
        return "."
    tag = locale.split(".")[0].replace("_", "-").lower()
    if tag in _DECIMAL_POINT_REGIONS:
        return "."
    return "," if tag.split("-")[0] in _DECIMAL_COMMA else "."


def read_number(raw: Any, *, expected: str, locale: str | None = None) -> Decimal | int | float:
    """A finite number from text or from an already numeric JSON value (never a boolean)."""
    if isinstance(raw, bool):
        raise CoercionError.mismatch(expected, raw, "a boolean is not a number")
    if isinstance(raw, str):
        return parse_number(raw, expected=expected, locale=locale)
    if not isinstance(raw, int | float):
        raise CoercionError.mismatch(expected, raw, "not a number")
    if not math.isfinite(raw):
        raise CoercionError.mismatch(expected, raw, "not a finite number")
    return raw


def parse_number(text: str, *, expected: str, locale: str | None = None) -> Decimal:
    """The single number that `text` states, exactly (a Decimal, so ints stay exact)."""
    cleaned = clean_scalar(text)
    values = [_token_value(m, locale) for m in _TOKEN.finditer(cleaned)]
    if not values:
        spelled = words_to_number(cleaned.rstrip(".!"))
        values = [spelled] if spelled is not None else find_number_words(cleaned)
    distinct = list(dict.fromkeys(values))
    if not distinct:
        raise CoercionError.mismatch(expected, text, "not a number")
    if len(distinct) > 1:
        shown = ", ".join(_plain(v) for v in distinct[:5])
        raise CoercionError.mismatch(
            expected, text, f"ambiguous: several different numbers ({shown}); answer with one"
        )
    return distinct[0]


def _token_value(match: re.Match[str], locale: str | None) -> Decimal:
    number = match["num"]
    if match["sep"] is None:
        # no digit grouping: the one separator, if any, is the decimal point
        value = Decimal(number.replace(",", "."))
    else:
        hint = decimal_separator(locale) if _AMBIGUOUS_GROUP.fullmatch(number) else None
        amount = Price.fromstring(number, decimal_separator=hint).amount
        if amount is None:
            raise CoercionError(f"cannot read the number {number!r}")
        value = amount
    with localcontext(prec=_PRECISION):
        if match["scale"]:
            value *= _SCALE_WORDS[match["scale"]]
        if match["pct"]:
            value /= 100
        accounting = bool(match["open"] and match["close"])
        if match["sign"] in _NEGATIVE or match["sign2"] in _NEGATIVE or accounting:
            value = -value
    return value


def _plain(value: Decimal) -> str:
    return format(value, "f")
