"""What the planner's two questions (the task plan, the HDT round) share: the job's sampling
settings, and reading fields the model should have written as text."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from postel.messages.job import JobRequest
from postel.services.ipv import effective_settings
from postel.services.llm import ChatMessage
from postel.services.llm.ask import JsonQuestion

T = TypeVar("T")


def planner_question(
    prompt: Callable[[Mapping[str, str]], list[ChatMessage]],
    read: Callable[[str], T],
    request: JobRequest,
    max_tokens: int,
) -> JsonQuestion[T]:
    """A planner question sampled with the job's effective settings. `max_tokens` caps the
    answer below the profile's limit: a planner answer is a small JSON object, and small
    models have small contexts."""
    settings = effective_settings(request)
    return JsonQuestion(
        prompt=prompt,
        read=read,
        max_tokens=min(settings.max_tokens, max_tokens),
        temperature=settings.temperature,
        model=request.options.model,
    )


def text_of(value: Any) -> str:
    """A field the model should have written as text, as text (None and blanks are "")."""
    if value is None:
        return ""
    return value.strip() if isinstance(value, str) else str(value)
