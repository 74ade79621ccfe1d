"""Property tests: whatever way a number is written, it reads back as the same value."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st
from postel.messages.types import TypeSpec
from postel.services.validation import coerce

FLOAT = TypeSpec.parse("float")
INT = TypeSpec.parse("int")
cents = st.decimals(min_value=-(10**9), max_value=10**9, places=2, allow_nan=False)


@given(cents)
def test_us_currency_round_trips(amount: Decimal) -> None:
    sign = "-" if amount < 0 else ""
    assert coerce(f"{sign}${abs(amount):,.2f}", FLOAT) == float(amount)


@given(cents)
def test_german_amounts_round_trip(amount: Decimal) -> None:
    us = f"{abs(amount):,.2f}"
    german = us.replace(",", " ").replace(".", ",").replace(" ", ".")
    sign = "-" if amount < 0 else ""
    assert coerce(f"{sign}{german} €", FLOAT, locale="de-DE") == float(amount)


@given(st.integers(min_value=-(10**30), max_value=10**30))
def test_integers_stay_exact(number: int) -> None:
    assert coerce(str(number), INT) == number
    assert coerce(f"{number:,}", INT) == number


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_repr_of_any_float_reads_back(number: float) -> None:
    assert coerce(repr(number), FLOAT) == number
