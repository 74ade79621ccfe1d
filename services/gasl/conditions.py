"""Evaluating conditions against one item (a node, edge, path or row).

Semantics, chosen to be predictable for a model writing them:
- a field that is missing compares false, except `!=` which is true;
- a list-valued field compared to a single value matches if ANY element matches
  (so `source_ids = "chunk-1"` asks "is chunk-1 among the source ids");
- CONTAINS / STARTS_WITH / ENDS_WITH compare text case-insensitively;
- values of different kinds never order (`"a" > 1` is false, not an error);
- a bound record (a dict with an `id`) stands for its id, so `id IN ${authors}` works on
  the node records FIND returned.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from postel.services.gasl import ast
from postel.services.gasl.errors import BindingError


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def lookup(item: Any, path: tuple[str, ...]) -> Any:
    """Walk nested dicts along `path`; MISSING when any step is absent."""
    value = item
    for part in path:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            return MISSING
    return value


def as_value(value: Any) -> Any:
    """A record stands for its id when compared; lists map element-wise."""
    if isinstance(value, Mapping) and "id" in value:
        return value["id"]
    if isinstance(value, list | tuple):
        return [as_value(v) for v in value]
    return value


def bind(condition: ast.Condition, resolve: Callable[[str, tuple[str, ...]], Any]) -> ast.Condition:
    """Replace every `${var}` by its value so evaluation (and index planning) sees constants.

    `resolve(name, path)` raises BindingError when the variable does not exist.
    """

    def operand(node: ast.Operand) -> ast.Operand:
        if isinstance(node, ast.Binding):
            return ast.Value(as_value(resolve(node.name, node.path)))
        if isinstance(node, ast.Len):
            inner = node.operand
            if isinstance(inner, ast.Binding):
                return ast.Value(_size(resolve(inner.name, inner.path)))
            return ast.Len(operand(inner))
        return node

    def walk(node: ast.Condition) -> ast.Condition:
        match node:
            case ast.Compare(left, op, right):
                return ast.Compare(operand(left), op, operand(right))
            case ast.In(left, options, negated):
                return ast.In(operand(left), operand(options), negated)
            case ast.TextMatch(left, op, right):
                return ast.TextMatch(operand(left), op, operand(right))
            case ast.And(items):
                return ast.And(tuple(walk(i) for i in items))
            case ast.Or(items):
                return ast.Or(tuple(walk(i) for i in items))
            case ast.Not(item):
                return ast.Not(walk(item))
        raise TypeError(f"not a condition: {node!r}")

    return walk(condition)


def _size(value: Any) -> Any:
    if value is MISSING or value is None:
        return 0
    try:
        return len(value)
    except TypeError:
        return MISSING


def operand_value(node: ast.Operand, item: Any) -> Any:
    """An operand's value for one item (MISSING for a field the item lacks)."""
    match node:
        case ast.Value(value):
            return value
        case ast.Field(path):
            return lookup(item, path)
        case ast.Len(inner):
            return _size(operand_value(inner, item))
        case ast.Binding(name, _):
            raise BindingError(f"unbound variable ${{{name}}}")
    raise TypeError(f"not an operand: {node!r}")


_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}


def _scalar_compare(op: str, left: Any, right: Any) -> bool:
    if op in ("=", "!="):
        return bool(_ORDER[op](left, right))
    if isinstance(left, bool) or isinstance(right, bool):
        return False
    numeric = isinstance(left, int | float) and isinstance(right, int | float)
    if not numeric and type(left) is not type(right):
        return False
    try:
        return bool(_ORDER[op](left, right))
    except TypeError:
        return False


_FLIPPED = {"=": "=", "!=": "!=", ">": "<", ">=": "<=", "<": ">", "<=": ">="}


def _compare(op: str, left: Any, right: Any) -> bool:
    if left is MISSING or right is MISSING:
        return op == "!="
    if isinstance(right, list) and not isinstance(left, list):
        # `"ADA" = tags` means what `tags = "ADA"` means, as an index lookup does
        return _compare(_FLIPPED[op], right, left)
    if isinstance(left, list) and not isinstance(right, list):
        if op == "!=":
            return all(_scalar_compare("!=", e, right) for e in left)
        return any(_scalar_compare(op, e, right) for e in left)
    return _scalar_compare(op, left, right)


def _member(left: Any, options: Any) -> bool:
    if left is MISSING or not isinstance(options, list | tuple | set | frozenset):
        return False
    if isinstance(left, list):
        return any(_member(e, options) for e in left)
    try:
        return left in options
    except TypeError:
        return False


def _text(op: str, left: Any, right: Any) -> bool:
    if left is MISSING or not isinstance(right, str):
        return False
    if isinstance(left, list):
        return any(_text(op, e, right) for e in left)
    if not isinstance(left, str):
        return False
    haystack, needle = left.casefold(), right.casefold()
    if op == "CONTAINS":
        return needle in haystack
    if op == "STARTS_WITH":
        return haystack.startswith(needle)
    return haystack.endswith(needle)


def evaluate(condition: ast.Condition, item: Any) -> bool:
    """Does `item` satisfy `condition`? Bindings must already be bound (see `bind`)."""
    match condition:
        case ast.Compare(left, op, right):
            return _compare(op, operand_value(left, item), operand_value(right, item))
        case ast.In(left, options, negated):
            found = _member(operand_value(left, item), operand_value(options, item))
            return not found if negated else found
        case ast.TextMatch(left, op, right):
            return _text(op, operand_value(left, item), operand_value(right, item))
        case ast.And(items):
            return all(evaluate(i, item) for i in items)
        case ast.Or(items):
            return any(evaluate(i, item) for i in items)
        case ast.Not(inner):
            return not evaluate(inner, item)
    raise TypeError(f"not a condition: {condition!r}")


def fields_of(condition: ast.Condition | None) -> set[str]:
    """Names of the item fields a condition reads (for error hints)."""
    if condition is None:
        return set()
    found: set[str] = set()

    def operand(node: ast.Operand) -> None:
        if isinstance(node, ast.Field):
            found.add(node.name)
        elif isinstance(node, ast.Len):
            operand(node.operand)

    def walk(node: ast.Condition) -> None:
        match node:
            case ast.Compare(left, _, right) | ast.TextMatch(left, _, right):
                operand(left)
                operand(right)
            case ast.In(left, options, _):
                operand(left)
                operand(options)
            case ast.And(items) | ast.Or(items):
                for i in items:
                    walk(i)
            case ast.Not(inner):
                walk(inner)

    walk(condition)
    return found
