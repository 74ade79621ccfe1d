"""Reading one number out of model output: currency, separators, percentages, words, prose.

Liberal where the text says one value plainly, conservative where it does not: an answer
that states a bound, a range, a date or anything else that is not one number is refused with
the reason, never read as the nearest number it contains.

Decisions (documented for callers and tests):
- Percentages are fractions: "45%" and "45 percent" read as 0.45 (a float result is a
  quantity, and 45% of something is 0.45 of it). For an int result "100%" is 1 and "45%"
  fails.
- Magnitudes: "5k" is 5,000, "$5M" / "5MM" / "5mn" 5,000,000, "1.2B" / "1.2bn"
  1,200,000,000, "3T" / "3tn" 3 trillion; also the words thousand, million, billion,
  trillion, lakh and crore after a numeral. Lower-case "m", "b", "t" are magnitudes only
  next to a currency ("$5m"); alone ("5m") they may be a unit (metres, tonnes) and are
  refused as ambiguous.
- Accounting negatives: "(5.00)" is -5.0 when the parenthesised amount is the whole answer.
  A number in parentheses inside text ("Items (5)") is refused: it may be an aside or a
  negative amount.
- Separators: "1,299.99", "1.299,99", "1 299,99", "1'299.99" read 1299.99; Indian grouping
  "1,00,000" reads 100000; Python-style underscores "1_000" read 1000. The one ambiguous
  shape, a single separator followed by exactly three digits ("1,234" / "1.234"), follows
  the locale's decimal separator; without a locale, "." is the decimal separator, so "1,234"
  is 1234 and "1.234" is 1.234. For an int result that shape is refused when it would read
  as a decimal ("1.000": 1, or 1000 written with a thousands separator?). A decimal comma
  with more than two decimals ("123,4567") is read only under a locale that writes decimal
  commas; without one it may be a grouping or two numbers, and is refused. Digits grouped
  by plain spaces ("555 123") are one number only when they are the whole answer, carry
  decimals or a currency, or the locale writes a decimal comma (such locales group with
  spaces); in prose they are refused (several numbers, or a phone number?).
- Integer literals "0x1F", "0o17", "0b101" read as 31, 15, 5 (a program's way of writing a
  number is still that number); a malformed one ("0xZZ") is refused, never read as 0.
- Refused with the reason: comparisons and bounds ("<5", "at least 5", "5+", "5 or more"),
  ranges and alternatives ("5-10", "5 to 10", "one or two", "between 5 and 10"), dates,
  versions and identifiers ("12.5.2024", "2024-01-05", "1.2.3", "v2"), fractions ("3/4"),
  times and ratios ("12:30"), phone numbers ("call 555 123"), ordinals ("3rd",
  "twenty-first": a rank or a date, not a quantity), and non-finite or absurdly large
  numbers (see `MAX_NUMERAL_DIGITS`), superscripts ("5²": a power or a footnote?), vulgar
  fractions ("3 ½", "¾"; answer with one decimal number) and a trailing minus ("5-": a
  negative in some ledgers, or a cut-off range?).
- Approximations ("about 5", "~5", "roughly 5") read as the value they state.
- Prose: a number inside a sentence is accepted when it is the only value there ("The total
  is $165.50." -> 165.5). Several different values are refused as ambiguous, never guessed.
- Number words ("twelve", "three point five") are read only when no digits are present.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, localcontext
from typing import Any

from postel.messages.limits import MAX_NUMERAL_DIGITS, MAX_SCALAR_CHARS
from postel.services.validation.errors import CoercionError
from postel.services.validation.text import clean_scalar
from postel.services.validation.words import (
    CARDINAL_WORDS,
    NUMBER_WORD_PATTERN,
    ORDINAL_WORD_PATTERN,
    find_number_words,
    words_to_number,
)

_CURRENCY = r"(?:US\$|[$€£¥₹₩₽¢]|\b[A-Z]{3}\b)"
# A numeral as written: digits with any separators between digit groups; which grouping it
# uses, and whether it is one number at all, is decided afterwards (_numeral_value).
_NUMERAL = r"\d(?:[\d_]|[.,'\u00a0\u202f](?=\d)|\x20(?=\d{3}(?!\d)))*|\.\d+"
_RADIX = r"0[xX][0-9a-fA-F]+(?:_[0-9a-fA-F]+)*|0[oO][0-7]+(?:_[0-7]+)*|0[bB][01]+(?:_[01]+)*"
_SCALE_WORDS = {
    "thousand": 10**3,
    "million": 10**6,
    "billion": 10**9,
    "trillion": 10**12,
    "lakh": 10**5,
    "lakhs": 10**5,
    "crore": 10**7,
    "crores": 10**7,
}
_SUFFIXES = {
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "MM": 10**6,
    "mn": 10**6,
    "B": 10**9,
    "bn": 10**9,
    "T": 10**12,
    "tn": 10**12,
    "m": 10**6,
    "b": 10**9,
    "t": 10**12,
}
_UNIT_LIKE_SUFFIXES = frozenset({"m", "b", "t"})
_TOKEN = re.compile(
    rf"""(?:(?P<open>\()\s*|(?<![\w.,]))
    (?P<sign>[-−–+])?
    (?P<cur1>{_CURRENCY}\s?)?
    (?P<sign2>[-−+])?
    (?:(?P<radix>{_RADIX})(?!\w)
      |(?P<bad_radix>0[xXoObB]\w*)
      |(?P<num>{_NUMERAL})(?:[eE](?P<exp>[-+]?\d+))?)
    (?:(?P<suffix>MM|bn|mn|tn|[kKMBTmbt])(?!\w))?
    (?:\s+(?P<scale>{"|".join(_SCALE_WORDS)})\b)?
    (?:\s?(?P<cur2>{_CURRENCY}))?
    (?P<pct>\s?%|\s*(?:percent|per\s?cent|pct)\b)?
    (?P<close>\s*\))?""",
    re.VERBOSE,
)
_GROUPED = re.compile(
    r"\d{1,3}(?P<sep>[,.'\u00a0\u202f ])\d{3}(?:(?P=sep)\d{3})*(?:(?P<dec>[.,])\d+)?"
)
_INDIAN = re.compile(r"\d{1,2}(?:,\d{2})+,\d{3}(?:\.\d+)?")
_PLAIN = re.compile(r"\d+(?:_\d+)*(?:[.,]\d+(?:_\d+)*)?|\.\d+")
_NEGATIVE = {"-", "−", "–"}
_COMMA_DECIMALS = re.compile(r",\d+$")
# The common plain answers, read without the searches below (lists of thousands of them).
_SIMPLE_INTEGER = re.compile(r"\s*([-+]?\d{1,30})\s*")
_SIMPLE_DECIMAL = re.compile(r"\s*([-+]?\d{1,30}(?:\.\d{1,30})?)\s*")
_EXPONENT_DIGITS = len(str(MAX_NUMERAL_DIGITS)) + 1
# Digits kept in arithmetic (scaling, percentages, even negation): enough for every numeral
# the digit limit lets through, so ints stay exact.
_PRECISION = MAX_NUMERAL_DIGITS + 10
_MAX_BITS = math.floor(MAX_NUMERAL_DIGITS * math.log2(10))

_BOUND_WORDS = (
    r"at\s+least|at\s+most|more\s+than|less\s+than|fewer\s+than|greater\s+than|"
    r"higher\s+than|lower\s+than|(?:no|not)\s+(?:more|less|fewer)\s+than|up\s+to|over|under|"
    r"above|below|exceeding|in\s+excess\s+of|upwards\s+of|nearly|almost|just\s+(?:over|under)"
)


def _shapes(number_word: str) -> list[tuple[re.Pattern[str], str]]:
    """Shapes that contain a number but state no single number, each with the reason given
    back; matched against the lower-cased answer. `number_word` is the pattern of a number
    word, or one that never matches when the answer has none (the word alternatives are the
    slow part of these searches)."""
    start = rf"(?:(?:us\$|[$€£¥₹₩₽¢]|\b[a-z]{{3}}\b)\s?)?[-−+]?(?:\.?\d|{number_word})"
    end = rf"(?:\d[%kmbnt]*|{number_word})"
    bound = "{} states a bound, not a value; answer with the value itself"
    ranged = "{} is a range or several alternatives, not one number; answer with one value"
    shapes = [
        (
            r"(?<![\w.])\d+(?P<j>[-/])\d+(?P=j)\d+",
            "{} looks like a date, a phone number or an identifier, not one number",
        ),
        (
            r"\b(?:call|phone|tel|telephone|fax|dial)\b[:.]?\s*\+?[\d(]",
            "{} looks like a phone number, not a quantity",
        ),
        (r"\b(?:v\d|version\s*\d)", "{} looks like a version, not a quantity"),
        (
            r"(?<![\w./])\d+/\d+(?![\w/])",
            "{} is a fraction or a date; answer with one decimal number",
        ),
        (r"(?<![\w.:])\d+:\d+", "{} looks like a time or a ratio, not one number"),
        (
            r"(?<![\w.])\d+(?:st|nd|rd|th)\b",
            "{} is an ordinal (a rank or a date), not a quantity",
        ),
        (
            rf"{number_word}[\s-]+(?:and\s+)?{ORDINAL_WORD_PATTERN}",
            "{} is an ordinal or a fraction (a rank, a date, a part), not a quantity",
        ),
        (rf"(?:[<>≤≥≦≧]=?\s*|\b(?:{_BOUND_WORDS})\s+){start}", bound),
        (
            rf"{end}\s*(?:\+(?!\w)|\bor\s+(?:more|less|fewer|greater|higher|lower|above|below|"
            r"over|under)\b|\band\s+(?:up|above|over|more|higher)\b)",
            bound,
        ),
        (
            rf"\bbetween\s+{start}.{{0,40}}?\band\s+{start}",
            "{} is a range, not one number; answer with one value",
        ),
        (rf"\d[%kmbnt]*\s*(?:[-–—~]|\.\.\.?)\s*{start}", ranged),
        (rf"{end}\s+(?:to|or|through|thru|until|till)\s+{start}", ranged),
        (
            r"\d\s?[⁰¹²³⁴⁵⁶⁷⁸⁹]",
            "{} carries a superscript (a power or a footnote?); answer with the value itself",
        ),
        (
            r"(?:\d\s?)?[\u00bc-\u00be\u2150-\u215e]",
            "{} is a fraction; answer with one decimal number",
        ),
        (
            r"\d[-−–](?![\w.])",
            "{} ends in a minus (a negative in some ledgers, or a cut-off range?); answer -5 "
            "for a negative",
        ),
    ]
    return [(re.compile(pattern), reason) for pattern, reason in shapes]


_SHAPES_WITH_WORDS = _shapes(NUMBER_WORD_PATTERN)
_SHAPES_DIGITS_ONLY = _shapes("(?!)")
_LETTERS = re.compile(r"[a-z]+")
_DIGIT = re.compile(r"\d")

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


def read_number(
    raw: Any, *, expected: str, locale: str | None = None, whole: bool = False
) -> Decimal | int | float:
    """A finite number from text or from an already numeric JSON value (never a boolean).
    `whole`: an integer is wanted, which settles no separator as a decimal point."""
    if isinstance(raw, bool):
        raise CoercionError.mismatch(expected, raw, "a boolean is not a number")
    if isinstance(raw, str):
        return parse_number(raw, expected=expected, locale=locale, whole=whole)
    if not isinstance(raw, int | float):
        raise CoercionError.mismatch(expected, raw, "not a number")
    if isinstance(raw, int) and not within_digit_limit(raw):
        raise CoercionError.mismatch(expected, raw, _TOO_LARGE)
    if isinstance(raw, float) and not math.isfinite(raw):
        raise CoercionError.mismatch(expected, raw, "not a finite number")
    return raw


def as_float(number: Decimal | int | float, *, expected: str, raw: Any) -> float:
    """`number` as a float, refusing what a float cannot hold: beyond its range (it would
    become inf) or so small that it would become 0."""
    try:
        value = float(number)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        raise CoercionError.mismatch(expected, raw, "too large for a float (not finite)")
    if value == 0 and number != 0:
        raise CoercionError.mismatch(expected, raw, "too small for a float (it would read as 0)")
    return value


def within_digit_limit(number: int) -> bool:
    """Whether an int has at most MAX_NUMERAL_DIGITS digits (checked without converting it
    to text, which is itself slow for huge ints)."""
    return number.bit_length() <= _MAX_BITS


def parse_number(
    text: str, *, expected: str, locale: str | None = None, whole: bool = False
) -> Decimal:
    """The single number that `text` states, exactly (a Decimal, so ints stay exact)."""
    if len(text) > MAX_SCALAR_CHARS:
        raise CoercionError.mismatch(
            expected, text, f"an answer over {MAX_SCALAR_CHARS} characters is not one number"
        )
    reads_decimals = decimal_separator(locale) == "." and not whole
    simple = (_SIMPLE_DECIMAL if reads_decimals else _SIMPLE_INTEGER).fullmatch(text)
    if simple:
        return Decimal(simple.group(1))
    try:
        return _the_number(clean_scalar(text), locale, whole)
    except _NotOneNumber as refusal:
        raise CoercionError.mismatch(expected, text, str(refusal)) from None


class _NotOneNumber(Exception):
    """Why a text does not state exactly one number."""


def _the_number(cleaned: str, locale: str | None, whole: bool) -> Decimal:
    lowered = cleaned.lower()
    has_words = not CARDINAL_WORDS.isdisjoint(_LETTERS.findall(lowered))
    if has_words or _DIGIT.search(lowered):
        for pattern, reason in _SHAPES_WITH_WORDS if has_words else _SHAPES_DIGITS_ONLY:
            found = pattern.search(lowered)
            if found:
                raise _NotOneNumber(reason.format(repr(_extended(lowered, found))))
    answer = cleaned.rstrip(" .!")
    values = [_token_value(match, answer, locale, whole) for match in _TOKEN.finditer(answer)]
    if not values:
        spelled = words_to_number(answer)
        values = [spelled] if spelled is not None else find_number_words(cleaned)
    distinct = list(dict.fromkeys(values))
    if not distinct:
        raise _NotOneNumber("not a number")
    if len(distinct) > 1:
        shown = ", ".join(_plain(v) for v in distinct[:5])
        raise _NotOneNumber(f"ambiguous: several different numbers ({shown}); answer with one")
    return distinct[0]


_WORD_TAIL = re.compile(r"[\w.,%]*")


def _extended(text: str, found: re.Match[str]) -> str:
    """The matched shape with the rest of its last word ("5-1" of "5-10" shown as "5-10")."""
    tail = _WORD_TAIL.match(text, found.end())
    return text[found.start() : tail.end() if tail else found.end()].strip().rstrip(".,")


def _token_value(match: re.Match[str], answer: str, locale: str | None, whole: bool) -> Decimal:
    written = match.group().strip()
    is_whole_answer = match.start() == 0 and match.end() == len(answer)
    has_currency = bool(match["cur1"] or match["cur2"])
    parenthesised = bool(match["open"] and match["close"])
    if parenthesised and not is_whole_answer:
        raise _NotOneNumber(
            f"{written!r} is a number in parentheses inside text (an aside, or a negative "
            "amount?); answer with the number alone, -5 for a negative"
        )
    suffix = match["suffix"]
    if suffix in _UNIT_LIKE_SUFFIXES and not has_currency:
        raise _NotOneNumber(
            f"{written!r} is ambiguous: {suffix!r} may be a unit or a magnitude; write the "
            "number in full"
        )
    if match["bad_radix"]:
        raise _NotOneNumber(f"{match['bad_radix']!r} is not a hexadecimal, octal or binary number")
    if match["radix"]:
        value = _radix_value(match["radix"])
    else:
        standalone = is_whole_answer or has_currency
        value = _numeral_value(match["num"], match["exp"], locale, standalone, whole)
    with localcontext(prec=_PRECISION):
        if suffix:
            value *= _SUFFIXES[suffix]
        if match["scale"]:
            value *= _SCALE_WORDS[match["scale"]]
        if match["pct"]:
            value /= 100
        if match["sign"] in _NEGATIVE or match["sign2"] in _NEGATIVE or parenthesised:
            value = -value
    if value and abs(value.adjusted()) > MAX_NUMERAL_DIGITS:
        raise _NotOneNumber(_TOO_LARGE)
    return value


def _radix_value(literal: str) -> Decimal:
    digits = literal[2:].replace("_", "")
    if len(digits) > MAX_NUMERAL_DIGITS:
        raise _NotOneNumber(_TOO_LARGE)
    number = int(digits, {"x": 16, "o": 8, "b": 2}[literal[1].lower()])
    if not within_digit_limit(number):
        raise _NotOneNumber(_TOO_LARGE)
    return Decimal(number)


def _numeral_value(
    numeral: str, exponent: str | None, locale: str | None, standalone: bool, whole: bool
) -> Decimal:
    """The value of the numeral itself, before scale, percent and sign. `standalone`: the
    numeral is the whole answer or carries a currency, so space grouping is unambiguous;
    `whole`: an integer is wanted."""
    if sum(c.isdigit() for c in numeral) > MAX_NUMERAL_DIGITS:
        raise _NotOneNumber(_TOO_LARGE)
    if exponent is not None:
        if not _PLAIN.fullmatch(numeral):
            raise _NotOneNumber(_not_one(numeral))
        if len(exponent.lstrip("+-")) > _EXPONENT_DIGITS:
            raise _NotOneNumber(_TOO_LARGE)
        return Decimal(f"{numeral.replace('_', '').replace(',', '.')}e{exponent}")
    grouped = _GROUPED.fullmatch(numeral)
    if grouped and grouped["sep"] != grouped["dec"]:
        return _grouped_value(grouped, locale, standalone, whole)
    if _INDIAN.fullmatch(numeral):
        return Decimal(numeral.replace(",", ""))
    if _PLAIN.fullmatch(numeral):
        decimals = _COMMA_DECIMALS.search(numeral)
        if decimals and len(decimals.group()) > 3 and decimal_separator(locale) != ",":
            raise _NotOneNumber(
                f"{numeral!r}: a comma before {len(decimals.group()) - 1} digits is a decimal "
                "comma, a grouping or two numbers; answer with a decimal point"
            )
        return Decimal(numeral.replace("_", "").replace(",", "."))
    raise _NotOneNumber(_not_one(numeral))


def _grouped_value(
    grouped: re.Match[str], locale: str | None, standalone: bool, whole: bool
) -> Decimal:
    numeral, separator, decimal = grouped.group(), grouped["sep"], grouped["dec"]
    locale_decimal = decimal_separator(locale)
    if decimal is None and separator == locale_decimal and numeral.count(separator) == 1:
        if whole:
            raise _NotOneNumber(
                f"ambiguous: {numeral!r} is a decimal, or a whole number with a thousands "
                f"separator ({numeral.replace(separator, '')}); answer with digits only"
            )
        # "1.234" / "1,234": one separator before three digits is the locale's decimal point
        return Decimal(numeral.replace(",", "."))
    if separator == " " and decimal is None and not standalone and locale_decimal != ",":
        raise _NotOneNumber(
            f"{numeral!r}: digits separated by spaces inside text are one number or several "
            "(a phone number?); write the number without spaces"
        )
    return Decimal(numeral.replace(separator, "").replace(",", "."))


def _not_one(numeral: str) -> str:
    return f"{numeral!r} is not one number (a date, a version or an identifier?)"


_TOO_LARGE = (
    f"a number with more than {MAX_NUMERAL_DIGITS} digits, or beyond 10**±{MAX_NUMERAL_DIGITS}, "
    "is not read"
)


def _plain(value: Decimal) -> str:
    return format(value, "f")
