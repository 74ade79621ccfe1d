"""Table-driven coercion: each row is (raw output, desired type, expected value or error)."""

from __future__ import annotations

from typing import Any

import pytest
from postel.messages.limits import MAX_LIST_ITEMS, MAX_NUMERAL_DIGITS, MAX_SCALAR_CHARS
from postel.messages.types import TypeSpec
from postel.services.validation import CoercionError, coerce


class Fails:
    """An expected CoercionError whose message contains `substring`."""

    def __init__(self, substring: str) -> None:
        self.substring = substring

    def __repr__(self) -> str:
        return f"Fails({self.substring!r})"


FLOATS = [
    ("$1,299.99", 1299.99),
    ("1.299,99 €", 1299.99),
    ("-$5.00", -5.0),
    ("$-5", -5.0),
    ("(5.00)", -5.0),
    ("1 299,99", 1299.99),
    ("1'299.99", 1299.99),
    ("EUR 1.299,99", 1299.99),
    ("5 USD", 5.0),
    ("45%", 0.45),
    ("12.5 %", 0.125),
    ("The total is $165.50.", 165.5),
    ("Answer: 7", 7.0),
    ("**42**", 42.0),
    ('"3.14"', 3.14),
    ("```\n42\n```", 42.0),
    ("$1.2 million", 1_200_000.0),
    ("1.5e-3", 0.0015),
    (".5", 0.5),
    ("1,5", 1.5),
    ("1,234", 1234.0),
    ("1.234", 1.234),
    ("$5 (five dollars)", 5.0),
    ("twelve", 12.0),
    ("one hundred and five", 105.0),
    ("three point five", 3.5),
    ("minus two", -2.0),
    ("I think there are twelve.", 12.0),
    (3, 3.0),
    (2.5, 2.5),
    ("maybe", Fails("expected float, got 'maybe': not a number")),
    ("", Fails("not a number")),
    ("No one knows", Fails("not a number")),
    ("3 apples and 4 pears", Fails("ambiguous: several different numbers (3, 4)")),
    ("2024-01-05", Fails("ambiguous")),
    ("one two", Fails("not a number")),
    (True, Fails("a boolean is not a number")),
    (float("nan"), Fails("not a finite number")),
    ([1.0], Fails("not a number")),
]

INTS = [
    ("12", 12),
    ("12.0", 12),
    ("1,000", 1000),
    ("12345678901234567890", 12345678901234567890),
    ("twenty-one", 21),
    ("two thousand three hundred and forty five", 2345),
    ("100%", 1),
    ("-3", -3),
    (7.0, 7),
    ("12.5", Fails("expected int, got '12.5': 12.5 is not a whole number")),
    ("45%", Fails("not a whole number")),
    ("several", Fails("not a number")),
]

BOOLS = [
    ("yes", True),
    ("No.", False),
    ("TRUE", True),
    ("false", False),
    ("y", True),
    ("n", False),
    ("1", True),
    ("0", False),
    ("on", True),
    ("off", False),
    ("correct", True),
    ("Incorrect", False),
    ("**Yes**", True),
    ("Yes, the invoice is paid.", True),
    ("No, it is not correct.", False),
    (True, True),
    (0, False),
    ("unknown", Fails("expected bool, got 'unknown': an uncertain answer")),
    ("maybe", Fails("an uncertain answer is not yes or no")),
    ("n/a", Fails("an uncertain answer")),
    ("N/A", Fails("an uncertain answer")),
    ("None", Fails("an uncertain answer")),
    ("I'm not sure", Fails("uncertain")),
    ("Yes and no", Fails("ambiguous: says both yes and no")),
    ("it is", Fails("not a yes/no answer")),
    (2, Fails("not a yes/no answer")),
    ("Negative", False),
    ("No - it is not.", False),
    ("Correct, it matches.", True),
    ("No idea", Fails("an uncertain answer")),
    ("No problem", Fails("not a yes/no answer")),
    ("0.5", Fails("not a yes/no answer")),
    ("Negative for COVID-19", Fails("not a yes/no answer")),
    ("false positive", Fails("not a yes/no answer")),
    ("-1", Fails("not a yes/no answer")),
    ("Right?", Fails("a question is not a yes/no answer")),
    ("Yes?", Fails("a question")),
    ("on hold", Fails("not a yes/no answer")),
    ("Yes it is", Fails("not a yes/no answer")),
    (0.5, Fails("not a yes/no answer")),
    ("yes " * MAX_SCALAR_CHARS, Fails(f"over {MAX_SCALAR_CHARS} characters")),
]

