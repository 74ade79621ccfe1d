"""The one way postel asks a model for JSON: a liberal read, a strict check, one repair.

The answer is read liberally (markdown fences, prose around it, single quotes, trailing
commas: see `services.validation`) and then checked strictly by the question's reader. When
that fails, the question's prompt is built again with two more delimited parts, the
previous answer (cut short) and the problem with it, and the model answers once more.
The repair is a fresh prompt, not a longer conversation: small models keep their small
context, and the previous answer stays data, never instructions.

Intent analysis, the task plan, the HDT round (which asks once: an unusable round answer
becomes a probe plan and the problem goes to the next round) and GASL's PROCESS and ANALYZE
all ask through `ask_json`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from postel.messages.errors import InvalidInput
from postel.messages.types import TypeSpec
from postel.services.llm.client import LLMClient
from postel.services.llm.models import ChatMessage, LLMRequest, LLMResponse
from postel.services.validation import CoercionError, coerce
from pydantic import BaseModel, ValidationError

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

_OBJECT = TypeSpec(kind="dict")
PREVIOUS_ANSWER_CHARS = 1000  # enough to see the mistake, small enough for a 2k context


class AnswerError(InvalidInput):
    """A model answer that cannot be used; the message is worded for the model."""


@dataclass(frozen=True)
class JsonQuestion(Generic[T]):
    """What to ask and how to read the answer.

    `prompt` builds the chat messages from extra context parts (none on the first call, the
    previous answer and its problem on a repair); `read` turns the answer's text into the
    value or raises ValueError (AnswerError, CoercionError) naming what is wrong."""

    prompt: Callable[[Mapping[str, str]], list[ChatMessage]]
    read: Callable[[str], T]
    max_tokens: int
    temperature: float
    schema: dict[str, Any] | None = None
    model: str | None = None
    grammar: str | None = None  # GBNF, for endpoints that constrain decoding with one


@dataclass
class JsonAnswer(Generic[T]):
    """The value (None if no answer could be used), the problem with each unusable answer,
    and every response."""

    value: T | None = None
    problems: list[str] = field(default_factory=list)
    responses: list[LLMResponse] = field(default_factory=list)

    @property
    def error(self) -> str | None:
        """Why no answer could be used (None once one was)."""
        return None if self.value is not None or not self.problems else self.problems[-1]

    @property
    def repaired(self) -> bool:
        return self.value is not None and bool(self.problems)


def read_object(text: str) -> dict[str, Any]:
    """The JSON object in `text`: fences, prose around it and JSON slop are tolerated."""
    try:
        value: dict[str, Any] = coerce(text, _OBJECT)
    except CoercionError as error:
        raise AnswerError(f"the answer is not one JSON object ({error})") from None
    return value


def reads_as(model: type[M]) -> Callable[[str], M]:
    """A reader: the JSON object in the text, validated as `model`."""

    def read(text: str) -> M:
        try:
            return model.model_validate(read_object(text))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}"
                for e in exc.errors()
            )
            raise AnswerError(problems) from exc

    return read


def reads_schema(schema: dict[str, Any]) -> Callable[[str], Any]:
    """A reader: the JSON value in the text, checked against a JSON Schema."""
    spec = TypeSpec(kind="json_schema", json_schema=schema)
    return lambda text: coerce(text, spec)


def repair_parts(answer: str, problem: str) -> dict[str, str]:
    """The two parts a repair prompt adds."""
    return {
        "PREVIOUS ANSWER": answer[:PREVIOUS_ANSWER_CHARS],
        "PROBLEM": f"Your previous answer could not be used: {problem}. "
        "Answer again with the JSON object described above.",
    }


async def ask_json(llm: LLMClient, question: JsonQuestion[T], *, repairs: int = 1) -> JsonAnswer[T]:
    """Ask, read, and repair up to `repairs` times; model errors propagate (the runtime's
    retry policy owns them)."""
    answer: JsonAnswer[T] = JsonAnswer()
    extra: Mapping[str, str] = {}
    for _attempt in range(repairs + 1):
        request = LLMRequest(
            messages=question.prompt(extra),
            max_tokens=question.max_tokens,
            temperature=question.temperature,
            json_schema=question.schema,
            model=question.model,
            grammar=question.grammar,
        )
        response = await llm.complete(request)
        answer.responses.append(response)
        try:
            answer.value = question.read(response.text)
            return answer
        except ValueError as exc:
            answer.problems.append(str(exc))
        extra = repair_parts(response.text, answer.problems[-1])
    return answer
