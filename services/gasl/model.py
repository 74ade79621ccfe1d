"""PROCESS and ANALYZE on the shared LLM layer: a GaslModel built from an LLMClient, with
prompts from the template registry."""

from __future__ import annotations

from typing import Any

from postel.messages.types import TypeSpec
from postel.services.llm.client import LLMClient
from postel.services.llm.models import LLMRequest
from postel.services.prompts import TEMPLATES, Capability, build_prompt
from postel.services.validation import CoercionError, coerce

_JSON_OBJECT = TypeSpec(kind="dict")


class LLMGaslModel:
    def __init__(
        self,
        llm: LLMClient,
        capability: Capability,
        max_tokens: int = 768,
        temperature: float = 0.0,
    ) -> None:
        self.llm = llm
        self.capability = capability
        self.max_tokens = max_tokens
        self.temperature = temperature

    async def complete_json(
        self, step: str, parts: dict[str, str], schema: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        prompt = build_prompt(
            TEMPLATES.get(f"gasl_{step}"), self.capability, context={"STEP": parts}
        )
        response = await self.llm.complete(
            LLMRequest(
                messages=prompt,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                json_schema=schema,
            )
        )
        try:
            parsed = coerce(response.text, _JSON_OBJECT)
        except CoercionError as exc:
            raise ValueError(f"the model's {step} answer is not a JSON object: {exc}") from exc
        meta = {
            "model": response.model,
            "prompt_tokens": response.usage.prompt_tokens,
            "completion_tokens": response.usage.completion_tokens,
            "finish_reason": response.finish_reason,
        }
        return parsed, meta
