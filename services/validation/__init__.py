"""IPV VALIDATE: raw model output to the desired type, then quality checks.

Public API:
    coerce(raw, spec, *, locale=None) -> value          raises CoercionError
    says_nothing(value, spec) -> reason | None          an answer with nothing in it
    check_quality(value, spec, intent=None, *, strict=False) -> [problem]
    describe_type(spec) -> str                          for prompts and repair requests
    check_schema(schema)                                raises UnsupportedSchemaError
    check_desired_type(spec)                            the same, for every schema in a TypeSpec
"""

from postel.services.validation.coerce import coerce
from postel.services.validation.describe import describe_type
from postel.services.validation.errors import CoercionError, UnsupportedSchemaError
from postel.services.validation.quality import check_quality, says_nothing
from postel.services.validation.schema import check_desired_type, check_schema

__all__ = [
    "CoercionError",
    "UnsupportedSchemaError",
    "check_desired_type",
    "check_quality",
    "check_schema",
    "coerce",
    "describe_type",
    "says_nothing",
]
