"""A model that answers from a job's recorded calls (`postel replay`).

Each call is matched by where it is made: the hop's message id and the call's ordinal in the
hop (services/llm/call_log.py), so a replayed job gets, call for call, the answers the
recorded run got. A call whose request differs from the recorded one (a changed prompt, a
changed schema or token limit), or that the recording does not have at all, is a divergence:
it is kept, with a diff of the two prompts, and then either fails (strict, or with no other
model to ask) or goes to the fallback model, so a changed prompt can be tried for real.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Literal

from postel.services.llm.call_log import LoggedCall, current_call_log
from postel.services.llm.client import LLMClient
from postel.services.llm.errors import LLMError
from postel.services.llm.models import LLMRequest, LLMResponse
from pydantic import BaseModel, Field


class Divergence(BaseModel):
    """A call the recording cannot answer: asked differently, or not asked at all."""

    kind: Literal["changed", "unrecorded"]
    stage: str
    message_id: str
    ordinal: int
    diff: str
    route: str | None = Field(
        default=None, description="where the call would have gone, named by the replay"
    )

    def describe(self) -> str:
        if self.kind == "changed":
            what = "asked the model something other than what the recording holds"
        else:
            what = "asked the model a call the recording does not have"
        where = f"; it would go to {self.route}" if self.route else ""
        return f"{self.stage} ({self.message_id}, call {self.ordinal}) {what}{where}"


class ReplayError(LLMError):
    """A strict replay met a call the recording cannot answer."""


def _asked(request: LLMRequest) -> tuple[object, ...]:
    """What makes two requests the same question."""
    return (
        [(m.role, m.content) for m in request.messages],
        request.json_schema,
        request.max_tokens,
        request.temperature,
        request.stop,
    )


def _prompt_lines(request: LLMRequest | None) -> list[str]:
    if request is None:
        return []
    lines: list[str] = []
    for message in request.messages:
        lines.append(f"[{message.role}]")
        lines.extend(message.content.splitlines())
    lines.append(f"[max_tokens {request.max_tokens}, temperature {request.temperature}]")
    return lines


def prompt_diff(recorded: LLMRequest | None, asked: LLMRequest) -> str:
    return "\n".join(
        difflib.unified_diff(
            _prompt_lines(recorded),
            _prompt_lines(asked),
            fromfile="recorded",
            tofile="replayed",
            lineterm="",
            n=2,
        )
    )


class ReplayClient:
    """Answers calls from `calls`; `divergences` lists what it could not answer. `route_of`
    names, for a stage, the route a call it cannot answer would go to (in the divergence)."""

    def __init__(
        self,
        calls: list[LoggedCall],
        fallback: LLMClient | None = None,
        strict: bool = False,
        route_of: Callable[[str], str] | None = None,
    ) -> None:
        self._recorded = {(call.message_id, call.ordinal): call for call in calls}
        self.fallback = fallback
        self.strict = strict
        self.route_of = route_of
        self.divergences: list[Divergence] = []
        self.served = 0
        self.forwarded = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        hop = current_call_log()
        stage, message_id = (hop.stage, hop.message_id) if hop else ("(outside a hop)", "")
        ordinal = hop.next_ordinal() if hop else 0
        recorded = self._recorded.get((message_id, ordinal))
        if recorded is not None and _asked(recorded.request) == _asked(request):
            self.served += 1
            return recorded.response
        divergence = Divergence(
            kind="changed" if recorded is not None else "unrecorded",
            stage=stage,
            message_id=message_id,
            ordinal=ordinal,
            diff=prompt_diff(recorded.request if recorded else None, request),
            route=self.route_of(stage) if self.route_of else None,
        )
        self.divergences.append(divergence)
        if self.strict or self.fallback is None:
            raise ReplayError(f"replay: {divergence.describe()}")
        self.forwarded += 1
        return await self.fallback.complete(request)

    async def aclose(self) -> None:
        if self.fallback is not None:
            await self.fallback.aclose()
