"""Ask a model for JSON that must fit a model class, with one repair turn on a bad answer.

The answer is read liberally (markdown fences, single quotes, trailing commas: see
`services.validation`) and then validated; when that fails, the model sees its own answer
and the validation error once and may correct itself."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from postel.messages.types import TypeSpec
from postel.services.llm.client import LLMClient
from postel.services.llm.models import ChatMessage, LLMRequest, LLMResponse
from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)

_ANY_JSON = TypeSpec(kind="dict")


@dataclass
class JsonAnswer(Generic[T]):
    value: T | None
    error: str | None
    responses: list[LLMResponse] = field(default_factory=list)


def read_json_as(text: str, model: type[T]) -> T:
    """Liberal JSON parse, then strict validation; raises ValueError naming the problem."""
    from postel.services.validation import CoercionError, coerce

    try:
        data: Any = coerce(text, _ANY_JSON)
    except CoercionError as exc:
        raise ValueError(f"not a JSON object: {exc}") from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}" for e in exc.errors()
        )
        raise ValueError(problems) from exc


async def ask_json(
    llm: LLMClient,
    messages: list[ChatMessage],
    model: type[T],
    *,
    max_tokens: int,
    temperature: float,
    repairs: int = 1,
    schema: dict[str, Any] | None = None,
) -> JsonAnswer[T]:
    conversation = list(messages)
    answer: JsonAnswer[T] = JsonAnswer(None, None)
    for _attempt in range(repairs + 1):
        request = LLMRequest(
            messages=conversation,
            max_tokens=max_tokens,
            temperature=temperature,
            json_schema=schema if schema is not None else model.model_json_schema(by_alias=True),
        )
        response = await llm.complete(request)
        answer.responses.append(response)
        try:
            answer.value = read_json_as(response.text, model)
            answer.error = None
            return answer
        except ValueError as exc:
            answer.error = str(exc)
        conversation = [
            *conversation,
            ChatMessage(role="assistant", content=response.text),
            ChatMessage(
                role="user",
                content=f"That answer could not be used: {answer.error}. "
                "Answer again with the corrected JSON object only.",
            ),
        ]
    return answer
