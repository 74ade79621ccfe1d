"""A state value as the desired type: the planner's answer by reference (`COMPLETE: ${var}`)
is rows GASL found, not text a model typed, so before coercion each row is read as what the
type asks for:

- a number: a list is counted (its length), except one row holding one value, which is that
  value (`${ans.year}` of one film); an object holding one value (or `value`, `count`) is it;
- yes/no: a list says whether there are rows, except one row holding one value;
- a list: each row as its item type: for text a row's name (the first of name, id, title,
  label, key; or its only field), for a number its value (value, count, or its only field);
  a single value is a one-item list;
- text: the rows' names, comma-separated;
- an object: AGGREGATE rows ({"key", "value"}) as a mapping;
- anything else (a document, a JSON Schema such as a table's rows) as it is.
Coercion then checks the result like any other answer.
"""

from __future__ import annotations

from typing import Any

from postel.messages.types import TypeSpec

NAME_FIELDS = ("name", "id", "title", "label", "key")
VALUE_FIELDS = ("value", "count")
_NUMBERS = frozenset({"int", "float"})


def from_state(value: Any, spec: TypeSpec) -> Any:
    kind = spec.kind
    if kind in _NUMBERS:
        if isinstance(value, list):
            return _one(value) if _holds_one(value) else len(value)
        return _item(value, spec)
    if kind == "bool":
        if isinstance(value, list):
            return _one(value) if _holds_one(value) else bool(value)
        return _item(value, spec)
    if kind == "list":
        assert spec.items is not None  # guaranteed by TypeSpec's own validation
        rows = value if isinstance(value, list) else ([] if value is None else [value])
        return [_item(row, spec.items) for row in rows]
    if kind == "str" and isinstance(value, list):
        return ", ".join(str(_item(row, spec)) for row in value)
    if kind == "dict" and isinstance(value, list) and _aggregated(value):
        return {str(row["key"]): row["value"] for row in value}
    return value


def _holds_one(rows: list[Any]) -> bool:
    return len(rows) == 1 and _single(rows[0]) is not None


def _one(rows: list[Any]) -> Any:
    return _single(rows[0])


def _single(row: Any) -> Any:
    """The one value a row holds (a scalar, or an object of one field), else None."""
    if isinstance(row, dict):
        return next(iter(row.values())) if len(row) == 1 else None
    return None if isinstance(row, list) else row


def _item(row: Any, spec: TypeSpec) -> Any:
    if not isinstance(row, dict):
        return row
    if len(row) == 1:
        return next(iter(row.values()))
    if spec.kind == "str":
        return next((row[name] for name in NAME_FIELDS if name in row), row)
    if spec.kind in _NUMBERS or spec.kind == "bool":
        return next((row[name] for name in VALUE_FIELDS if name in row), row)
    return row


def _aggregated(rows: list[Any]) -> bool:
    return bool(rows) and all(isinstance(r, dict) and set(r) == {"key", "value"} for r in rows)
