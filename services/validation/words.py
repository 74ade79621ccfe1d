"""English number words: "twelve", "one hundred and five", "three point five", "minus two".

Only the cardinal numbers a model writes when it spells a value out; anything that does not
read as one number (for example "one two") is rejected rather than guessed."""

from __future__ import annotations

import re
from decimal import Decimal

# fmt: off
_UNITS = {w: i for i, w in enumerate([
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen",
])}
_TENS = {w: 10 * i for i, w in enumerate([
    "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
], start=2)}
# fmt: on
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_OPENERS = ("start", "hundred", "scale")
_SIGNS = {"minus", "negative"}
_JOINERS = {"and"}
VOCABULARY = frozenset([*_UNITS, *_TENS, *_SCALES, "hundred", "point", *_SIGNS, *_JOINERS])

_IRREGULAR_ORDINALS = {
    "one": "first",
    "three": "third",
    "five": "fifth",
    "eight": "eighth",
    "nine": "ninth",
    "twelve": "twelfth",
}
# "second" is left out: after a number it is far more often the unit ("five second delay").
_ORDINALS = [
    _IRREGULAR_ORDINALS.get(w, w + "th")
    for w in [*_UNITS, "hundred", *_SCALES]
    if w not in ("zero", "two")
] + [w[:-1] + "ieth" for w in _TENS]


def _alternation(words: list[str]) -> str:
    longest_first = sorted(words, key=len, reverse=True)
    return rf"\b(?:{'|'.join(longest_first)})\b"


CARDINAL_WORDS = frozenset([*_UNITS, *_TENS, *_SCALES, "hundred"])
"""The words that name a number ("and", "point", "minus" only join or sign them)."""

NUMBER_WORD_PATTERN = _alternation(sorted(CARDINAL_WORDS))
"""A regex for one cardinal number word, as a whole word (for callers looking for shapes
such as "one or two")."""

ORDINAL_WORD_PATTERN = _alternation(_ORDINALS)
"""A regex for one ordinal number word ("third", "twentieth", "hundredth"), whole word."""

_WORD = re.compile(r"[a-z]+", re.IGNORECASE)
_ONLY_WORDS = re.compile(r"[a-z][a-z\s,-]*", re.IGNORECASE)


def words_to_number(text: str) -> Decimal | None:
    """The value of `text` if it consists of number words only, else None."""
    if not _ONLY_WORDS.fullmatch(text.strip()):
        return None
    return _read([w.lower() for w in _WORD.findall(text)])


def find_number_words(text: str) -> list[Decimal]:
    """Every spelled-out number in prose, in order.

    A lone "one" is skipped: in prose it is a pronoun ("no one knows") far more often than a
    value."""
    runs: list[list[str]] = [[]]
    for word in (w.lower() for w in _WORD.findall(text)):
        if word in VOCABULARY and (word not in _JOINERS or runs[-1]):
            runs[-1].append(word)
        elif runs[-1]:
            runs.append([])
    values: list[Decimal] = []
    for run in runs:
        while run and run[-1] in _JOINERS:
            run.pop()
        if run and run != ["one"]:
            value = _read(run)
            if value is not None:
                values.append(value)
    return values


def _read(words: list[str]) -> Decimal | None:
    negative = words[0] in _SIGNS
    if negative:
        words = words[1:]
    if "point" in words:
        cut = words.index("point")
        whole, fraction = words[:cut], words[cut + 1 :]
        digits = [_UNITS.get(w) for w in fraction]
        if not fraction or any(d is None or d > 9 for d in digits):
            return None
        integer = _read_integer(whole) if whole else 0
        if integer is None:
            return None
        value = Decimal(f"{integer}.{''.join(str(d) for d in digits)}")
    else:
        integer = _read_integer(words)
        if integer is None:
            return None
        value = Decimal(integer)
    return -value if negative else value


def _read_integer(words: list[str]) -> int | None:
    """Cardinal words to an int, with a small grammar so that "one two" is not read as 3."""
    total, current, last = 0, 0, "start"
    for word in words:
        if word in _JOINERS and last in ("hundred", "scale"):
            continue
        if word in _UNITS:
            value = _UNITS[word]
            # a digit may follow a tens word ("twenty one"), a teen may not ("twenty twelve")
            allowed = (*_OPENERS, "ten") if value < 10 else _OPENERS
            if last not in allowed or (value == 0 and len(words) > 1):
                return None
            current += value
            last = "unit"
        elif word in _TENS:
            if last not in _OPENERS:
                return None
            current += _TENS[word]
            last = "ten"
        elif word == "hundred":
            if last != "unit" or current >= 100:
                return None
            current *= 100
            last = "hundred"
        elif word in _SCALES:
            if last in ("start", "scale"):
                return None
            total += current * _SCALES[word]
            current, last = 0, "scale"
        else:
            return None
    return None if last == "start" else total + current
