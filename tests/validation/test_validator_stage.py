"""The validator's handling of the generator's structured value answers."""

from __future__ import annotations

import pytest
from postel.messages import (
    GenerationCompleted,
    Intent,
    JobCompleted,
    JobProgress,
    JobRequest,
    TypeSpec,
    ValidationFailed,
)
from postel.services.generation.stage import value_schema
from postel.services.validation.stage import validate


def completed(output: str, spelling: str) -> GenerationCompleted:
    intent = Intent(detected_language="en", normalized_request="x", intent="x", primary_goal="x")
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
