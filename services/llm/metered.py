"""Counting what a handler's model calls cost, for its hop's event (llm_calls, tokens)."""

from __future__ import annotations

from dataclasses import dataclass

from postel.services.llm.call_log import current_call_log
from postel.services.llm.client import LLMClient
from postel.services.llm.models import LLMRequest, LLMResponse


@dataclass
class Meter:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    budget_wait_ms: float = 0.0


class MeteredClient:
    """Wraps one handler's use of a shared client; `meter` holds that handler's totals."""

    def __init__(self, client: LLMClient, capability: str = "", model: str | None = None) -> None:
        """`model`: the job's own model (its `options.model`), for calls that name none."""
        self.client = client
        self.capability = capability
        self.model = model
        self.meter = Meter()

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if self.model is not None and request.model is None:
            request = request.model_copy(update={"model": self.model})
        log = current_call_log()
        if log is None:
            response = await self.client.complete(request)
        else:
            with log.calling():
                response = await self.client.complete(request)
        self.meter.calls += 1
        self.meter.prompt_tokens += response.usage.prompt_tokens
        self.meter.completion_tokens += response.usage.completion_tokens
        self.meter.latency_ms += response.latency_ms
        self.meter.budget_wait_ms += response.budget_wait_ms
        if log is not None:
            log.append(request, response, self.capability)
        return response

    async def aclose(self) -> None:
        """The wrapped client is shared; closing the meter leaves it open."""
