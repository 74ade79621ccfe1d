"""The `response_format` field for structured (JSON) output, and the grammar field for
constrained decoding, in the dialect an endpoint speaks.

Which dialect to configure per endpoint:

- ``json_schema`` — OpenAI, vLLM, LiteLLM, Ollama's OpenAI API, llama.cpp's own C++
  ``llama-server``: ``{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}``.
- ``json_object`` — llama-cpp-python's server (postel's embedded local model), which answers
  the first form with a 500: ``{"type": "json_object", "schema": {...}}``; the schema is
  compiled into a grammar. Its compiler fails on an array whose ``items`` is ``{}`` or
  ``true`` (pydantic writes that for ``list[Any]``) and then silently falls back to
  unconstrained JSON, so such ``items`` are dropped first; they allow anything either way.
- ``none`` — endpoints without structured output; nothing is sent and the prompt alone must
  describe the JSON shape.
"""

from __future__ import annotations

from typing import Any, Literal

StructuredOutput = Literal["json_schema", "json_object", "none"]

# How an endpoint takes a grammar to constrain decoding with (a request's `grammar`):
# - ``gbnf`` — llama.cpp's ``llama-server`` and llama-cpp-python's server (postel's local
#   model): the GBNF text as the request's ``grammar`` field;
# - ``guided_grammar`` — vLLM: the same text as ``guided_grammar``;
# - ``none`` — endpoints that take no grammar (OpenAI's own API): nothing is sent.
# A request sent with a grammar sends no response_format: the grammar already fixes the
# JSON, and llama.cpp would put its JSON grammar in the grammar's place.
GrammarDialect = Literal["gbnf", "guided_grammar", "none"]


def grammar_field(dialect: GrammarDialect, grammar: str | None) -> dict[str, str]:
    """The request field carrying `grammar` for this endpoint; none without a grammar, or for
    an endpoint that takes none."""
    if grammar is None or dialect == "none":
        return {}
    return {"grammar" if dialect == "gbnf" else "guided_grammar": grammar}


def response_format(
    dialect: StructuredOutput, schema: dict[str, Any], *, name: str, strict: bool
) -> dict[str, Any] | None:
    if dialect == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": strict},
        }
    if dialect == "json_object":
        return {"type": "json_object", "schema": _without_open_items(schema)}
    return None


_NAME_MAPS = {"properties", "patternProperties", "$defs", "definitions"}


def _without_open_items(node: Any, names: bool = False) -> Any:
    """`names`: node maps names to schemas, so a key "items" there is a name, not a keyword."""
    if isinstance(node, dict):
        return {
            key: _without_open_items(value, not names and key in _NAME_MAPS)
            for key, value in node.items()
            if names or not (key == "items" and value in ({}, True))
        }
    if isinstance(node, list):
        return [_without_open_items(value) for value in node]
    return node
