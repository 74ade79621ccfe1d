"""Validating (and gently coercing) a value against a JSON Schema, for a documented subset.

Supported keywords: type (one or a list of object, array, string, number, integer, boolean,
null), properties, required, additionalProperties (bool or schema), items (one schema),
enum, const, minimum, maximum, exclusiveMinimum, exclusiveMaximum, minItems, maxItems,
minLength, maxLength. Annotations are ignored: title, description, default, examples,
format, $schema, $id, $comment. Any other keyword ($ref, anyOf, pattern, ...) raises
UnsupportedSchemaError up front instead of being silently skipped.

Leaves are read liberally with the scalar coercers ("$5" for a number, "yes" for a
boolean); enum strings match case-insensitively and come back in the schema's spelling.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from postel.messages.limits import MAX_JSON_DEPTH, MAX_NUMERAL_DIGITS
from postel.messages.types import TypeSpec
from postel.services.validation.booleans import parse_bool
from postel.services.validation.errors import CoercionError, UnsupportedSchemaError, show
from postel.services.validation.numbers import as_float, read_number, within_digit_limit
from postel.services.validation.structured import load_object, split_list

# fmt: off
_ASSERTIONS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems",
    "minLength", "maxLength",
})
_ANNOTATIONS = frozenset({
    "title", "description", "default", "examples", "format", "$schema", "$id", "$comment",
})
# fmt: on
_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_BOUND_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_SIZE_KEYWORDS = ("minItems", "maxItems", "minLength", "maxLength")


def check_desired_type(spec: TypeSpec) -> None:
    """Raise UnsupportedSchemaError if any JSON Schema in `spec` (a list's items included)
    is malformed or leaves the supported subset: checked at submission, before any model
    call, as well as by the validator."""
    while spec.items is not None:
        spec = spec.items
    if spec.json_schema is not None:
        check_schema(spec.json_schema)


def check_schema(schema: Any, path: str = "", depth: int = 1) -> None:
    """Raise UnsupportedSchemaError if `schema` is malformed or leaves the supported subset."""
    if depth > MAX_JSON_DEPTH:
        raise UnsupportedSchemaError(
            f"schema at ${path} is nested deeper than {MAX_JSON_DEPTH} levels"
        )
    if not isinstance(schema, dict):
        raise UnsupportedSchemaError(f"schema at ${path} must be an object, got {show(schema)}")
    for key in schema:
        if key not in _ASSERTIONS and key not in _ANNOTATIONS:
            supported = ", ".join(sorted(_ASSERTIONS))
            raise UnsupportedSchemaError(
                f"unsupported JSON Schema keyword {key!r} at ${path}; supported: {supported}"
            )
    for key, value in schema.items():
        problem = _keyword_problem(key, value)
        if problem:
            raise UnsupportedSchemaError(
                f"malformed JSON Schema at ${path}: {key!r} must be {problem}, got {show(value)}"
            )
    unknown = set(_type_list(schema)) - _TYPES
    if unknown:
        raise UnsupportedSchemaError(f"unknown JSON Schema type {sorted(unknown)} at ${path}")
    for name, sub in schema.get("properties", {}).items():
        check_schema(sub, f"{path}.{name}", depth + 1)
    if isinstance(schema.get("additionalProperties"), dict):
        check_schema(schema["additionalProperties"], f"{path}.*", depth + 1)
    if "items" in schema:
        check_schema(schema["items"], f"{path}[]", depth + 1)


def _keyword_problem(key: str, value: Any) -> str | None:
    """What a keyword's value should be, if it is not."""
    if key == "type":
        names = [value] if isinstance(value, str) else value
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            return "a type name or a non-empty list of type names"
    elif key == "properties":
        if not isinstance(value, dict):
            return "an object mapping field names to schemas"
    elif key == "required":
        if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
            return "a list of field names"
    elif key == "additionalProperties":
        if not isinstance(value, bool | dict):
            return "true, false or a schema"
    elif key == "items":
        if not isinstance(value, dict):
            return "one schema (a list of schemas per position is not supported)"
    elif key == "enum":
        if not isinstance(value, list) or not value:
            return "a non-empty list of values"
    elif key in _BOUND_KEYWORDS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "a number"
        if isinstance(value, float) and not math.isfinite(value):
            return "a finite number"
        if isinstance(value, int) and not within_digit_limit(value):
            return f"a number of at most {MAX_NUMERAL_DIGITS} digits"
    elif key in _SIZE_KEYWORDS and (
        isinstance(value, bool) or not isinstance(value, int) or value < 0
    ):
        return "a whole number, 0 or more"
    return None


def validate(value: Any, schema: dict[str, Any], *, locale: str | None = None) -> Any:
    """`value` read as an instance of `schema` (call `check_schema` first)."""
    types = _type_list(schema) or _implied_types(schema)
    errors: list[CoercionError] = []
    for kind in types or [None]:
        try:
            result = _READERS[kind](value, schema, locale) if kind else value
        except CoercionError as error:
            errors.append(error)
            continue
        return _check_choices(result, schema)
    raise errors[0]


def _type_list(schema: dict[str, Any]) -> list[str]:
    declared = schema.get("type", [])
    return [declared] if isinstance(declared, str) else list(declared)


def _implied_types(schema: dict[str, Any]) -> list[str]:
    if "properties" in schema or "required" in schema:
        return ["object"]
    return ["array"] if "items" in schema else []


def _check_choices(value: Any, schema: dict[str, Any]) -> Any:
    if "const" in schema and value != schema["const"]:
        raise CoercionError(f"expected {schema['const']!r}, got {show(value)}")
    if "enum" in schema:
        for choice in schema["enum"]:
            same_text = isinstance(value, str) and isinstance(choice, str)
            if value == choice or (same_text and value.strip().lower() == choice.lower()):
                return choice
        choices = ", ".join(repr(c) for c in schema["enum"])
        raise CoercionError(f"expected one of {choices}, got {show(value)}")
    return value


def _read_object(value: Any, schema: dict[str, Any], locale: str | None) -> dict[str, Any]:
    obj = load_object(value, expected="a JSON object")
    properties: dict[str, Any] = schema.get("properties", {})
    missing = [name for name in schema.get("required", []) if name not in obj]
    if missing:
        raise CoercionError(f"required field {missing[0]!r} is missing").within(f".{missing[0]}")
    extra_rule = schema.get("additionalProperties", True)
    result: dict[str, Any] = {}
    for name, item in obj.items():
        sub = properties.get(name)
        if sub is None and extra_rule is False:
            raise CoercionError(f"unexpected field {name!r}").within(f".{name}")
        if sub is None and extra_rule is True:
            result[name] = item
            continue
        try:
            result[name] = validate(item, sub if sub is not None else extra_rule, locale=locale)
        except CoercionError as error:
            raise error.within(f".{name}") from None
    return result


def _read_array(value: Any, schema: dict[str, Any], locale: str | None) -> list[Any]:
    items = split_list(value, expected="a JSON array")
    _check_size(len(items), schema, "minItems", "maxItems", "items")
    item_schema = schema.get("items")
    if item_schema is None:
        return items
    result = []
    for index, item in enumerate(items):
        try:
            result.append(validate(item, item_schema, locale=locale))
        except CoercionError as error:
            raise error.within(f"[{index}]") from None
    return result


def _read_string(value: Any, schema: dict[str, Any], _locale: str | None) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise CoercionError.mismatch("a string", value, "not text")
    if isinstance(value, float) and not math.isfinite(value):
        raise CoercionError.mismatch("a string", value, "not a finite number")
    text = value if isinstance(value, str) else str(value)
    _check_size(len(text), schema, "minLength", "maxLength", "characters")
    return text


def _read_number(value: Any, schema: dict[str, Any], locale: str | None) -> float:
    number = read_number(value, expected="a number", locale=locale)
    _check_bounds(number, schema)
    return as_float(number, expected="a number", raw=value)


def _read_integer(value: Any, schema: dict[str, Any], locale: str | None) -> int:
    number = read_number(value, expected="an integer", locale=locale, whole=True)
    if number != int(number):
        raise CoercionError.mismatch("an integer", value, f"{number} is not a whole number")
    _check_bounds(number, schema)
    return int(number)


def _read_boolean(value: Any, _schema: dict[str, Any], _locale: str | None) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return parse_bool(value)
    raise CoercionError.mismatch("a boolean", value, "not true or false")


def _read_null(value: Any, _schema: dict[str, Any], _locale: str | None) -> None:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("null", "none")):
        return None
    raise CoercionError.mismatch("null", value, "not null")


def _check_bounds(number: Any, schema: dict[str, Any]) -> None:
    rules = (
        ("minimum", lambda n, b: n >= b, ">="),
        ("maximum", lambda n, b: n <= b, "<="),
        ("exclusiveMinimum", lambda n, b: n > b, ">"),
        ("exclusiveMaximum", lambda n, b: n < b, "<"),
    )
    for key, holds, symbol in rules:
        if key in schema and not holds(number, schema[key]):
            raise CoercionError(f"{number} is out of range: must be {symbol} {schema[key]}")


def _check_size(size: int, schema: dict[str, Any], low: str, high: str, unit: str) -> None:
    if low in schema and size < schema[low]:
        raise CoercionError(f"too short: {size} {unit}, at least {schema[low]} required")
    if high in schema and size > schema[high]:
        raise CoercionError(f"too long: {size} {unit}, at most {schema[high]} allowed")


_READERS: dict[str, Callable[[Any, dict[str, Any], str | None], Any]] = {
    "object": _read_object,
    "array": _read_array,
    "string": _read_string,
    "number": _read_number,
    "integer": _read_integer,
    "boolean": _read_boolean,
    "null": _read_null,
}
