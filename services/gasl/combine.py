"""Commands that combine the rows of variables without the graph or a model: JOIN, MERGE,
COMPARE and the computed ADD_FIELD. A field holding a list matches on any of its elements,
as conditions do; rows that are plain values (ids) are their own `id`."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from postel.services.gasl import ast
from postel.services.gasl.budget import Deadline
from postel.services.gasl.conditions import MISSING, as_value, evaluate, lookup, operand_value
from postel.services.gasl.errors import BudgetSpent


def row_of(value: Any) -> dict[str, Any]:
    """A row as a dict: a plain value (an id, a number) is `{"id": value}`."""
    return value if isinstance(value, dict) else {"id": value}


def keys_of(row: Any, path: tuple[str, ...]) -> list[Hashable]:
    """The values of a field that a row can be matched on (each element of a list)."""
    value = lookup(row_of(row), path)
    if value is MISSING or value is None:
        return []
    values = value if isinstance(value, list) else [value]
    return [_hashable(v) for v in values]


def _hashable(value: Any) -> Hashable:
    if isinstance(value, dict | list):
        return str(as_value(value) if isinstance(value, dict) else value)
    return value


def join(
    left: Iterable[Any],
    right: list[Any],
    on: tuple[str, ...],
    right_on: tuple[str, ...],
    left_name: str,
    right_name: str,
    deadline: Deadline | None = None,
) -> tuple[list[dict[str, Any]], str | None]:
    """Every pair of rows with an equal key, as `{"key", <left_name>: row, <right_name>:
    row}` (a variable joined with itself: the second is `<name>_2`), in the left's order.
    Pairs grow as the product of the rows, so the deadline is read as they are made; the
    second value is the budget that stopped the join early (the pairs made so far are
    returned), else None."""
    deadline = deadline or Deadline.never()
    if right_name == left_name:
        right_name = f"{right_name}_2"
    by_key: dict[Hashable, list[Any]] = {}
    out: list[dict[str, Any]] = []
    try:
        for row in right:
            deadline.tick()
            for key in dict.fromkeys(keys_of(row, right_on)):
                by_key.setdefault(key, []).append(row)
        for row in left:
            for key in dict.fromkeys(keys_of(row, on)):
                for match in by_key.get(key, ()):
                    deadline.tick()
                    out.append({"key": key, left_name: row, right_name: match})
                    deadline.made(len(out))
    except BudgetSpent as spent:
        return out, spent.cap
    return out, None


def merge(sources: list[Iterable[Any]], on: tuple[str, ...]) -> tuple[list[Any], int]:
    """All rows, one per key: the first row with a key is kept, and later rows with that key
    only add the fields it lacks. Rows without the key are kept whole, deduplicated by
    value. Returns the rows and how many were folded into another."""
    out: list[Any] = []
    position: dict[Hashable, int] = {}
    folded = 0
    for rows in sources:
        for row in rows:
            keys = keys_of(row, on)
            key: Hashable = keys[0] if len(keys) == 1 else _hashable(row)
            if key in position:
                kept = out[position[key]]
                if isinstance(kept, dict) and isinstance(row, dict):
                    out[position[key]] = {**row, **kept}
                folded += 1
                continue
            position[key] = len(out)
            out.append(row)
    return out, folded


def compare(left: Iterable[Any], right: Iterable[Any], on: tuple[str, ...]) -> dict[str, Any]:
    """Which keys both variables have and which only one has, in first-seen order."""
    left_keys = list(dict.fromkeys(k for row in left for k in keys_of(row, on)))
    right_keys = list(dict.fromkeys(k for row in right for k in keys_of(row, on)))
    right_set, left_set = set(right_keys), set(left_keys)
    both = [k for k in left_keys if k in right_set]
    union = len(left_set | right_set)
    return {
        "both": both,
        "only_left": [k for k in left_keys if k not in right_set],
        "only_right": [k for k in right_keys if k not in left_set],
        "left_count": len(left_keys),
        "right_count": len(right_keys),
        "jaccard": round(len(both) / union, 4) if union else 1.0,
    }


def computed(row: Any, value: ast.Operand | ast.Condition) -> Any:
    """The value of ADD_FIELD's expression on one row: an operand's value (None for a field
    the row lacks), or a condition's truth."""
    if isinstance(value, ast.Field | ast.Value | ast.Len):
        found = operand_value(value, row_of(row))
        return None if found is MISSING else found
    return evaluate(value, row_of(row))
