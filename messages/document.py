"""The sections document: the generator's output format.

Each section has one content type, and each of its elements one shape (ELEMENT_SHAPES):
a heading {"level", "text"}, a paragraph {"text"}, a bullet or numbered list {"items"}, a
table {"headers", "rows"}, a code block {"language", "code"}. Reading stays liberal (an element
is kept as the model wrote it); the shapes are what the model is asked for, and what
`document_output_schema` hands a grammar-constrained model.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

ContentType = Literal["heading", "paragraph", "bullet_list", "numbered_list", "table", "code_block"]


class HeadingElement(BaseModel):
    level: int
    text: str


class TextElement(BaseModel):
    text: str


class ItemsElement(BaseModel):
    items: list[str]


class TableElement(BaseModel):
    headers: list[str]
    rows: list[list[str]]


class CodeElement(BaseModel):
    language: str
    code: str


ELEMENT_SHAPES: dict[ContentType, type[BaseModel]] = {
    "heading": HeadingElement,
    "paragraph": TextElement,
    "bullet_list": ItemsElement,
    "numbered_list": ItemsElement,
    "table": TableElement,
    "code_block": CodeElement,
}


class Section(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str | None = None
    content_type: ContentType
    elements: list[dict[str, Any]] = Field(default_factory=list)


class SectionsDocument(BaseModel):
    model_config = ConfigDict(extra="allow")

    sections: list[Section] = Field(default_factory=list)


def _untitled(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _untitled(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_untitled(v) for v in schema]
    return schema


def document_output_schema() -> dict[str, Any]:
    """The JSON Schema a structured-output model is held to: sections whose elements each
    have one of the element shapes, so a constrained model cannot fill the document with
    arbitrary objects. Inline and without minLength/minItems: llama-cpp-python's grammar
    compiler stops constraining on those (the validator's quality check catches empty text)."""
    shapes = [_untitled(m.model_json_schema()) for m in dict.fromkeys(ELEMENT_SHAPES.values())]
    text = {"type": "string"}
    section = {
        "type": "object",
        "properties": {
            "id": text,
            "content_type": {"type": "string", "enum": list(get_args(ContentType))},
            "elements": {"type": "array", "items": {"anyOf": shapes}},
        },
        "required": ["id", "content_type", "elements"],
    }
    return {
        "type": "object",
        "properties": {"sections": {"type": "array", "items": section}},
        "required": ["sections"],
    }
