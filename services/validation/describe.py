"""`describe_type`: the desired type in words, for prompts and repair requests."""

from __future__ import annotations

import json

from postel.messages.types import TypeSpec

_SCALARS = {
    "float": "a single number (float)",
    "int": "a single whole number (int)",
    "bool": "yes or no (bool: true or false)",
    "str": "text (str)",
    "dict": "a JSON object (dict)",
    "document": 'a sections document: JSON {"sections": [{"id", "content_type", "elements"}]}',
}
_ITEM_NOUNS = {
    "float": "numbers",
    "int": "whole numbers",
    "bool": "true/false values",
    "str": "strings",
    "dict": "JSON objects",
    "document": "sections documents",
    "json_schema": "values",
}


def describe_type(spec: TypeSpec) -> str:
    """A short description such as "a single number (float)" or "a JSON array of strings
    (list[str])"."""
    if spec.kind == "list":
        assert spec.items is not None  # guaranteed by TypeSpec's own validation
        if spec.items.kind == "json_schema":
            schema = _compact(spec.items.json_schema)
            return f"a JSON array whose items match the JSON Schema {schema}"
        noun = _ITEM_NOUNS.get(spec.items.kind, "lists")
        return f"a JSON array of {noun} ({spec.spelling()})"
    if spec.kind == "json_schema":
        return f"a JSON value matching the JSON Schema {_compact(spec.json_schema)}"
    return _SCALARS[spec.kind]


def _compact(schema: object) -> str:
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
