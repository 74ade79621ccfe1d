"""The desired type of a job's result, as a serializable description (TypeSpec).

A TypeSpec travels in every message that needs to know what the caller wants back. It is
written the way a Python annotation reads (`float`, `list[int]`, `document`) or, for
structured results, as a JSON Schema.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from postel.messages.errors import LimitExceeded
from postel.messages.limits import MAX_TYPE_DEPTH, MAX_VALUE_DEPTH, check_json_text
from pydantic import BaseModel, ConfigDict, Field, GetJsonSchemaHandler, model_validator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

TypeKind = Literal["float", "int", "bool", "str", "list", "dict", "document", "json_schema"]

_SCALARS: tuple[str, ...] = ("float", "int", "bool", "str", "dict", "document")
_ALIASES: dict[str, str] = {
    "string": "str",
    "text": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "object": "dict",
    "list": "list[str]",
}


class TypeSpec(BaseModel):
    """What the caller wants back: a scalar, a list of a TypeSpec, a dict, a document or a
    JSON Schema. `TypeSpec.parse("list[float]")` reads the annotation spelling."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", populate_by_name=True, serialize_by_alias=True
    )

    kind: TypeKind
    items: TypeSpec | None = None
    json_schema: dict[str, Any] | None = Field(default=None, alias="schema")

    @model_validator(mode="before")
    @classmethod
    def _accept_annotation_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            return _parse_spelling(value)
        looks_like_schema = isinstance(value, dict) and ("type" in value or "properties" in value)
        if looks_like_schema and "kind" not in value:
            return {"kind": "json_schema", "schema": value}
        return value

    @model_validator(mode="after")
    def _check_shape(self) -> TypeSpec:
        if self.kind == "list" and self.items is None:
            raise ValueError("a list TypeSpec needs `items`, e.g. list[float]")
        if self.kind != "list" and self.items is not None:
            raise ValueError(f"`items` only belongs to list, not {self.kind}")
        if self.kind == "json_schema" and not self.json_schema:
            raise ValueError("a json_schema TypeSpec needs a non-empty `schema`")
        if self.depth() > MAX_TYPE_DEPTH:
            raise LimitExceeded("type nesting limit", MAX_TYPE_DEPTH, f"got {self.depth()}")
        if self.json_schema is not None:
            check_json_text(
                json.dumps(self.json_schema), what="JSON Schema", max_depth=MAX_VALUE_DEPTH
            )
        return self

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        """Published as every form the validator accepts: a spelling, the object form, or a
        bare JSON Schema (see `_accept_annotation_string`)."""
        generated = handler(core_schema)
        definition = handler.resolve_ref_schema(generated)
        object_form = {k: v for k, v in definition.items() if k not in ("title", "description")}
        definition.clear()
        definition.update(
            title="TypeSpec",
            description=(
                'The desired type: a spelling such as "float" or "list[str]", the object '
                'form {"kind": ...}, or a bare JSON Schema (an object with `type` or '
                "`properties` and no `kind`)."
            ),
            anyOf=[
                {"type": "string", "pattern": spelling_pattern(), "examples": ["list[float]"]},
                object_form,
                {
                    "type": "object",
                    "description": "a JSON Schema for the result",
                    "anyOf": [{"required": ["type"]}, {"required": ["properties"]}],
                    "not": {"required": ["kind"]},
                },
            ],
        )
        return generated

    def depth(self) -> int:
        """1 for a scalar, one more per `list[...]` around it."""
        return 1 if self.items is None else 1 + self.items.depth()

    @classmethod
    def parse(cls, spelling: str) -> TypeSpec:
        """Read `float`, `list[int]`, `document` ... into a TypeSpec."""
        return cls.model_validate(spelling)

    def spelling(self) -> str:
        """The annotation-style spelling; the inverse of `parse` for non-schema kinds."""
        if self.kind == "list":
            assert self.items is not None
            return f"list[{self.items.spelling()}]"
        if self.kind == "json_schema":
            return "json_schema"
        return self.kind


def _anycase(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in word)


# The grammar of a spelling, once: a word (a scalar or an alias, any case) inside up to
# MAX_TYPE_DEPTH - 1 `list[...]`, the brackets balanced. Written as a regex both Python and
# JSON Schema (ECMA-262) read, so the parser and the published schema accept the same texts.
_WORDS = "|".join(_anycase(w) for w in sorted({*_SCALARS, *_ALIASES}, key=len, reverse=True))
_OPEN = rf"{_anycase('list')} ?\[\s*"
_CLOSE = r"\s*\]"
_SPELLING = re.compile(
    r"^\s*(?:"
    + "|".join(rf"(?:{_OPEN}){{{n}}}(?:{_WORDS})(?:{_CLOSE}){{{n}}}" for n in range(MAX_TYPE_DEPTH))
    + r")\s*$"
)
_OPENS = re.compile(rf"\s*((?:{_OPEN})*)")


def spelling_pattern() -> str:
    """The regex (ECMA-262, as JSON Schema `pattern` takes) of every spelling `parse` reads;
    `parse` reads a text by this same pattern."""
    return _SPELLING.pattern


def _parse_spelling(spelling: str) -> dict[str, Any]:
    lists = _OPENS.match(spelling)
    opened = len(re.findall(_OPEN, lists.group(1))) if lists else 0
    if opened >= MAX_TYPE_DEPTH:
        raise LimitExceeded("type nesting limit", MAX_TYPE_DEPTH, f"in {spelling[:60]!r}...")
    if not _SPELLING.fullmatch(spelling):
        known = ", ".join([*_SCALARS, "list[T]"])
        raise ValueError(f"unknown type {spelling!r}: expected one of {known}, or a JSON Schema")
    word = re.sub(rf"^\s*(?:{_OPEN})*|(?:{_CLOSE})*\s*$", "", spelling).lower()
    parsed: dict[str, Any] = {"kind": word} if word in _SCALARS else _parse_spelling(_ALIASES[word])
    for _ in range(opened):
        parsed = {"kind": "list", "items": parsed}
    return parsed


TypeSpec.model_rebuild()
