"""JSON Schema (supported subset) and sections-document coercion."""

from __future__ import annotations

from typing import Any

import pytest
from postel.messages.types import TypeSpec
from postel.services.validation import CoercionError, UnsupportedSchemaError, check_schema, coerce
from pydantic import ValidationError

INVOICE = {
    "type": "object",
    "properties": {
        "vendor": {"type": "string", "minLength": 1},
        "total": {"type": "number", "minimum": 0},
        "paid": {"type": "boolean"},
        "status": {"enum": ["open", "closed"]},
        "lines": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
                "required": ["sku", "qty"],
                "additionalProperties": False,
            },
            "maxItems": 3,
        },
        "note": {"type": ["string", "null"]},
    },
    "required": ["vendor", "total"],
    "description": "annotations such as this one are ignored",
}
SPEC = TypeSpec.model_validate({"kind": "json_schema", "schema": INVOICE})


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"vendor": "ACME", "total": 12.5}', {"vendor": "ACME", "total": 12.5}),
        (
            "```json\n{'vendor': 'ACME', total: '$1,299.99', paid: 'yes', status: 'Open',}\n```",
            {"vendor": "ACME", "total": 1299.99, "paid": True, "status": "open"},
        ),
        (
            '{"vendor": "A", "total": 1, "lines": [{"sku": "x", "qty": "2.0"}], "note": null}',
            {"vendor": "A", "total": 1.0, "lines": [{"sku": "x", "qty": 2}], "note": None},
        ),
        ('{"vendor": "A", "total": 3, "extra": [1]}', {"vendor": "A", "total": 3.0, "extra": [1]}),
        ({"vendor": "A", "total": 0}, {"vendor": "A", "total": 0.0}),
    ],
)
def test_schema_objects_are_repaired_and_coerced(raw: Any, expected: dict[str, Any]) -> None:
    assert coerce(raw, SPEC) == expected


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ('{"vendor": "ACME"}', "at $.total: required field 'total' is missing"),
        ('{"vendor": "A", "total": "lots"}', "at $.total: expected a number, got 'lots'"),
        ('{"vendor": "A", "total": -1}', "at $.total: -1 is out of range: must be >= 0"),
        ('{"vendor": "", "total": 1}', "at $.vendor: too short: 0 characters"),
        ('{"vendor": "A", "total": 1, "paid": "maybe"}', "at $.paid: expected bool"),
        ('{"vendor": "A", "total": 1, "status": "lost"}', "at $.status: expected one of 'open'"),
        (
            '{"vendor": "A", "total": 1, "lines": [{"sku": "x", "qty": 1.5}]}',
            "at $.lines[0].qty: expected an integer, got 1.5: 1.5 is not a whole number",
        ),
        (
            '{"vendor": "A", "total": 1, "lines": [{"sku": "x", "qty": 1, "tax": 0}]}',
            "at $.lines[0].tax: unexpected field 'tax'",
        ),
        (
            '{"vendor": "A", "total": 1, "lines": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 1},'
            ' {"sku": "c", "qty": 1}, {"sku": "d", "qty": 1}]}',
            "at $.lines: too long: 4 items, at most 3 allowed",
        ),
        ('{"vendor": "A", "total": 1, "note": [5]}', "at $.note: expected a string"),
        ("[1, 2]", "expected a JSON object, got '[1, 2]': not a JSON object but a list"),
        ("I could not find an invoice.", "no JSON value found"),
    ],
)
def test_schema_violations_name_the_field(raw: str, error: str) -> None:
    with pytest.raises(CoercionError) as caught:
        coerce(raw, SPEC)
    assert error in str(caught.value)


@pytest.mark.parametrize(
    ("schema", "raw", "expected"),
    [
        ({"type": "number", "exclusiveMaximum": 1}, "45%", 0.45),
        ({"type": "integer"}, "twelve", 12),
        ({"type": "array", "items": {"type": "number"}}, "- $1\n- $2", [1.0, 2.0]),
        ({"type": "array", "minItems": 1}, "[]", Exception),
        ({"const": "ok", "type": "string"}, "ok", "ok"),
        ({"type": "boolean"}, "no", False),
        ({"type": "null"}, "null", None),
        ({"type": "string", "maxLength": 3}, 1234, Exception),
        ({"type": "number"}, "1e999", Exception),
        ({"type": "number"}, 1e308, 1e308),
        ({"type": "integer"}, "1e1000000", Exception),
        ({"type": "string"}, float("nan"), Exception),
        ({"type": "object"}, '{"a": NaN}', Exception),
        ({"type": "object", "additionalProperties": True}, '{"a": {"b": Infinity}}', Exception),
        ({"type": "array"}, "[1, -Infinity]", Exception),
        ({"type": "number", "minimum": 0}, "5k", 5000.0),
        ({"type": "integer"}, "at least 5", Exception),
    ],
)
def test_non_object_schemas(schema: dict[str, Any], raw: Any, expected: Any) -> None:
    spec = TypeSpec.model_validate({"kind": "json_schema", "schema": schema})
    if expected is Exception:
        with pytest.raises(CoercionError):
            coerce(raw, spec)
    else:
        assert coerce(raw, spec) == expected


