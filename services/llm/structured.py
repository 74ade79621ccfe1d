"""The `response_format` field for structured (JSON) output, in the dialect an endpoint speaks.

Which dialect to configure per endpoint:

- ``json_schema`` — OpenAI, vLLM, LiteLLM, Ollama's OpenAI API, llama.cpp's own C++
  ``llama-server``: ``{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}``.
- ``json_object`` — llama-cpp-python's server (postel's embedded local model), which answers
  the first form with a 500: ``{"type": "json_object", "schema": {...}}``; the schema is
  compiled into a grammar.
- ``none`` — endpoints without structured output; nothing is sent and the prompt alone must
  describe the JSON shape.
"""

from __future__ import annotations

from typing import Any, Literal

StructuredOutput = Literal["json_schema", "json_object", "none"]


def response_format(
    dialect: StructuredOutput, schema: dict[str, Any], *, name: str, strict: bool
) -> dict[str, Any] | None:
    if dialect == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": strict},
        }
    if dialect == "json_object":
        return {"type": "json_object", "schema": schema}
    return None
