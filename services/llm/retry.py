"""How long to wait before retrying a failed call: exponential backoff, or the server's word."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from pydantic import BaseModel, Field


class RetryPolicy(BaseModel):
    max_attempts: int = Field(default=4, ge=1, description="attempts in total, the first included")
    backoff_initial: float = Field(default=0.5, ge=0, description="seconds before the 2nd attempt")
    backoff_max: float = Field(default=8.0, ge=0, description="cap of the exponential backoff")
    retry_after_max: float = Field(
        default=30.0,
        ge=0,
        description=(
            "cap on a server's Retry-After for a call made outside any hop budget, so one "
            "header cannot stall a caller; under a hop budget the budget is the bound"
        ),
    )
    jitter: float = Field(
        default=0.1, ge=0, le=1, description="± fraction, so replicas hit by one 429 spread out"
    )

    def backoff(self, failed_attempts: int) -> float:
        """Delay after the `failed_attempts`-th failure (1-based)."""
        delay = min(self.backoff_max, self.backoff_initial * 2 ** (failed_attempts - 1))
        return delay * random.uniform(1 - self.jitter, 1 + self.jitter)

    def delay(
        self, failed_attempts: int, retry_after: str | None, budget_left: float | None = None
    ) -> float:
        """The wait before the next attempt. A server's Retry-After is honoured whole when the
        hop has a budget (`budget_left`, seconds): retrying sooner would only be refused again,
        and the caller fails at once when the wait does not fit. Without a budget it is capped
        at `retry_after_max`."""
        server_delay = parse_retry_after(retry_after)
        if server_delay is None:
            return self.backoff(failed_attempts)
        if budget_left is not None:
            return server_delay
        return min(server_delay, self.retry_after_max)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date; None if absent
    or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
