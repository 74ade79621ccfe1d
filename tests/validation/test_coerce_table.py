"""Table-driven coercion: each row is (raw output, desired type, expected value or error)."""

from __future__ import annotations

import decimal
import importlib
import json
import re
from typing import Any

import pytest
from postel.messages.limits import MAX_LIST_ITEMS, MAX_NUMERAL_DIGITS, MAX_SCALAR_CHARS
from postel.messages.types import TypeSpec
from postel.services.validation import CoercionError, coerce

TOO_LONG = "x 5 " * (MAX_SCALAR_CHARS // 4 + 1)


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
    ("2024-01-05", Fails("'2024-01-05' looks like a date")),
    ("one two", Fails("not a number")),
    (True, Fails("a boolean is not a number")),
    (float("nan"), Fails("not a finite number")),
    ([1.0], Fails("not a number")),
    # magnitudes, percent in words, other groupings
    ("5k", 5_000.0),
    ("$5M", 5_000_000.0),
    ("1.2B", 1_200_000_000.0),
    ("1.2bn", 1_200_000_000.0),
    ("$5m", 5_000_000.0),
    ("$5MM", 5_000_000.0),
    ("5 lakh", 500_000.0),
    ("5 percent", 0.05),
    ("12.5 per cent", 0.125),
    ("1,00,000", 100_000.0),
    ("₹1,00,00,000.50", 10_000_000.5),
    ("1_000.5", 1000.5),
    ("5 000", 5000.0),
    ("1 234 567,89", 1234567.89),
    ("($1,234.56)", -1234.56),
    ("about 5", 5.0),
    ("~5", 5.0),
    ("5 m", 5.0),
    ("10 mm", 10.0),
    ("0x1F", 31.0),
    ("5m", Fails("'m' may be a unit or a magnitude")),
    # not one number: refused with the reason
    ("12.5.2024", Fails("'12.5.2024' is not one number (a date, a version")),
    ("1.2.3", Fails("is not one number")),
    ("v1.2.3", Fails("looks like a version")),
    ("555-123-4567", Fails("looks like a date, a phone number or an identifier")),
    ("call 555 123", Fails("looks like a phone number")),
    ("Reach us at 555 123", Fails("digits separated by spaces inside text")),
    ("3/4", Fails("'3/4' is a fraction or a date")),
    ("12:30", Fails("looks like a time or a ratio")),
    ("<5", Fails("'<5' states a bound, not a value")),
    ("≥ 5", Fails("states a bound")),
    ("at least 5", Fails("'at least 5' states a bound")),
    ("more than five", Fails("states a bound")),
    ("up to $5", Fails("states a bound")),
    ("5+", Fails("states a bound")),
    ("5 or more", Fails("states a bound")),
    ("5-10", Fails("'5-10' is a range or several alternatives")),
    ("5 to 10", Fails("is a range")),
    ("$5 - $10", Fails("is a range")),
    ("between 5 and 10", Fails("'between 5 and 10' is a range")),
    ("one or two", Fails("'one or two' is a range or several alternatives")),
    ("3rd", Fails("'3rd' is an ordinal")),
    ("twenty-first", Fails("is an ordinal or a fraction")),
    ("Items (5)", Fails("'(5)' is a number in parentheses inside text")),
    ("0xZZ", Fails("'0xZZ' is not a hexadecimal, octal or binary number")),
    ("1,234,5", Fails("is not one number")),
    ("2*3*4", Fails("several different numbers (2, 3, 4)")),
    # non-finite, huge, tiny, long
    ("1e999", Fails("too large for a float (not finite)")),
    ("-1e999", Fails("too large for a float")),
    ("1e-400", Fails("too small for a float (it would read as 0)")),
    ("1e1000000", Fails(f"more than {MAX_NUMERAL_DIGITS} digits")),
    ("NaN", Fails("not a number")),
    ("Infinity", Fails("not a number")),
    (float("inf"), Fails("not a finite number")),
    (TOO_LONG, Fails(f"an answer over {MAX_SCALAR_CHARS} characters is not one number")),
    # read as the nearest number once; refused with the reason now
    ("5²", Fails("'5²' carries a superscript (a power or a footnote?)")),
    ("3 ½", Fails("'3 ½' is a fraction; answer with one decimal number")),
    ("2¾", Fails("is a fraction")),
    ("5-", Fails("'5-' ends in a minus")),
    ("$5- due", Fails("ends in a minus")),
    ("123,4567", Fails("'123,4567': a comma before 4 digits is a decimal comma, a grouping")),
    ("a 5-year plan", 5.0),
    ("12,99", 12.99),
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
    ("5k", 5_000),
    ("$5M", 5_000_000),
    ("1.2B", 1_200_000_000),
    ("1,00,000", 100_000),
    ("1,00,00,000", 10_000_000),
    ("1_000", 1000),
    ("0x1F", 31),
    ("0o17", 15),
    ("0b101", 5),
    ("1e3", 1000),
    ("100 percent", 1),
    ("1e1000", 10**1000),
    ("5 percent", Fails("not a whole number")),
    ("Items (5)", Fails("in parentheses inside text")),
    ("3rd", Fails("ordinal")),
    ("1e1001", Fails(f"more than {MAX_NUMERAL_DIGITS} digits")),
    ("1e1000000", Fails(f"more than {MAX_NUMERAL_DIGITS} digits")),
    ("9" * (MAX_NUMERAL_DIGITS + 1), Fails(f"more than {MAX_NUMERAL_DIGITS} digits")),
    ("0x" + "F" * (MAX_NUMERAL_DIGITS + 1), Fails(f"more than {MAX_NUMERAL_DIGITS} digits")),
    (10 ** (MAX_NUMERAL_DIGITS + 1), Fails(f"more than {MAX_NUMERAL_DIGITS} digits")),
    (1e300, int(1e300)),
    ("1.000", Fails("ambiguous: '1.000' is a decimal, or a whole number with a thousands")),
    ("12.000", Fails("thousands separator (12000)")),
    ("The count is 1.000.", Fails("ambiguous")),
    ("1234.000", 1234),
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
    ("**Paris**", "Paris"),
    ("__Paris__", "Paris"),
    ("*Paris*", "Paris"),
    ("_Paris_", "Paris"),
    ("***Paris***", "Paris"),
    ("`Paris`", "Paris"),
    ("``Paris``", "Paris"),
    ("```Paris```", "Paris"),
    ('"**Paris**"', "Paris"),
    ("**'Paris'**", "Paris"),
    ("**Paris** is the capital.", "**Paris** is the capital."),
    ("The capital is **Paris**", "The capital is **Paris**"),
    ("**a** and **b**", "**a** and **b**"),
    ("_snake_case_", "_snake_case_"),
    ("__init__", "__init__"),
    ("2*3*4", "2*3*4"),
    ('"a" and "b"', '"a" and "b"'),
    ("'It's fine'", "It's fine"),
    (float("nan"), Fails("not a finite number")),
    ({"a": [1, float("inf")]}, Fails("at $.a[1]: expected str: inf is not a finite number")),
    (10 ** (MAX_NUMERAL_DIGITS + 1), Fails("digits is not read")),
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
    ("1,000", "list[int]", Fails("ambiguous: one number with thousands separators")),
    ("1,234,567", "list[float]", Fails("thousands separators")),
    ("1,000, 2,000", "list[int]", [1000, 2000]),
    ("1,000,2,000", "list[int]", Fails("numbers with thousands separators, or several")),
    ("1,5", "list[int]", Fails("one number with a decimal comma (1.5) or two numbers?")),
    ("1,5", "list[float]", Fails("decimal comma")),
    # a number with thousands separators inside an item is one item, however it is grouped
    ("1.299,99 €", "list[str]", ["1.299,99 €"]),
    ("1,299.99 €", "list[str]", ["1,299.99 €"]),
    ("1.299,99 €, 5 €", "list[str]", ["1.299,99 €", "5 €"]),
    ("rent 1.234.567,89 EUR,fee 3 EUR", "list[str]", ["rent 1.234.567,89 EUR", "fee 3 EUR"]),
    ("Smith, John", "list[str]", Fails("one name written 'Last, First', or two items?")),
    ("Paris, London, Rome", "list[str]", ["Paris", "London", "Rome"]),
    ("Here are the items: apples, bananas", "list[str]", ["apples", "bananas"]),
    ("Here are the numbers: 4, 5, 6", "list[int]", [4, 5, 6]),
    ("12:30, 13:00", "list[str]", ["12:30", "13:00"]),
    ("none", "list[str]", []),
    ("None.", "list[int]", []),
    ("**Nothing**", "list[str]", []),
    ("N/A", "list[str]", Fails("an unknown answer is not a list; answer [] when there are none")),
    ("unknown", "list[int]", Fails("an unknown answer is not a list")),
    ("[1e999]", "list[float]", Fails("at $[0]: expected list[float]: inf is not a finite")),
    ("[NaN]", "list[str]", Fails("at $[0]")),
    ([float("nan")], "list[str]", Fails("at $[0]: expected str: nan is not a finite number")),
    ("[" * 100 + "]" * 100, "list[str]", Fails("nested deeper than 64 levels")),
    ("['a', " * 100, "list[str]", Fails("nested deeper than 64 levels")),
    (",".join(["1"] * (MAX_LIST_ITEMS + 1)), "list[int]", Fails(f"at most {MAX_LIST_ITEMS}")),
    ([1] * (MAX_LIST_ITEMS + 1), "list[int]", Fails(f"at most {MAX_LIST_ITEMS}")),
]

