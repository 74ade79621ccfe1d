"""The intent of a request: the nine fields of the single intent-analysis call (seed 002).

Field names are snake_case in Python and camelCase on the wire, as the model is asked to
write them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

DataType = Literal["numbers", "text", "documents", "analysis", "code", "unknown"]


class _Camel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True
    )


class QualityRequirements(_Camel):
    accuracy_threshold: float = Field(default=0.8, ge=0.0, le=1.0)
    completeness_threshold: float = Field(default=0.8, ge=0.0, le=1.0)


class Intent(_Camel):
    detected_language: str = Field(min_length=2, max_length=8)
    normalized_request: str = Field(min_length=1)
    intent: str = Field(min_length=1)
    context_items: list[Any] = Field(default_factory=list)
    primary_goal: str = Field(min_length=1)
    data_type: DataType = "unknown"
    expected_formats: list[str] = Field(default_factory=list)
    quality_requirements: QualityRequirements = Field(default_factory=QualityRequirements)
    success_criteria: list[str] = Field(default_factory=list)


class TaskIntentOverride(_Camel):
    """What one task may override of the job's intent, for that task only."""

    data_type: DataType | None = None
    expected_formats: list[str] | None = None
    quality_requirements: QualityRequirements | None = None

    def apply(self, intent: Intent) -> Intent:
        changes = self.model_dump(exclude_none=True, by_alias=False)
        return intent.model_copy(update={k: getattr(self, k) for k in changes})
