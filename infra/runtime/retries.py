"""A worker's retry policy for one message, decided here and nowhere else: how many tries
postel gives a message (the queue's `max_tries`), how many arq is told, when a failed try is
retried, when a message is out of tries, and how long to wait before the next try.

The model layer's own retries (POSTEL_LLM_MAX_RETRIES, services.llm.retry) are a separate
budget, spent inside one try: an LLMError that escapes them fails the job, it is not retried
here again (infra/runtime/actor.py). Which policy a worker runs under is its spec's
(`WorkerSpec.retry_policy`, infra/runtime/actor.py)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from arq import Retry
from postel.infra.runtime.settings import QueueSettings
from postel.messages.errors import Unavailable

REDIS_LOST_RETRY_S = 1.0
"""A message whose run lost Redis is deferred this long: Redis is usually back by then."""


class RedisLost(Unavailable, Retry):
    """Run the message again: its run lost Redis (REDIS_UNAVAILABLE). An outage is never a
    verdict on a message, so the run gives back the try it was counted
    (infra/runtime/wake.py): however long an outage lasts, it spends none of the message's
    tries."""

    def __init__(self) -> None:
        super().__init__(defer=REDIS_LOST_RETRY_S)


@dataclass(frozen=True)
class HopRetries:
    max_tries: int
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 30.0

    @classmethod
    def of(cls, queue: QueueSettings) -> HopRetries:
        return cls(max_tries=queue.max_tries)

    @property
    def arq_tries(self) -> int:
        """One try more than postel's own limit: the handler itself sees the last try and
        dead-letters the message, instead of arq dropping it silently."""
        return self.max_tries + 1

    def retries(self, attempt: int) -> bool:
        """Whether a try that failed is followed by another."""
        return attempt < self.max_tries

    def exhausted(self, attempt: int) -> bool:
        """Whether a take of the message is past its tries (its worker died on each one)."""
        return attempt > self.max_tries

    def delay(self, exc: BaseException, attempt: int) -> float:
        """Seconds before the next try: exponential with jitter, or the error's own
        Retry-After when it names a longer one."""
        backoff = min(self.backoff_base_s * 2 ** (attempt - 1), self.backoff_cap_s)
        backoff *= random.uniform(0.8, 1.2)
        retry_after = getattr(exc, "retry_after", None)
        if isinstance(retry_after, int | float):
            return max(backoff, float(retry_after))
        return backoff
