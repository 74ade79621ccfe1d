"""PROCESS and ANALYZE on the shared LLM layer: a GaslModel built from an LLMClient, with
prompts from the template registry, asked through the one JSON question (`ask_json`): an
answer off the step's schema gets one repair, then the step fails `schema_mismatch`."""

from __future__ import annotations

from typing import Any

from postel.services.gasl.errors import StepFailure
from postel.services.llm.ask import JsonQuestion, ask_json, reads_schema
from postel.services.llm.client import LLMClient
from postel.services.prompts import TEMPLATES, Capability, build_prompt


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
        template = TEMPLATES.get(f"gasl_{step}")
        question: JsonQuestion[dict[str, Any]] = JsonQuestion(
            prompt=lambda repair: build_prompt(
                template, self.capability, context={"STEP": parts, **repair}
            ),
            read=reads_schema(schema),
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            schema=schema,
        )
        answer = await ask_json(self.llm, question)
        if answer.value is None:
            raise StepFailure(
                f"the model's {step} answer does not match its schema after one repair: "
                f"{answer.error}",
                "schema_mismatch",
            )
        response = answer.responses[-1]
        meta = {
            "model": response.model,
            "prompt_tokens": sum(r.usage.prompt_tokens for r in answer.responses),
            "completion_tokens": sum(r.usage.completion_tokens for r in answer.responses),
            "finish_reason": response.finish_reason,
        }
        return answer.value, meta