DICTS = [
    ('{"a": 1}', {"a": 1}),
    ("```json\n{'a': 1, b: 2, // note\n 'c': [1,2,],}\n```", {"a": 1, "b": 2, "c": [1, 2]}),
    ('Sure! {"total": 5} Hope that helps.', {"total": 5}),
    ({"x": None}, {"x": None}),
    ("[1, 2]", Fails("not a JSON object but a list")),
    ("no json here", Fails("no JSON value found")),
    ('{"a": NaN}', Fails("at $.a: expected dict (a JSON object): nan is not a finite number")),
    ('{"a": [1, Infinity]}', Fails("at $.a[1]")),
    ('{"a": 1e999}', Fails("at $.a: expected dict (a JSON object): inf is not a finite")),
    ("{'a': 1e999,}", Fails("inf is not a finite number")),
    ({"x": float("nan")}, Fails("at $.x")),
    ('{"a": ' + "9" * 5000 + "}", Fails(f"more than {MAX_NUMERAL_DIGITS} digits")),
    ('{"a": ' * 100 + "1" + "}" * 100, Fails("nested deeper than 64 levels")),
    ('{"a": ' * 5000 + "1" + "}" * 5000, Fails("nested deeper than 64 levels")),
    ("{'a': " * 1000, Fails("nested deeper than 64 levels")),
    ("{'a': 1, " + "x" * 30_000, Fails("answers over 10000 characters are not repaired")),
    ("{'a': " + "(5 " * 100, Fails("nested deeper than 64 levels")),
]


