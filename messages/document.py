"""The sections document: the generator's output format (seed 002).

Element shapes per content type (kept liberal on input, documented here):
  heading        {"level": int, "text": str}
  paragraph      {"text": str}
  bullet_list    {"items": [str, ...]}
  numbered_list  {"items": [str, ...]}
  table          {"headers": [str, ...], "rows": [[cell, ...], ...]}
  code_block     {"language": str, "code": str}
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ContentType = Literal["heading", "paragraph", "bullet_list", "numbered_list", "table", "code_block"]


class Section(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str | None = None
    content_type: ContentType
    elements: list[dict[str, Any]] = Field(default_factory=list)


class SectionsDocument(BaseModel):
    model_config = ConfigDict(extra="allow")

    sections: list[Section] = Field(default_factory=list)
