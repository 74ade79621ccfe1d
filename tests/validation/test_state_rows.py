"""A state value named by `COMPLETE: ${var}` read as the desired type before coercion."""

from __future__ import annotations

from typing import Any

import pytest
from postel.messages.types import TypeSpec
from postel.services.validation import coerce
from postel.services.validation.rows import from_state

NODES = [
    {"id": "ROBIN LEE", "entity_type": "PERSON", "description": ["an author"]},
    {"id": "BRIANA MORELAND", "entity_type": "PERSON", "description": ["an author"]},
]


@pytest.mark.parametrize(
    ("value", "spelling", "read"),
    [
        (NODES, "list[str]", ["ROBIN LEE", "BRIANA MORELAND"]),
        ([{"name": "Alien", "id": "f1"}], "list[str]", ["Alien"]),
        ([{"key": "A", "value": 3}, {"key": "B", "value": 1}], "list[int]", [3, 1]),
        ([{"key": "A", "value": 3}, {"key": "B", "value": 1}], "dict", {"A": 3, "B": 1}),
        (NODES, "int", 2),
        ([1979], "int", 1979),
        ([{"year": 1979}], "int", 1979),
        (371, "int", 371),
        ([], "int", 0),
        (NODES, "bool", True),
        ([], "bool", False),
        (NODES, "str", "ROBIN LEE, BRIANA MORELAND"),
        ("ROBIN LEE", "list[str]", ["ROBIN LEE"]),
    ],
)
def test_rows_read_as_the_type(value: Any, spelling: str, read: Any) -> None:
    spec = TypeSpec.parse(spelling)
    assert coerce(from_state(value, spec), spec) == read
