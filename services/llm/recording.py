"""Record mode: wrap a real provider and write every exchange to a cassette, so any real run
can be replayed by the scripted provider."""

from __future__ import annotations

from pathlib import Path

from postel.services.llm.cassette import CassetteEntry, save_cassette
from postel.services.llm.client import LLMClient
from postel.services.llm.models import LLMRequest, LLMResponse


class RecordingClient:
    """Starts a fresh cassette at `path` and rewrites it after every call, so a crashed run
    still leaves everything recorded so far."""

    def __init__(self, inner: LLMClient, path: str | Path) -> None:
        self._inner = inner
        self._path = Path(path)
        self._entries: list[CassetteEntry] = []

    def __repr__(self) -> str:
        return f"RecordingClient(inner={self._inner!r}, path={str(self._path)!r})"

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def complete(self, request: LLMRequest) -> LLMResponse:
        response = await self._inner.complete(request)
        # Matching on the whole last user message makes replay follow content, not just
        # order, so concurrent callers replay correctly.
        self._entries.append(
            CassetteEntry(
                match=request.last_user_message() or None,
                response=response.text,
                finish_reason=response.finish_reason,
                verbatim=True,
                usage=response.usage,
                model=response.model,
            )
        )
        save_cassette(self._path, self._entries)
        return response
