"""`coerce`: raw model output to the desired type (IPV VALIDATE, first half).

Liberal in what it accepts (see numbers, booleans, structured, schema for the rules),
conservative in what it returns: plain JSON-serialisable values (float, int, bool, str,
list, dict) with finite numbers only, or a CoercionError that says what was expected and
what was wrong. Nothing else escapes: the work is bounded before it starts (numerals by
MAX_NUMERAL_DIGITS, JSON by MAX_JSON_DEPTH and MAX_JSON_REPAIR_CHARS), and an arithmetic,
recursion or conversion error that still occurs is reported as a CoercionError."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import structlog
from postel.messages.types import TypeSpec
from postel.services.validation.booleans import parse_bool
from postel.services.validation.document import read_document
from postel.services.validation.errors import CoercionError, UnsupportedSchemaError
from postel.services.validation.numbers import as_float, read_number
from postel.services.validation.schema import check_schema, validate
from postel.services.validation.structured import check_json_values, load_object, split_list
from postel.services.validation.text import strip_emphasis, unwrap_fence

log = structlog.get_logger(__name__)


def coerce(raw: Any, spec: TypeSpec, *, locale: str | None = None) -> Any:
    """`raw` as a value of `spec`. Raises CoercionError, or UnsupportedSchemaError when a
    JSON Schema spec is malformed or uses keywords outside the supported subset."""
    if raw is None:
        raise CoercionError.mismatch(spec.spelling(), raw, "no value")
    try:
        return _COERCERS[spec.kind](raw, spec, locale)
    except (CoercionError, UnsupportedSchemaError):
        raise
    except (ArithmeticError, RecursionError, ValueError) as error:
        # every known cause is checked before it can happen; this keeps an unforeseen one a
        # refusal of this answer (a repair) instead of a crashed handler
        log.warning("coercion_error_unforeseen", kind=spec.kind, error=repr(error)[:200])
        raise CoercionError.mismatch(
            spec.spelling(), raw, f"cannot be read ({type(error).__name__})"
        ) from None


def _to_float(raw: Any, _spec: TypeSpec, locale: str | None) -> float:
    return as_float(read_number(raw, expected="float", locale=locale), expected="float", raw=raw)


def _to_int(raw: Any, _spec: TypeSpec, locale: str | None) -> int:
    value = read_number(raw, expected="int", locale=locale, whole=True)
    if value != int(value):
        raise CoercionError.mismatch("int", raw, f"{value} is not a whole number")
    return int(value)


def _to_bool(raw: Any, _spec: TypeSpec, _locale: str | None) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, int) and raw in (0, 1):
        return bool(raw)
    if isinstance(raw, str):
        return parse_bool(raw)
    raise CoercionError.mismatch("bool", raw, "not a yes/no answer")


def _to_str(raw: Any, _spec: TypeSpec, _locale: str | None) -> str:
    if isinstance(raw, str):
        return strip_emphasis(unwrap_fence(raw))
    if isinstance(raw, bool):
        return "true" if raw else "false"
    check_json_values(raw, expected="str")
    if isinstance(raw, int | float):
        return str(raw)
    return json.dumps(raw, ensure_ascii=False)


def _to_list(raw: Any, spec: TypeSpec, locale: str | None) -> list[Any]:
    assert spec.items is not None  # guaranteed by TypeSpec's own validation
    result = []
    for index, item in enumerate(split_list(raw, expected=spec.spelling(), locale=locale)):
        try:
            result.append(coerce(item, spec.items, locale=locale))
        except CoercionError as error:
            raise error.within(f"[{index}]") from None
    return result


def _to_dict(raw: Any, _spec: TypeSpec, _locale: str | None) -> dict[str, Any]:
    value = load_object(raw, expected="dict (a JSON object)")
    check_json_values(value, expected="dict (a JSON object)")
    return value


def _to_document(raw: Any, _spec: TypeSpec, _locale: str | None) -> dict[str, Any]:
    value = read_document(raw)
    check_json_values(value, expected="a sections document")
    return value


def _to_schema(raw: Any, spec: TypeSpec, locale: str | None) -> Any:
    assert spec.json_schema is not None  # guaranteed by TypeSpec's own validation
    check_schema(spec.json_schema)
    value = validate(raw, spec.json_schema, locale=locale)
    check_json_values(value, expected="a value matching the JSON Schema")
    return value


_COERCERS: dict[str, Callable[[Any, TypeSpec, str | None], Any]] = {
    "float": _to_float,
    "int": _to_int,
    "bool": _to_bool,
    "str": _to_str,
    "list": _to_list,
    "dict": _to_dict,
    "document": _to_document,
    "json_schema": _to_schema,
}