def _nested_items(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema


@pytest.mark.parametrize(
    ("schema", "error"),
    [
        ({"anyOf": [{"type": "string"}]}, "unsupported JSON Schema keyword 'anyOf' at $"),
        (
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}},
            "'pattern' at $.a",
        ),
        ({"type": "array", "items": {"$ref": "#/x"}}, "'$ref' at $[]"),
        ({"type": "decimal"}, "unknown JSON Schema type ['decimal']"),
        ({"properties": 5}, "at $: 'properties' must be an object mapping field names"),
        ({"type": "object", "properties": {"a": 5}}, "schema at $.a must be an object, got 5"),
        ({"type": "object", "required": "a"}, "'required' must be a list of field names"),
        ({"type": "object", "required": [1]}, "'required' must be a list of field names"),
        ({"type": 5}, "'type' must be a type name or a non-empty list of type names"),
        ({"type": []}, "'type' must be a type name"),
        ({"type": {"a": 1}}, "'type' must be a type name"),
        ({"type": "object", "additionalProperties": "no"}, "'additionalProperties' must be"),
        ({"type": "array", "items": [{"type": "string"}]}, "a list of schemas per position"),
        ({"enum": "abc"}, "'enum' must be a non-empty list of values"),
        ({"type": "number", "minimum": "5"}, "'minimum' must be a number, got '5'"),
        ({"type": "number", "exclusiveMinimum": True}, "'exclusiveMinimum' must be a number"),
        ({"type": "number", "maximum": float("inf")}, "'maximum' must be a finite number"),
        ({"type": "number", "maximum": 10**1001}, "'maximum' must be a number of at most 1000"),
        ({"type": "string", "maxLength": -1}, "'maxLength' must be a whole number, 0 or more"),
        ({"type": "array", "minItems": 1.5}, "'minItems' must be a whole number"),
    ],
)
def test_unsupported_keywords_are_refused_not_skipped(schema: dict[str, Any], error: str) -> None:
    with pytest.raises(UnsupportedSchemaError) as caught:
        check_schema(schema)
    assert error in str(caught.value)
    spec = TypeSpec.model_validate({"kind": "json_schema", "schema": schema})
    with pytest.raises(UnsupportedSchemaError):
        coerce("{}", spec)


def test_a_schema_nested_too_deep_is_refused_by_both_layers() -> None:
    """The validator refuses it; the request refuses it earlier still (a JSON Schema in a
    desired type nests at most 32 levels), so such a job never starts."""
    deep = _nested_items(70)
    with pytest.raises(UnsupportedSchemaError, match="is nested deeper than 64 levels"):
        check_schema(deep)
    with pytest.raises(ValidationError, match="JSON Schema nesting limit is 32"):
        TypeSpec.model_validate({"kind": "json_schema", "schema": deep})


DOCUMENT = {
    "sections": [
        {"id": "s1", "content_type": "heading", "elements": [{"level": 1, "text": "Report"}]},
        {"content_type": "bullet_list", "elements": [{"items": ["a", "b"]}]},
    ]
}


@pytest.mark.parametrize(
    "raw",
    [
        DOCUMENT,
        '```json\n{"sections": [{"id": "s1", "content_type": "heading", "elements": '
        '[{"level": 1, "text": "Report"}]}, {"content_type": "bullet_list", "elements": '
        '[{"items": ["a", "b"]},]},]}\n```',
        DOCUMENT["sections"],
    ],
)
def test_documents_are_read_as_sections(raw: Any) -> None:
    assert coerce(raw, TypeSpec.parse("document")) == DOCUMENT


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ('{"title": "x"}', "at $.sections: required field 'sections' is missing"),
        (
            '{"sections": [{"content_type": "poem", "elements": []}]}',
            "at $.sections[0].content_type",
        ),
        ("just prose", "no JSON value found"),
        ("42", "not a JSON object"),
    ],
)
def test_invalid_documents(raw: str, error: str) -> None:
    with pytest.raises(CoercionError) as caught:
        coerce(raw, TypeSpec.parse("document"))
    assert error in str(caught.value)
