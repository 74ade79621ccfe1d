"""One planner call to the model, sampled with the job's effective settings."""

from __future__ import annotations

from postel.messages.job import JobRequest
from postel.services.ipv import effective_settings
from postel.services.llm import ChatMessage, LLMClient, LLMRequest


async def ask(
    llm: LLMClient, messages: list[ChatMessage], request: JobRequest, *, max_tokens: int
) -> str:
    """The model's answer text. `max_tokens` caps the answer below the profile's limit: a
    planner answer is a small JSON object, and small models have small contexts. LLM errors
    propagate: the worker's retry policy owns them."""
    settings = effective_settings(request)
    response = await llm.complete(
        LLMRequest(
            messages=messages,
            max_tokens=min(settings.max_tokens, max_tokens),
            temperature=settings.temperature,
            model=request.options.model,
        )
    )
    return response.text
