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
from typing import Any, cast, overload

from postel.services.gasl import ast
from postel.services.gasl.errors import BindingError


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
# How `bind` reads a `${name.path}` binding's value.
Resolver = Callable[[str, tuple[str, ...]], Any]


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


@overload
def bind(node: ast.Condition, resolve: Resolver) -> ast.Condition: ...
@overload
def bind(node: ast.Operand, resolve: Resolver) -> ast.Operand: ...
def bind(node: ast.Condition | ast.Operand, resolve: Resolver) -> ast.Condition | ast.Operand:
    """Replace every `${var}` by its value so evaluation (and index planning) sees constants:
    a binding by the value (a record by its id), `LEN ${var}` by the size of the value.

    `resolve(name, path)` raises BindingError when the variable does not exist.
    """

    def bound(item: Any) -> Any:
        match item:
            case ast.Binding(name, path):
                return ast.Value(as_value(resolve(name, path)))
            case ast.Len(ast.Binding(name, path)):
                return ast.Value(_size(resolve(name, path)))
        return item

    return cast("ast.Condition | ast.Operand", ast.transform(node, bound))


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
    # The interpreter, not a traversal: AND/OR short-circuit, and it runs once per item
    # scanned, so it matches the node kinds itself rather than visiting every node.
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
    return {node.name for node in ast.walk(condition) if isinstance(node, ast.Field)}
