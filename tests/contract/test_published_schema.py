"""The JSON Schemas `postel schema DIR` publishes describe what postel accepts: checked with a
JSON Schema validator from PyPI (`jsonschema`) in the dialect each document declares, against
docs/API.md's own producer example and every spelling of a desired type, and compared with
what postel's models accept."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from postel.infra.cli.schema import DIALECT, write_schemas
from postel.messages import JobRequest
from pydantic import ValidationError

API_PAGE = Path(__file__).parents[2] / "docs" / "API.md"

ACCEPTED_TYPES: list[Any] = [
    "float",
    "list[str]",
    "LIST [ Float ]",
    "list[list[int]]",
    "list[" * 15 + "int" + "]" * 15,
    "integer",
    "document",
    {"type": "object", "properties": {"total": {"type": "number"}}, "required": ["total"]},
    {"properties": {"name": {"type": "string"}}},
    {"kind": "float"},
    {"kind": "list", "items": "int"},
    {"kind": "list", "items": {"kind": "json_schema", "schema": {"type": "string"}}},
    {"kind": "json_schema", "schema": {"type": "array", "items": {"type": "integer"}}},
]
REFUSED_TYPES: list[Any] = [
    "nosuchtype",
    "list[nosuchtype]",
    # brackets that do not balance: one grammar (messages/types.py) for both, so the schema
    # refuses them as the API does
    "list[str]]",
    "list[[str]",
    "list[str",
    "list[" * 16 + "int" + "]" * 16,
    5,
    {"kind": "decimal"},
    {"kind": "float", "extra": 1},
    {"title": "no type and no properties"},
]


@pytest.fixture(scope="module")
def job_request_schema(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    directory = tmp_path_factory.mktemp("schemas")
    write_schemas(directory)
    return json.loads((directory / "job_request.schema.json").read_text())


def validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def test_every_published_document_declares_its_dialect_and_is_a_valid_schema(
    tmp_path: Path,
) -> None:
    for path in write_schemas(tmp_path):
        schema = json.loads(path.read_text())
        assert schema["$schema"] == DIALECT, path.name
        assert jsonschema.validators.validator_for(schema) is jsonschema.Draft202012Validator
        jsonschema.Draft202012Validator.check_schema(schema)


def test_the_api_pages_producer_examples_validate(job_request_schema: dict[str, Any]) -> None:
    examples = re.findall(r"XADD postel:ingress '\*' job '(\{.*?\})'", API_PAGE.read_text())
    assert examples, "docs/API.md's producer example was not found"
    for example in examples:
        validator(job_request_schema).validate(json.loads(example))
        JobRequest.model_validate_json(example)


@pytest.mark.parametrize("desired_type", ACCEPTED_TYPES, ids=repr)
def test_every_accepted_desired_type_is_published(
    job_request_schema: dict[str, Any], desired_type: Any
) -> None:
    body = {"prompt": "p", "desired_type": desired_type}
    JobRequest.model_validate(body)
    validator(job_request_schema).validate(body)


@pytest.mark.parametrize("desired_type", REFUSED_TYPES, ids=repr)
def test_a_refused_desired_type_is_refused_by_the_schema_too(
    job_request_schema: dict[str, Any], desired_type: Any
) -> None:
    body = {"prompt": "p", "desired_type": desired_type}
    with pytest.raises(ValidationError):
        JobRequest.model_validate(body)
    assert not validator(job_request_schema).is_valid(body)


def test_a_message_schema_takes_a_spelled_desired_type(tmp_path: Path) -> None:
    write_schemas(tmp_path)
    schema = json.loads((tmp_path / "job.submitted.schema.json").read_text())
    message = {
        "type": "job.submitted",
        "job_id": "j1",
        "message_id": "j1:submitted",
        "request": {"prompt": "p", "desired_type": "list[str]"},
    }
    validator(schema).validate(message)
