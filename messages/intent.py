"""The intent of a request: the nine fields of the single intent-analysis call.

Field names are snake_case in Python and camelCase on the wire, as the model is asked to
write them. Liberal in what it accepts (Postel's law): thresholds written as percentages are
read as fractions and clamped to [0, 1]; an unknown dataType becomes "unknown"."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

DataType = Literal["numbers", "text", "documents", "analysis", "code", "unknown"]
_DATA_TYPES = frozenset(get_args(DataType))


class _Camel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True
    )


def _fraction(value: Any) -> Any:
    """Liberal on input: 80 or "80%" means 0.8; anything past 1 after that is clamped."""
    if isinstance(value, str) and value.strip().endswith("%"):
        value = value.strip()[:-1]
    try:
        number = float(value)
    except (TypeError, ValueError):
        return value
    if 1.0 < number <= 100.0 and (isinstance(value, str) or number == int(number)):
        number /= 100.0
    return min(max(number, 0.0), 1.0)


class QualityRequirements(_Camel):
    accuracy_threshold: float = Field(default=0.8, ge=0.0, le=1.0)
    completeness_threshold: float = Field(default=0.8, ge=0.0, le=1.0)

    @field_validator("accuracy_threshold", "completeness_threshold", mode="before")
    @classmethod
    def _liberal_fraction(cls, value: Any) -> Any:
        return _fraction(value)


class LinkedEntity(_Camel):
    """A node of the job's graph that the request names, found by the intent stage's entity
    linker (services.linking), not by the model."""

    mention: str = Field(description="the request's words that name it")
    id: str = Field(description="the node's id in the graph")
    entity_type: str = Field(default="", description="the node's entity_type")
    score: float = Field(ge=0.0, le=1.0, description="1.0 exact, lower for looser matches")
    how: Literal["exact", "normalized", "alias", "fuzzy"]


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
    # Set by the intent stage after the model's answer, never taken from the model (whatever
    # it wrote is replaced): the graph's nodes the request names, best first.
    linked_entities: list[LinkedEntity] = Field(default_factory=list)

    @field_validator("data_type", mode="before")
    @classmethod
    def _unknown_data_type(cls, value: Any) -> Any:
        """A kind outside the six is `unknown`, not an error: it only guides later prompts."""
        text = str(value).strip().lower() if value is not None else "unknown"
        return text if text in _DATA_TYPES else "unknown"

    @field_validator("detected_language", mode="before")
    @classmethod
    def _language_code(cls, value: Any) -> Any:
        return str(value).strip().lower()[:8] if value else value


class TaskIntentOverride(_Camel):
    """What one task may override of the job's intent, for that task only."""

    data_type: DataType | None = None
    expected_formats: list[str] | None = None
    quality_requirements: QualityRequirements | None = None

    def apply(self, intent: Intent) -> Intent:
        changes = self.model_dump(exclude_none=True, by_alias=False)
        return intent.model_copy(update={k: getattr(self, k) for k in changes})
