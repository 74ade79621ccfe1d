"""Reading the model's JSON answers liberally, and the error that goes back to the model."""

from __future__ import annotations

from typing import Any

from postel.messages.errors import PostelError
from postel.messages.types import TypeSpec
from postel.services.validation import CoercionError, coerce

_OBJECT = TypeSpec(kind="dict")


class AnswerError(PostelError, ValueError):
    """A model answer the planner cannot use; the message is worded for the model."""


def read_object(text: str) -> dict[str, Any]:
    """The JSON object in `text`: fences, prose around it and JSON slop are tolerated."""
    try:
        value: dict[str, Any] = coerce(text, _OBJECT)
    except CoercionError as error:
        raise AnswerError(f"the answer is not one JSON object ({error})") from None
    return value


def text_of(value: Any) -> str:
    """A field the model should have written as text, as text (None and blanks are "")."""
    if value is None:
        return ""
    return value.strip() if isinstance(value, str) else str(value)
