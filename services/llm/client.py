"""The one interface the rest of postel uses to call a model."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from postel.services.llm.models import LLMRequest, LLMResponse


@runtime_checkable
class LLMClient(Protocol):
    async def complete(self, request: LLMRequest) -> LLMResponse:
        """One chat completion. Raises `LLMError` subclasses on failure."""
        ...

    async def aclose(self) -> None:
        """Release connections; the client is unusable afterwards."""
        ...
