"""The `scripted` provider: deterministic answers for tests, from a cassette (see
`services.llm.cassette` for the format) or from a responder callable.

A responder is any ``(LLMRequest) -> str`` function, sync or async; the prompt is
``request.messages``. It lets an oracle model, or a hand-written fake, stand in for a real
provider while keeping the provider's truncation behaviour."""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from postel.services.llm.cassette import CassetteEntry, load_cassette
from postel.services.llm.errors import CassetteExhausted
from postel.services.llm.models import LENGTH, LLMRequest, LLMResponse, Usage
from postel.services.llm.tokens import count_tokens, truncate_to_tokens

Responder = Callable[[LLMRequest], str | Awaitable[str]]

_EXCERPT = 200


class ScriptedClient:
    def __init__(
        self,
        entries: Sequence[CassetteEntry] | None = None,
        *,
        responder: Responder | None = None,
        name: str = "<inline cassette>",
        model: str = "scripted",
    ) -> None:
        if (entries is None) == (responder is None):
            raise ValueError("ScriptedClient needs exactly one of: cassette entries, a responder")
        self._entries = list(entries or [])
        self._used = [False] * len(self._entries)
        self._responder = responder
        self._name = name
        self._model = model

    @classmethod
    def from_cassette(cls, path: str | Path, *, model: str = "scripted") -> ScriptedClient:
        return cls(load_cassette(path), name=str(path), model=model)

    def __repr__(self) -> str:
        return f"ScriptedClient(cassette={self._name!r}, remaining={self.remaining})"

    @property
    def remaining(self) -> int:
        return self._used.count(False)

    async def aclose(self) -> None:
        return None

    async def complete(self, request: LLMRequest) -> LLMResponse:
        started = time.perf_counter()
        if self._responder is not None:
            answer = self._responder(request)
            text = await answer if inspect.isawaitable(answer) else answer
            entry = CassetteEntry(response=text)
        else:
            entry = self._take(request)
        text, finish_reason = entry.response, entry.finish_reason
        if not entry.verbatim:
            text, cut = truncate_to_tokens(text, request.max_tokens)
            finish_reason = LENGTH if cut else finish_reason
        return LLMResponse(
            text=text,
            finish_reason=finish_reason,
            usage=entry.usage
            or Usage(
                prompt_tokens=count_tokens(request.prompt_text()),
                completion_tokens=count_tokens(text),
                estimated=True,
            ),
            model=entry.model or request.model or self._model,
            latency_ms=(time.perf_counter() - started) * 1000,
        )

    def _take(self, request: LLMRequest) -> CassetteEntry:
        for index, entry in enumerate(self._entries):
            if not self._used[index] and entry.matches(request):
                self._used[index] = True
                return entry
        used = len(self._entries) - self.remaining
        excerpt = request.last_user_message()[:_EXCERPT]
        raise CassetteExhausted(
            f"cassette {self._name}: no unused entry matches the request "
            f"({used}/{len(self._entries)} entries used); last user message: {excerpt!r}"
        )