def short_id(value: Any) -> str | None:
    """Test ids for long inputs, which pytest would otherwise spell out in full."""
    shown = repr(value)
    return shown[:40] + "..." if len(shown) > 40 else None


def _check(raw: Any, spec: TypeSpec, expected: Any) -> None:
    if isinstance(expected, Fails):
        with pytest.raises(CoercionError) as caught:
            coerce(raw, spec)
        assert expected.substring in str(caught.value)
    else:
        result = coerce(raw, spec)
        assert result == expected
        assert type(result) is type(expected)


@pytest.mark.parametrize(("raw", "expected"), FLOATS, ids=short_id)
def test_float(raw: Any, expected: Any) -> None:
    _check(raw, TypeSpec.parse("float"), expected)


@pytest.mark.parametrize(("raw", "expected"), INTS, ids=short_id)
def test_int(raw: Any, expected: Any) -> None:
    _check(raw, TypeSpec.parse("int"), expected)


@pytest.mark.parametrize(("raw", "expected"), BOOLS, ids=short_id)
def test_bool(raw: Any, expected: Any) -> None:
    _check(raw, TypeSpec.parse("bool"), expected)


@pytest.mark.parametrize(("raw", "expected"), STRINGS, ids=short_id)
def test_str(raw: Any, expected: Any) -> None:
    _check(raw, TypeSpec.parse("str"), expected)


@pytest.mark.parametrize(("raw", "spelling", "expected"), LISTS, ids=short_id)
def test_list(raw: Any, spelling: str, expected: Any) -> None:
    _check(raw, TypeSpec.parse(spelling), expected)


@pytest.mark.parametrize(("raw", "expected"), DICTS, ids=short_id)
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
        ("123,4567", "de-DE", 123.4567),
    ],
)
def test_locale_settles_the_single_separator_case(raw: str, locale: str, expected: float) -> None:
    assert coerce(raw, TypeSpec.parse("float"), locale=locale) == expected


@pytest.mark.parametrize(
    ("raw", "spelling", "locale", "expected"),
    [
        ("1.000", "int", "de-DE", 1000),
        ("1,000", "int", "de-DE", Fails("ambiguous: '1,000' is a decimal")),
        ("1,5", "list[int]", "en-US", [1, 5]),
        ("1,5", "list[float]", "de-DE", [1.5]),
        ("1,5", "list[int]", "de-DE", Fails("at $[0]: expected int, got '1,5'")),
        ("1,000,2,000", "list[int]", "en-US", Fails("thousands separators")),
    ],
)
def test_locale_settles_decimal_commas_in_ints_and_lists(
    raw: str, spelling: str, locale: str, expected: Any
) -> None:
    spec = TypeSpec.parse(spelling)
    if isinstance(expected, Fails):
        with pytest.raises(CoercionError, match=re.escape(expected.substring)):
            coerce(raw, spec, locale=locale)
    else:
        assert coerce(raw, spec, locale=locale) == expected


def test_ints_at_the_digit_limit_stay_serialisable() -> None:
    value = coerce(f"1e{MAX_NUMERAL_DIGITS}", TypeSpec.parse("int"))
    assert json.loads(json.dumps(value)) == 10**MAX_NUMERAL_DIGITS


def test_an_unforeseen_error_is_still_a_coercion_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def overflowing(*_: Any) -> float:
        raise decimal.Overflow("unforeseen")

    # the package's `coerce` function shadows its module of the same name
    module = importlib.import_module("postel.services.validation.coerce")
    monkeypatch.setitem(module._COERCERS, "float", overflowing)
    with pytest.raises(CoercionError, match=r"cannot be read \(Overflow\)"):
        coerce("5", TypeSpec.parse("float"))


def test_none_is_never_a_value() -> None:
    with pytest.raises(CoercionError, match="no value"):
        coerce(None, TypeSpec.parse("str"))
