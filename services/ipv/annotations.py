"""The desired type from a Python annotation written at the call site.

`float`, `list[str]`, `typing.List[int]`, `Optional[float]`, `float | None`, `"float"`
(a forward reference), `dict[str, Any]` and `Decimal` are understood. Anything else (a class
of the caller's own, `Any`, a tuple) gives None: the caller must then say the desired type
explicitly, and the default (str) applies.
"""

from __future__ import annotations

import ast

from postel.messages.job import CodeSiteContext
from postel.messages.types import TypeSpec

_NAMES = {
    "float": "float",
    "Decimal": "float",
    "int": "int",
    "bool": "bool",
    "str": "str",
    "dict": "dict",
    "Dict": "dict",
    "Mapping": "dict",
    "SectionsDocument": "document",
}
_LISTS = {"list", "List", "Sequence", "Iterable"}
_OPTIONAL = {"Optional"}


def infer_desired_type(code_site: CodeSiteContext | None) -> TypeSpec | None:
    """The TypeSpec of the code site's annotation, or None when there is none we can read."""
    if code_site is None or not code_site.annotation:
        return None
    spelling = _spelling(code_site.annotation)
    return TypeSpec.parse(spelling) if spelling else None


def _spelling(annotation: str) -> str | None:
    try:
        node = ast.parse(annotation, mode="eval").body
    except SyntaxError:
        return None
    return _read(node)


def _read(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _spelling(node.value)  # a forward reference: "float"
    if isinstance(node, ast.Name | ast.Attribute):
        name = node.id if isinstance(node, ast.Name) else node.attr
        return "list[str]" if name in _LISTS else _NAMES.get(name)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [side for side in (node.left, node.right) if not _is_none(side)]
        return _read(sides[0]) if len(sides) == 1 else None
    if isinstance(node, ast.Subscript):
        outer = _read_name(node.value)
        if outer in _OPTIONAL:
            return _read(node.slice)
        if outer in _LISTS:
            inner = _read(node.slice)
            return f"list[{inner}]" if inner else None
        if _NAMES.get(outer or "") == "dict":
            return "dict"
    return None


def _read_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
