"""The time a model call may take, shared by everything under one hop.

A hop has a budget (derived by the runtime from its worker's job_timeout and the job's
deadline). Every model call made under `call_budget(...)` fits its attempts, its backoff
and any Retry-After wait inside what is left, and fails as soon as it cannot: a hanging
endpoint or a 429 with a long Retry-After ends the call with an LLMError, in time for the
handler to record the failure, instead of outliving the hop and being cut off silently.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar

_DEADLINE: ContextVar[float | None] = ContextVar("postel_llm_call_deadline", default=None)


@contextlib.contextmanager
def call_budget(seconds: float) -> Iterator[None]:
    """Model calls inside this block must end within `seconds` from now (nested budgets
    only shrink)."""
    deadline = time.monotonic() + max(seconds, 0.0)
    outer = _DEADLINE.get()
    token = _DEADLINE.set(deadline if outer is None else min(outer, deadline))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def remaining_budget() -> float | None:
    """Seconds left for model calls, or None when no budget is set."""
    deadline = _DEADLINE.get()
    return None if deadline is None else deadline - time.monotonic()
