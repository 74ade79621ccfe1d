"""Riding out Redis outages: the loops of a worker process (the queue loop, the ingress
consumer, presence) retry with backoff instead of exiting, and log each attempt.

A loop calls `failed(exc)` after each failed attempt (it sleeps the backoff, or re-raises once
Redis has been unreachable for `give_up_s`) and `succeeded()` after a successful one. Redis
restarted from its append-only file holds every queued job, so a process that reconnects
resumes where it stopped. A Redis that answers but refuses (wrong password, missing ACL
permission, TLS failure: infra/store/connect.refusal) is not an outage: `failed` raises it
at once as RedisRefused.
"""

from __future__ import annotations

import asyncio
import time

import structlog
from postel.infra.store.connect import refusal

log = structlog.get_logger(__name__)

FIRST_RETRY_S = 0.1
MAX_RETRY_S = 2.0


class RideOut:
    """Backoff for one loop: 0.1 s doubling to 2 s between attempts, so a loop resumes within
    about 2 s of Redis coming back, however long it was away."""

    def __init__(self, what: str, give_up_s: float | None = None) -> None:
        self.what = what
        self.give_up_s = give_up_s
        self.attempts = 0
        self._down_since: float | None = None

    async def failed(self, exc: Exception) -> None:
        refused = refusal(exc)
        if refused is not None:
            # Redis answered: a wrong password, a missing permission or a TLS failure is a
            # configuration error that no retry mends
            log.error("redis refused the connection", what=self.what, error=str(refused))
            raise refused from exc
        now = time.monotonic()
        if self._down_since is None:
            self._down_since = now
        self.attempts += 1
        down_s = now - self._down_since
        if self.give_up_s is not None and down_s >= self.give_up_s:
            log.error(
                "redis unreachable; giving up",
                what=self.what,
                attempts=self.attempts,
                down_s=round(down_s, 1),
                error=str(exc),
            )
            raise exc
        delay = min(FIRST_RETRY_S * 2 ** (self.attempts - 1), MAX_RETRY_S)
        log.warning(
            "redis unreachable; retrying",
            what=self.what,
            attempt=self.attempts,
            down_s=round(down_s, 1),
            retry_in_s=delay,
            error=str(exc),
        )
        await asyncio.sleep(delay)

    def succeeded(self) -> None:
        if self._down_since is None:
            return
        log.info(
            "redis reachable again",
            what=self.what,
            attempts=self.attempts,
            down_s=round(time.monotonic() - self._down_since, 1),
        )
        self._down_since = None
        self.attempts = 0
