"""A prompt template: the fixed parts of a prompt, kept as data.

Parts, in the order they are rendered: ROLE (who the model is), GUIDELINES (titled lists of
rules), REFERENCES (titled lists too, for capable models only), INSTRUCTIONS (what to do,
plus one line per output field), OUTPUT FORMAT (how to answer, plus the expected shape of
each field), EXAMPLES, then the data of one call (context blocks and the USER TEXT). SYSTEM
replaces the default system message."""

from __future__ import annotations

from typing import Any

from postel.services.prompts.errors import PromptError
from pydantic import BaseModel, ConfigDict, Field, field_validator


class OutputField(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    instruction: str = Field(min_length=1, description="what the value means")
    format: str | None = Field(default=None, description="its expected shape, e.g. 'number'")


class Example(BaseModel):
    model_config = ConfigDict(frozen=True)

    user_text: str
    answer: str | dict[str, str] = Field(
        description="the whole expected answer, or one value per output field"
    )


class PromptTemplate(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    system: str | None = None
    role: str | None = None
    guidelines: dict[str, list[str]] = Field(
        default_factory=dict, description="section title -> rules; a plain list is GUIDELINES"
    )
    references: dict[str, list[str]] = Field(
        default_factory=dict,
        description="section title -> longer reference lists, after the guidelines; only "
        "capabilities with room for them get them",
    )
    instructions: str | None = None
    fields: list[OutputField] = Field(default_factory=list)
    output_format: str | None = None
    examples: list[Example] = Field(default_factory=list)

    @field_validator("guidelines", mode="before")
    @classmethod
    def _plain_list_is_guidelines(cls, value: Any) -> Any:
        return {"GUIDELINES": value} if isinstance(value, list) else value

    def check(self) -> None:
        """Refuse a prompt that asks for nothing: the model must be told what to do and what
        to answer with."""
        if not self.instructions and not self.fields:
            raise PromptError(
                f"prompt {self.name!r} asks for nothing: give it instructions or output fields"
            )
        if not self.output_format and not any(field.format for field in self.fields):
            raise PromptError(
                f"prompt {self.name!r} has no output format: give it an output_format text "
                "or output fields with a format"
            )
