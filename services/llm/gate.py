"""A model route's shared budget, as the model client sees it.

Before each attempt the client asks the route's gate for a permit (`acquire`, which waits
until the route's requests/min, tokens/min and concurrent calls allow it, and fails with
LLMRateLimited if that wait would outlast the hop's time budget); after the attempt it
returns the permit with the tokens the call really used (`release`); a 429 with Retry-After
pauses the whole route (`pause`), for every process that shares it. Waiting is not a failure
and costs no try; the time waited is reported with the answer (`budget_wait_ms`).
The runtime implements the gate on Redis (infra/store/budgets.py); without one, nothing waits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Permit:
    holder: str
    estimated_tokens: int
    waited_s: float


class CallGate(Protocol):
    async def acquire(self, estimated_tokens: int) -> Permit: ...

    async def release(self, permit: Permit, used_tokens: int) -> None: ...

    async def pause(self, seconds: float) -> None: ...
