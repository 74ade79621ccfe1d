"""A scripted model that remembers every request it answered, for asserting on prompts."""

from __future__ import annotations

from pathlib import Path

from postel.services.llm import LLMRequest, LLMResponse, ScriptedClient

CASSETTES = Path(__file__).parents[1] / "pipeline" / "cassettes"


class Spy:
    """The scripted model, remembering every request it answered."""

    def __init__(self, cassette: str) -> None:
        self.inner = ScriptedClient.from_cassette(CASSETTES / cassette)
        self.requests: list[LLMRequest] = []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def prompts_with(self, text: str) -> list[str]:
        return [r.prompt_text() for r in self.requests if text in r.prompt_text()]
