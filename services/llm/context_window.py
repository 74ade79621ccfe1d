"""Keep every call inside the model's context window.

A request asks for `max_tokens` of completion on top of its prompt; a small local model
(2,048 tokens of context) rejects a default budget outright. This wrapper lowers
`max_tokens` to what fits next to the prompt, estimated with `services.llm.tokens` plus a
margin (the estimate is not the model's tokenizer), and refuses a prompt that leaves no
room with a clear error instead of a server's 400."""

from __future__ import annotations

from postel.services.llm.client import LLMClient
from postel.services.llm.errors import LLMRequestRejected
from postel.services.llm.models import LLMRequest, LLMResponse
from postel.services.llm.tokens import count_tokens

MIN_COMPLETION = 32
PROMPT_MARGIN = 1.25
OVERHEAD_TOKENS = 32  # chat template tokens around each message


class ContextWindowClient:
    def __init__(self, client: LLMClient, context_tokens: int) -> None:
        self.client = client
        self.context_tokens = context_tokens

    def room(self, request: LLMRequest) -> int:
        prompt = count_tokens(request.prompt_text()) * PROMPT_MARGIN
        overhead = OVERHEAD_TOKENS * len(request.messages)
        return int(self.context_tokens - prompt - overhead)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        room = self.room(request)
        if room < MIN_COMPLETION:
            raise LLMRequestRejected(
                f"the prompt (about {count_tokens(request.prompt_text())} tokens) leaves no "
                f"room for an answer in the model's {self.context_tokens}-token context window",
                status_code=413,
                server_message="prompt too long for the context window",
            )
        if request.max_tokens > room:
            request = request.model_copy(update={"max_tokens": room})
        return await self.client.complete(request)

    async def aclose(self) -> None:
        await self.client.aclose()