STRINGS = [
    ("  Paris  ", "Paris"),
    ('"Paris"', "Paris"),
    ("```\nprint('hi')\n```", "print('hi')"),
    ("```python\nx = 1\n```", "x = 1"),
    ("Use this:\n```\nx = 1\n```\nThen run it.", "Use this:\n```\nx = 1\n```\nThen run it."),
    ("It's fine", "It's fine"),
    (42, "42"),
    (False, "false"),
    ({"a": 1}, '{"a": 1}'),
    ("", ""),
]

LISTS = [
    ("```json\n[1.5, 2, 3,]\n```", "list[float]", [1.5, 2.0, 3.0]),
    ('["a", "b"]', "list[str]", ["a", "b"]),
    ("Here you go: ['x', 'y']", "list[str]", ["x", "y"]),
    ('{"names": ["Ann", "Bo"]}', "list[str]", ["Ann", "Bo"]),
    ("- apples\n- pears\n* plums", "list[str]", ["apples", "pears", "plums"]),
    ("Names:\n1. Alice\n2) Bob", "list[str]", ["Alice", "Bob"]),
    ("- $5\n- $1,299.99", "list[float]", [5.0, 1299.99]),
    ("a, b, and c", "list[str]", ["a", "b", "c"]),
    ("1,2,3", "list[int]", [1, 2, 3]),
    ("1,299.99, 5", "list[float]", [1299.99, 5.0]),
    ("red; green", "list[str]", ["red", "green"]),
    ("Alice\nBob", "list[str]", ["Alice", "Bob"]),
    ("yes, no, yes", "list[bool]", [True, False, True]),
    ("[[1, 2], [3]]", "list[list[int]]", [[1, 2], [3]]),
    ("42", "list[int]", [42]),
    ("", "list[str]", []),
    ([1, "2"], "list[int]", [1, 2]),
    ("1, two, 3.5", "list[int]", Fails("at $[2]: expected int, got '3.5'")),
    ("- 1\n- lots", "list[float]", Fails("at $[1]: expected float, got 'lots'")),
    ('{"a": [1], "b": [2]}', "list[int]", Fails("a JSON object, not a list")),
]

DICTS = [
    ('{"a": 1}', {"a": 1}),
    ("```json\n{'a': 1, b: 2, // note\n 'c': [1,2,],}\n```", {"a": 1, "b": 2, "c": [1, 2]}),
    ('Sure! {"total": 5} Hope that helps.', {"total": 5}),
    ({"x": None}, {"x": None}),
    ("[1, 2]", Fails("not a JSON object but a list")),
    ("no json here", Fails("no JSON value found")),
]


def _check(raw: Any, spec: TypeSpec, expected: Any) -> None:
    if isinstance(expected, Fails):
        with pytest.raises(CoercionError) as caught:
            coerce(raw, spec)
        assert expected.substring in str(caught.value)
    else:
        result = coerce(raw, spec)
        assert result == expected
        assert type(result) is type(expected)


@pytest.mark.parametrize(("raw", "expected"), FLOATS)
def test_float(raw: Any, expected: Any) -> None:
    _check(raw, TypeSpec.parse("float"), expected)


@pytest.mark.parametrize(("raw", "expected"), INTS)
def test_int(raw: Any, expected: Any) -> None:
    _check(raw, TypeSpec.parse("int"), expected)


@pytest.mark.parametrize(("raw", "expected"), BOOLS)
def test_bool(raw: Any, expected: Any) -> None:
    _check(raw, TypeSpec.parse("bool"), expected)


@pytest.mark.parametrize(("raw", "expected"), STRINGS)
def test_str(raw: Any, expected: Any) -> None:
    _check(raw, TypeSpec.parse("str"), expected)


@pytest.mark.parametrize(("raw", "spelling", "expected"), LISTS)
def test_list(raw: Any, spelling: str, expected: Any) -> None:
    _check(raw, TypeSpec.parse(spelling), expected)


@pytest.mark.parametrize(("raw", "expected"), DICTS)
def test_dict(raw: Any, expected: Any) -> None:
    _check(raw, TypeSpec.parse("dict"), expected)


@pytest.mark.parametrize(
    ("raw", "locale", "expected"),
    [
        ("1.234", "de-DE", 1234.0),
        ("1,234", "fr_FR.UTF-8", 1.234),
        ("1.234", "de-CH", 1.234),
        ("1,234", "en-US", 1234.0),
        ("1.299,99", "en-US", 1299.99),
    ],
)
def test_locale_settles_the_single_separator_case(raw: str, locale: str, expected: float) -> None:
    assert coerce(raw, TypeSpec.parse("float"), locale=locale) == expected


def test_none_is_never_a_value() -> None:
    with pytest.raises(CoercionError, match="no value"):
        coerce(None, TypeSpec.parse("str"))
