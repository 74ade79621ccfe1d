"""Reading JSON values and lists out of model output.

JSON syntax slop (single quotes, trailing commas, unquoted keys, comments, a cut-off tail,
prose around the object) is repaired by `json_repair`, for answers up to
MAX_JSON_REPAIR_CHARS. JSON nested deeper than MAX_JSON_DEPTH is refused before parsing.
Lists are also read from markdown bullets, numbered lines and comma-separated text.

Decisions for list answers: "none", "nothing", "empty" (and "no items", "none found") are
the empty list; "N/A", "unknown", "null" are refused (an unknown answer is not an empty
one); a bare "1,000", "1,234,567" or "1,000,2,000" (a group of three digits after a bare
comma) is refused as ambiguous (numbers with thousands separators, or several numbers?)
rather than split into [1, 0]; two numbers joined by a bare comma ("1,5") are refused too
(1.5 with a decimal comma, or two numbers?) unless the locale settles it: a decimal-point
locale reads two numbers, a decimal-comma one reads one. Inside a longer item a number with
thousands separators is never split ("1.299,99 €", "1,299.99 €" are one item each). A single
"Last, First" pair of capitalised words ("Smith, John") is refused (one name or two items?);
a lead-in before a colon on one line ("Here are the items: apples, bananas") is dropped."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import json_repair
from postel.messages.limits import (
    MAX_JSON_DEPTH,
    MAX_JSON_REPAIR_CHARS,
    MAX_LIST_ITEMS,
    MAX_NUMERAL_DIGITS,
)
from postel.services.validation.errors import CoercionError
from postel.services.validation.numbers import decimal_separator, within_digit_limit
from postel.services.validation.text import clean_scalar, strip_fences, strip_quotes

_BULLET = re.compile(r"^\s*(?:[-*•+–]|\d+[.)]|\(\d+\))\s+(?P<item>.*\S)\s*$")
_OUTSIDE_STRING = re.compile(r'["\[\]{}()]')
_INSIDE_STRING = re.compile(r'["\\]')
_BRACKET = re.compile(r"[\[\]{}()]")
_EMPTY_LIST_ANSWERS = frozenset({"none", "nothing", "empty", "no items", "none found", "(none)"})
_UNKNOWN_LIST_ANSWERS = frozenset(
    {"n/a", "na", "unknown", "not applicable", "null", "nil", "undefined", "not known"}
)
_TOO_DEEP = f"JSON nested deeper than {MAX_JSON_DEPTH} levels is not read"
_SHORT_ANSWER = 40  # longer than any of the answers above, with quotes and emphasis
_THOUSANDS = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_BARE_NUMBERS = re.compile(r"[-+]?\d+(?:,[-+]?\d+)+")
# one number with thousands separators and a decimal part: 1.299,99 or 1,299.99 (1,299 too)
_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:(?:\.\d{3})+,\d+|(?:,\d{3})+(?:\.\d+)?)(?![\d])")
_NAME_PAIR = re.compile(r"[A-Z][a-z'’-]+,\s+[A-Z][a-z'’-]+")
# "Here are the items: a, b": several words without digits or commas, then a colon
_LEAD_WORDS = re.compile(r"[A-Za-z][^,\d\s]*(?:\s+[^,\d\s]+)+")
_AS_ARRAY = "answer with a JSON array"


def load_json(text: str, *, expected: str) -> Any:
    """The JSON value in `text`, repaired if needed; nested no deeper than MAX_JSON_DEPTH and
    holding finite numbers only (see check_json_values)."""
    body = strip_fences(text)
    try:
        value = json.loads(body, parse_int=_bounded_int)
    except _NumeralTooLong:
        raise CoercionError.mismatch(
            expected, text, f"a number with more than {MAX_NUMERAL_DIGITS} digits is not read"
        ) from None
    except RecursionError:
        raise CoercionError.mismatch(expected, text, _TOO_DEEP) from None
    except ValueError as error:
        value = _repaired(body, text, str(error), expected)
    check_json_values(value, expected=expected)
    return value


class _NumeralTooLong(Exception):
    """An int literal in JSON beyond MAX_NUMERAL_DIGITS (not a ValueError: the JSON is fine,
    so there is nothing to repair)."""


def _bounded_int(literal: str) -> int:
    if len(literal.lstrip("-")) > MAX_NUMERAL_DIGITS:
        raise _NumeralTooLong
    return int(literal)


def _repaired(body: str, text: str, problem: str, expected: str) -> Any:
    if len(body) > MAX_JSON_REPAIR_CHARS:
        raise CoercionError.mismatch(
            expected,
            text,
            f"not valid JSON ({problem}), and answers over {MAX_JSON_REPAIR_CHARS} characters "
            "are not repaired",
        )
    # the repairing parser recurses in Python: refuse deep text before it starts
    if json_nesting(body) > MAX_JSON_DEPTH:
        raise CoercionError.mismatch(expected, text, _TOO_DEEP)
    try:
        repaired = json_repair.loads(body)
    except (RecursionError, ValueError):
        raise CoercionError.mismatch(expected, text, "no JSON value could be read") from None
    # json_repair answers "" when it finds no JSON at all
    if repaired == "" and body not in ('""', "''"):
        raise CoercionError.mismatch(expected, text, "no JSON value found")
    return repaired


def json_nesting(text: str) -> int:
    """The deepest nesting of `[`, `{` and `(` outside double-quoted strings (the repairing
    parser reads parentheses as containers too), in one pass that stops counting past
    MAX_JSON_DEPTH. After an unterminated string every bracket counts: a repairing parser
    may read them as structure."""
    depth = deepest = position = 0
    pattern, opened_at = _OUTSIDE_STRING, -1
    while deepest <= MAX_JSON_DEPTH:
        found = pattern.search(text, position)
        if found is None:
            if opened_at < 0:
                return deepest
            pattern, position, opened_at = _BRACKET, opened_at + 1, -1
            continue
        char, position = found.group(), found.end()
        if opened_at >= 0:
            if char == "\\":
                position += 1
            else:
                pattern, opened_at = _OUTSIDE_STRING, -1
        elif char == '"':
            pattern, opened_at = _INSIDE_STRING, found.start()
        elif char in "[{(":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def check_json_values(value: Any, *, expected: str) -> None:
    """Refuse, anywhere inside a JSON value, non-finite numbers (NaN, Infinity, `1e999` read
    as inf), ints beyond MAX_NUMERAL_DIGITS and nesting deeper than MAX_JSON_DEPTH; the error
    names where. Iterative, so no depth can exhaust the stack."""
    pending: list[tuple[Any, str, int]] = [(value, "", 0)]
    while pending:
        item, path, depth = pending.pop()
        problem = None
        if isinstance(item, dict | list):
            if depth >= MAX_JSON_DEPTH:
                problem = f"nested deeper than {MAX_JSON_DEPTH} levels"
            elif isinstance(item, dict):
                pending.extend((v, f"{path}.{k}", depth + 1) for k, v in item.items())
            else:
                pending.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(item))
        elif isinstance(item, float) and not math.isfinite(item):
            problem = f"{item} is not a finite number"
        elif isinstance(item, int) and not isinstance(item, bool) and not within_digit_limit(item):
            problem = f"a number with more than {MAX_NUMERAL_DIGITS} digits is not read"
        if problem:
            error = CoercionError(f"expected {expected}: {problem}")
            raise error.within(path) if path else error


def load_object(raw: Any, *, expected: str) -> dict[str, Any]:
    value = load_json(raw, expected=expected) if isinstance(raw, str) else raw
    if not isinstance(value, dict):
        raise CoercionError.mismatch(expected, raw, f"not a JSON object but {_kind(value)}")
    return value


def split_list(raw: Any, *, expected: str, locale: str | None = None) -> list[Any]:
    """The raw items of a list answer, not yet coerced to the item type.

    Accepted: a JSON array (fenced or in prose), an object wrapping exactly one array
    ({"names": [...]}), bullet or numbered lines (intro lines such as "Names:" are dropped),
    one item per line, or items separated by ";" or commas. A single value is a one-item
    list; empty text is an empty list. More than MAX_LIST_ITEMS items are refused."""
    items = _list_items(raw, expected, locale)
    if len(items) > MAX_LIST_ITEMS:
        raise CoercionError.mismatch(
            expected, raw, f"{len(items)} items; a list answer may have at most {MAX_LIST_ITEMS}"
        )
    return items


def _list_items(raw: Any, expected: str, locale: str | None) -> list[Any]:
    if isinstance(raw, list):
        return raw
    if isinstance(raw, dict):
        return _unwrap(raw, raw, expected)
    if not isinstance(raw, str):
        return [raw]
    body = strip_fences(raw)
    if not body:
        return []
    answer = clean_scalar(body).lower().rstrip(".!") if len(body) <= _SHORT_ANSWER else ""
    if answer in _EMPTY_LIST_ANSWERS:
        return []
    if answer in _UNKNOWN_LIST_ANSWERS:
        raise CoercionError.mismatch(
            expected, raw, "an unknown answer is not a list; answer [] when there are none"
        )
    if body[0] in "[{" or ("[" in body and "]" in body):
        value = load_json(body, expected=expected)
        if isinstance(value, list):
            return value
        if isinstance(value, dict):
            return _unwrap(value, raw, expected)
    return _split_text(body, expected, locale)


def _unwrap(value: dict[str, Any], raw: Any, expected: str) -> list[Any]:
    lists = [v for v in value.values() if isinstance(v, list)]
    if len(value) == 1 and len(lists) == 1:
        return lists[0]
    raise CoercionError.mismatch(expected, raw, "a JSON object, not a list")


def _split_text(body: str, expected: str, locale: str | None) -> list[str]:
    lines = [line for line in body.splitlines() if line.strip()]
    bullets = [m["item"] for m in map(_BULLET.match, lines) if m]
    if bullets:
        return [_tidy(item) for item in bullets]
    if len(lines) > 1:
        if lines[0].rstrip().endswith(":"):
            lines = lines[1:]
        return [_tidy(line) for line in lines]
    line = _without_lead_in(lines[0].strip())
    _refuse_ambiguous_line(line.strip(), expected, locale)
    if _BARE_NUMBERS.fullmatch(line.strip()) and decimal_separator(locale) == ",":
        return [line.strip()]  # "1,5" under a decimal-comma locale is one number
    if ";" in line:
        parts = line.split(";")
    elif re.search(r",\s", line):
        # "1,299.99, 5" keeps its thousands separator; bare commas split only without spaces
        parts = re.split(r",\s+", line)
    else:
        parts = _split_bare_commas(line)
    items = [_tidy(part) for part in parts]
    if len(items) > 1:
        items[-1] = re.sub(r"^(?:and|or)\s+", "", items[-1])
    return [item for item in items if item]


def _split_bare_commas(line: str) -> list[str]:
    """`line` split at its commas, except those inside a number with thousands separators
    ("1.299,99 €", "1,299.99 €" are one item each)."""
    kept = [match.span() for match in _GROUPED.finditer(line)]
    parts, start = [], 0
    for at, char in enumerate(line):
        if char == "," and not any(begin < at < end for begin, end in kept):
            parts.append(line[start:at])
            start = at + 1
    return [*parts, line[start:]]


def _without_lead_in(line: str) -> str:
    lead, colon, items = line.partition(":")
    if colon and ":" not in items and items[:1].isspace() and _LEAD_WORDS.fullmatch(lead):
        return items
    return line


def _refuse_ambiguous_line(line: str, expected: str, locale: str | None) -> None:
    """Refuse the one-line answers that read as a list in more than one way."""
    problem = None
    if _THOUSANDS.fullmatch(line):
        problem = "ambiguous: one number with thousands separators, or several numbers?"
    elif _BARE_NUMBERS.fullmatch(line):
        groups = [part.lstrip("+-") for part in line.split(",")]
        if any(len(group) == 3 for group in groups[1:]):
            problem = "ambiguous: numbers with thousands separators, or several numbers?"
        elif len(groups) == 2 and locale is None:
            problem = (
                f"ambiguous: one number with a decimal comma ({groups[0]}.{groups[1]}) or two "
                "numbers?"
            )
    elif _NAME_PAIR.fullmatch(line):
        problem = "ambiguous: one name written 'Last, First', or two items?"
    if problem:
        raise CoercionError.mismatch(expected, line, f"{problem} {_AS_ARRAY}")


def _tidy(item: str) -> str:
    return strip_quotes(item.strip().rstrip(".;").strip())


def _kind(value: Any) -> str:
    names = {list: "a list", str: "text", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number" if isinstance(value, int | float) else "a value")
