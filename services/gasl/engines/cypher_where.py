"""A GASL condition as a Cypher WHERE over a LadybugDB store's columns, with the same meaning
as `conditions.evaluate` (missing fields, list fields, kinds that never order, casefolded
text), or the part of it the columns cannot answer exactly, left to Python.

`split(where, columns)` returns `(cypher, params, rest)`: `cypher` (a boolean expression,
None for none) is exactly the conjuncts of `where` the columns answer, and `rest` (None for
none) the conjuncts to test in Python on the rows the database returned. Each atom is
wrapped in `coalesce(..., false)`, so a missing field reads false and NOT of it true, as in
Python, not NULL. A value is a query parameter taken into a variable of the same name by
`taken` (`WITH $w0 AS w0 MATCH ...`): the engine reads no parameter inside a list
predicate. Only the openCypher that Neo4j and Memgraph also run is written: `IN`,
`any(x IN list WHERE ...)`, `lower()`, `CONTAINS`, `STARTS WITH`, `ENDS WITH`, `coalesce`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from postel.services.gasl import ast

Kind = Literal["text", "float", "texts"]


@dataclass(frozen=True)
class Column:
    """A field answered by a column: its Cypher expression, kind (a string, a float, a list
    of strings), and whether `lower()` of it folds as Python's casefold does."""

    expr: str
    kind: Kind
    folds: bool


@dataclass
class _Params:
    values: dict[str, Any]

    def add(self, value: Any) -> str:
        name = f"w{len(self.values)}"
        self.values[name] = value
        return name


def split(
    where: ast.Condition | None, columns: Mapping[str, Column]
) -> tuple[str | None, dict[str, Any], ast.Condition | None]:
    """The conjuncts of `where` the columns answer exactly, as Cypher with its parameters,
    and the others as a condition for Python (None where there are none)."""
    if where is None:
        return None, {}, None
    items = where.items if isinstance(where, ast.And) else (where,)
    params = _Params({})
    pushed: list[str] = []
    kept: list[ast.Condition] = []
    for item in items:
        compiled = _compile(item, columns, params)
        if compiled is None:
            kept.append(item)
        else:
            pushed.append(compiled)
    cypher = " AND ".join(f"({p})" for p in pushed) if pushed else None
    rest: ast.Condition | None = None
    if len(kept) == 1:
        rest = kept[0]
    elif kept:
        rest = ast.And(tuple(kept))
    return cypher, params.values, rest


def taken(params: Mapping[str, Any]) -> str:
    """The clause that opens a query taking each parameter into its variable: put it before
    the MATCH (a WITH after one would have to carry its relationship variable along)."""
    if not params:
        return ""
    return "WITH " + ", ".join(f"${name} AS {name}" for name in params) + " "


_FLIPPED = {"=": "=", "!=": "!=", ">": "<", ">=": "<=", "<": ">", "<=": ">="}
_CYPHER_OP = {"=": "=", "!=": "<>", ">": ">", ">=": ">=", "<": "<", "<=": "<="}
_TEXT_OP = {"CONTAINS": "CONTAINS", "STARTS_WITH": "STARTS WITH", "ENDS_WITH": "ENDS WITH"}


def _compile(cond: ast.Condition, columns: Mapping[str, Column], params: _Params) -> str | None:
    match cond:
        case ast.Compare(ast.Field(path), op, ast.Value(value)) if len(path) == 1:
            return _compare(columns.get(path[0]), op, value, params)
        case ast.Compare(ast.Value(value), op, ast.Field(path)) if len(path) == 1:
            return _compare(columns.get(path[0]), _FLIPPED[op], value, params)
        case ast.In(ast.Field(path), ast.Value(options), negated) if len(path) == 1:
            found = _member(columns.get(path[0]), options, params)
            return None if found is None else (f"NOT ({found})" if negated else found)
        case ast.TextMatch(ast.Field(path), op, ast.Value(text)) if len(path) == 1:
            return _text(columns.get(path[0]), op, text, params)
        case ast.And(items) | ast.Or(items):
            parts = [_compile(i, columns, params) for i in items]
            if any(p is None for p in parts):
                return None
            joiner = " AND " if isinstance(cond, ast.And) else " OR "
            return joiner.join(f"({p})" for p in parts)
        case ast.Not(inner):
            part = _compile(inner, columns, params)
            return None if part is None else f"NOT ({part})"
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _compare(column: Column | None, op: str, value: Any, params: _Params) -> str | None:
    """`field op value`, as conditions._compare reads it."""
    if column is None or isinstance(value, list | tuple | dict):
        return None
    equality = op in ("=", "!=")
    if column.kind == "float":
        # Python: 1.0 == True; but a bool never orders
        comparable = _is_number(value) or (equality and isinstance(value, bool))
        operand = float(value) if comparable else None
    else:
        comparable = isinstance(value, str)
        operand = value if comparable else None
    if not comparable:
        # a value of another kind: `=` and the orders are false, `!=` true (missing too)
        return "true" if op == "!=" else "false"
    p = params.add(operand)
    if column.kind == "texts":
        if op == "!=":  # every element differs (a missing or empty list too)
            return f"NOT coalesce({p} IN {column.expr}, false)"
        if op == "=":
            return f"coalesce({p} IN {column.expr}, false)"
        return f"coalesce(any(x IN {column.expr} WHERE x {_CYPHER_OP[op]} {p}), false)"
    if op == "!=":
        return f"NOT coalesce({column.expr} = {p}, false)"
    return f"coalesce({column.expr} {_CYPHER_OP[op]} {p}, false)"


def _member(column: Column | None, options: Any, params: _Params) -> str | None:
    """`field IN options`, as conditions._member reads it."""
    if column is None:
        return None
    if not isinstance(options, list | tuple):
        return "false"
    if column.kind == "float":
        kept = [float(o) for o in options if _is_number(o) or isinstance(o, bool)]
    else:
        kept = [o for o in options if isinstance(o, str)]
    if not kept:
        return "false"
    p = params.add(kept)
    if column.kind == "texts":
        return f"coalesce(any(x IN {column.expr} WHERE x IN {p}), false)"
    return f"coalesce({column.expr} IN {p}, false)"


def _text(column: Column | None, op: str, text: Any, params: _Params) -> str | None:
    """CONTAINS / STARTS_WITH / ENDS_WITH, case-insensitive, as conditions._text reads it."""
    if column is None:
        return None
    if not isinstance(text, str) or column.kind == "float":
        return "false"
    if not column.folds:
        return None
    needle = text.casefold()
    p = params.add(needle)
    # No character casefolds (or lowers) to an ASCII character that is not a letter but
    # that character itself: a needle of only those matches a text exactly where it matches
    # the folded text, so it is compared as it is (lower() of every value is the costly
    # part of a scan).
    fold = "" if needle.isascii() and not any(c.isalpha() for c in needle) else "lower"
    if column.kind == "texts":
        return f"coalesce(any(x IN {column.expr} WHERE {fold}(x) {_TEXT_OP[op]} {p}), false)"
    return f"coalesce({fold}({column.expr}) {_TEXT_OP[op]} {p}, false)"
