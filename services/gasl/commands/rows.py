"""The commands that work on the rows of variables, without the graph or a model: SELECT,
COUNT, AGGREGATE, RANK, SHOW, the computed ADD_FIELD, and JOIN, MERGE and COMPARE (their
matching lives in services/gasl/combine.py). Each takes its rows against the command's
deadline (Scope.taken), so a cut-short command ends `partial` with the rows it took."""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable
from typing import Any

from postel.services.gasl import ast, combine
from postel.services.gasl.commands.table import Handlers
from postel.services.gasl.conditions import MISSING, as_value, bind, lookup
from postel.services.gasl.context import shorten, size_of
from postel.services.gasl.errors import UnusableValue
from postel.services.gasl.outcome import CommandOutcome, cut_short
from postel.services.gasl.scope import Scope

SHOW_ROWS = 5  # what SHOW previews without LIMIT
MAX_SHOW_ROWS = 50


def select_fields(scope: Scope, command: ast.SelectFields) -> CommandOutcome:
    rows = scope.taken(command.source)
    return rows.outcome([project(row, command.fields, command.names) for row in rows])


def select_where(scope: Scope, command: ast.SelectWhere) -> CommandOutcome:
    rows = scope.taken(command.source)
    return rows.outcome(scope.matching(rows, command.where))


def count(scope: Scope, command: ast.Count) -> CommandOutcome:
    if command.where is None:
        n = size_of(scope.value(command.source))
        return CommandOutcome(n, count=n)
    rows = scope.taken(command.source)
    n = len(scope.matching(rows, command.where))
    return rows.outcome(n, count=n)


def aggregate_rows(scope: Scope, command: ast.Aggregate) -> CommandOutcome:
    rows = scope.taken(command.source)
    return rows.outcome(aggregate(rows, command.by, command.fn, command.of))


def rank_rows(scope: Scope, command: ast.Rank) -> CommandOutcome:
    rows = scope.taken(command.source)
    return rows.outcome(rank(rows, command.by, command.descending, command.limit))


def show(scope: Scope, command: ast.Show) -> CommandOutcome:
    rows = scope.rows(command.source)
    shown = min(command.limit or SHOW_ROWS, MAX_SHOW_ROWS)
    preview = rows[:shown]
    if command.fields:
        preview = [project(combine.row_of(row), command.fields, command.names) for row in preview]
    detail: dict[str, Any] = {"shown": len(preview), "total": len(rows)}
    if command.limit is not None and command.limit > MAX_SHOW_ROWS:
        detail["hint"] = f"SHOW previews at most {MAX_SHOW_ROWS} rows"
    return CommandOutcome(preview, count=len(rows), detail=detail)


def add_field(scope: Scope, command: ast.AddField) -> CommandOutcome:
    value = bind(command.value, scope.resolve)
    rows = scope.taken(command.source)
    return rows.outcome(
        [{**combine.row_of(r), command.name: combine.computed(r, value)} for r in rows]
    )


def join(scope: Scope, command: ast.Join) -> CommandOutcome:
    pairs, cut = combine.join(
        scope.rows(command.left),
        scope.rows(command.right),
        command.left_field.path,
        command.right_field.path,
        command.left.name,
        command.right.name,
        scope.deadline,
    )
    return CommandOutcome(pairs, caps_hit=[] if cut is None else [cut])


def merge(scope: Scope, command: ast.Merge) -> CommandOutcome:
    taken = [scope.taken(ref) for ref in command.sources]
    merged, folded = combine.merge(taken, command.on.path)
    return cut_short(CommandOutcome(merged, detail={"folded": folded}), taken)


def compare_sets(scope: Scope, command: ast.CompareSets) -> CommandOutcome:
    taken = [scope.taken(command.left), scope.taken(command.right)]
    compared = combine.compare(*taken, command.on.path)
    return cut_short(CommandOutcome(compared, count=1), taken)


HANDLERS: Handlers = {
    ast.SelectFields: select_fields,
    ast.SelectWhere: select_where,
    ast.Count: count,
    ast.Aggregate: aggregate_rows,
    ast.Rank: rank_rows,
    ast.Show: show,
    ast.AddField: add_field,
    ast.Join: join,
    ast.Merge: merge,
    ast.CompareSets: compare_sets,
}


def project(row: Any, fields: tuple[ast.Field, ...], names: tuple[str, ...]) -> dict[str, Any]:
    """The chosen fields of a row, each under its name (its own by default); null if absent."""
    out: dict[str, Any] = {}
    for f, name in zip(fields, names or tuple(f.name for f in fields), strict=True):
        value = lookup(row, f.path)
        out[name] = None if value is MISSING else value
    return out


def _unwind(value: Any) -> list[Any]:
    if value is MISSING or value is None:
        return []
    return value if isinstance(value, list) else [value]


def _sort_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, value)
    return (1, str(value))


def aggregate(
    rows: Iterable[Any], by: ast.Field | None, fn: str, of: ast.Field | None
) -> list[dict[str, Any]]:
    """Group rows (a list-valued BY field puts a row in each of its groups) and reduce."""
    groups: dict[Any, list[Any]] = {}
    for row in rows:
        keys = [None] if by is None else _unwind(lookup(row, by.path))
        for key in keys:
            key = as_value(key) if isinstance(key, dict) else key
            if not isinstance(key, Hashable):
                assert by is not None  # without BY every row's key is None
                raise UnusableValue(
                    f"AGGREGATE ... BY {by.name}: a row's {by.name} holds "
                    f"{json.dumps(shorten(key), default=str)}, which cannot be a group key "
                    f"(only text, numbers and records with an id can); group BY one of its "
                    f"fields instead, e.g. BY {by.name}.<field>"
                )
            groups.setdefault(key, []).append(row)
    out: list[dict[str, Any]] = []
    for key in sorted(groups, key=_sort_key):
        members = groups[key]
        if fn == "COUNT":
            value: Any = len(members)
        else:
            assert of is not None  # the parser requires OF for every other function
            values = [v for m in members for v in _unwind(lookup(m, of.path))]
            if fn == "COLLECT":
                value = list(dict.fromkeys(str(v) if isinstance(v, dict) else v for v in values))
            else:
                numbers = [
                    v for v in values if isinstance(v, int | float) and not isinstance(v, bool)
                ]
                value = _reduce(fn, numbers)
        out.append({"key": key, "value": value})
    return out


def _reduce(fn: str, numbers: list[float]) -> float | None:
    if not numbers:
        return 0 if fn == "SUM" else None
    if fn == "SUM":
        return sum(numbers)
    if fn == "AVG":
        return sum(numbers) / len(numbers)
    return min(numbers) if fn == "MIN" else max(numbers)


def rank(rows: Iterable[Any], by: ast.Field, descending: bool, limit: int | None) -> list[Any]:
    """Rows sorted by a field (numbers before text); rows without the field go last."""
    present: list[Any] = []
    absent: list[Any] = []
    for row in rows:
        (present if _unwind(lookup(row, by.path)) else absent).append(row)
    present.sort(key=lambda r: _sort_key(lookup(r, by.path)), reverse=descending)
    ranked = present + absent
    return ranked if limit is None else ranked[:limit]
