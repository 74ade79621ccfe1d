"""The validator's handling of the generator's structured value answers."""

from __future__ import annotations

from typing import Any

import pytest
from postel.messages import (
    GenerationCompleted,
    Intent,
    JobCompleted,
    JobFailed,
    JobProgress,
    JobRequest,
    TypeSpec,
    ValidationFailed,
)
from postel.services.generation.stage import value_schema
from postel.services.validator import validate


def completed(
    output: Any, spelling: str | dict[str, Any], criteria: list[str] | None = None
) -> GenerationCompleted:
    intent = Intent(
        detected_language="en",
        normalized_request="x",
        intent="x",
        primary_goal="x",
        success_criteria=criteria or [],
    )
    return GenerationCompleted(
        job_id="j",
        message_id="j:gen:done",
        request=JobRequest(prompt="x", desired_type=spelling),
        progress=JobProgress(intent=intent),
        task_id="t1",
        output=output,
    )


@pytest.mark.parametrize(
    ("output", "spelling", "expected"),
    [
        ('{"value": 165.5}', "float", 165.5),
        ('{"value": 3}', "int", 3),
        ('{"value": false}', "bool", False),
        ('{"value": [1, 2]}', "list[int]", [1, 2]),
        ('{"value": "yes"}', "bool", True),
        ("The total is $165.50.", "float", 165.5),
    ],
)
def test_a_wrapped_or_plain_value_is_coerced(output: str, spelling: str, expected: object) -> None:
    [result] = validate(completed(output, spelling))
    assert isinstance(result, JobCompleted) and result.result == expected


def test_an_unusable_value_asks_for_a_repair() -> None:
    [result] = validate(completed('{"value": "no idea"}', "float"))
    assert isinstance(result, ValidationFailed) and result.repair == 1
    assert "expected float" in result.error


def test_value_schemas_wrap_typed_values_and_leave_text_free() -> None:
    assert value_schema(TypeSpec.parse("float"))["properties"]["value"] == {"type": "number"}
    listed = value_schema(TypeSpec.parse("list[int]"))
    assert listed["properties"]["value"] == {"type": "array", "items": {"type": "integer"}}
    assert value_schema(TypeSpec.parse("str")) is None
    own = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert value_schema(TypeSpec.model_validate(own)) == own


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": 5},
        {"type": "object", "required": "name"},
        {"type": 5},
        {"type": "number", "minimum": "0"},
        {"type": "array", "items": [{"type": "string"}]},
    ],
)
def test_a_malformed_schema_fails_the_job_as_an_invalid_request(schema: dict[str, Any]) -> None:
    [result] = validate(completed('{"name": "x"}', schema))
    assert isinstance(result, JobFailed)
    assert result.status == "invalid_request"
    assert "malformed JSON Schema" in result.error


@pytest.mark.parametrize(
    ("output", "spelling", "error"),
    [
        ('{"value": "1e999"}', "float", "too large for a float"),
        ('{"value": 1e999}', "float", "not a number"),
        ('{"value": "1e1000000"}', "int", "more than 1000 digits"),
        ('{"value": "1e5000"}', "int", "more than 1000 digits"),
        ('{"value": ' + "9" * 5000 + "}", "int", "more than 1000 digits"),
        ('{"a": NaN}', "dict", "at $.a"),
        ({"a": float("inf")}, "dict", "at $.a"),
        ('{"value": "No idea"}', "bool", "an uncertain answer"),
        ('{"value": "Items (5)"}', "int", "in parentheses"),
        ("[" * 5000 + "]" * 5000, "list[int]", "nested deeper than 64 levels"),
        ('{"value": ' * 5000 + "1" + "}" * 5000, "int", "is not one number"),
    ],
    ids=lambda part: part[:30] if isinstance(part, str) else None,
)
def test_hostile_values_ask_for_a_repair_instead_of_crashing(
    output: Any, spelling: str, error: str
) -> None:
    [result] = validate(completed(output, spelling))
    assert isinstance(result, ValidationFailed), result
    assert error in result.error


def test_a_success_criterion_with_an_absurd_count_is_ignored_not_fatal() -> None:
    criteria = ["at least " + "9" * 5000 + " items", "at most 2 items"]
    [result] = validate(completed('{"value": [1, 2, 3]}', "list[int]", criteria))
    assert isinstance(result, ValidationFailed)
    assert "'at most 2 items' not met: found 3 items" in result.error
