"""Cancel stops spending: a running hop of a job that has finished (cancelled, say) is
stopped within `STOP_POLL_S` and a round trip, not left to run to its end.

Each hop runs its handler inside its time limit's asyncio scope (infra/runtime/actor.py)
and registers that scope here while it runs. One task per process (`HopStops`), running only
while hops are registered, asks Redis every `STOP_POLL_S` for the status of the jobs those
hops belong to, in one pipeline (a hop quicker than that is seldom asked about at all), and
brings the limit of every hop of a finished job to now: asyncio then cancels the handler
where it waits. An in-flight model call's HTTP request is closed (httpx closes the
connection of a cancelled request), a GASL plan stops at its next check
(services/gasl/stage.py), and the hop ends `dropped` without committing: nothing more of the
job runs, and no other hop is touched. A deadline passing during a call needs none of this:
the hop's limit already ends at the job's deadline.

Polling, not Pub/Sub: postel's minimal ACL grants no channels, a subscriber misses what is
published while it reconnects, and the poll costs Redis nothing while no hop is slow.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import structlog
from postel.infra.store.connect import REDIS_UNAVAILABLE
from postel.infra.store.keys import Keyspace
from redis.asyncio import Redis

log = structlog.get_logger(__name__)

STOP_POLL_S = 0.25
"""How often the jobs of running hops are asked about: a cancel reaches a running hop within
this and a round trip."""

_FINISHED = (b"completed", b"failed")


@dataclass
class Watch:
    """A running hop's time limit, and whether it was brought forward because its job had
    finished."""

    job_id: str
    scope: asyncio.Timeout
    stopped: bool = False


class HopStops:
    """The running hops of one process, by job, and the task that stops those whose job has
    finished."""

    def __init__(self, redis: Redis, keyspace: Keyspace) -> None:
        self.redis = redis
        self.keyspace = keyspace
        self._watches: dict[str, list[Watch]] = {}
        self._poller: asyncio.Task[None] | None = None

    @contextlib.contextmanager
    def watching(self, job_id: str, scope: asyncio.Timeout) -> Iterator[Watch]:
        """Register a hop of `job_id` running under `scope` while the block runs."""
        watch = Watch(job_id, scope)
        self._watches.setdefault(job_id, []).append(watch)
        if self._poller is None or self._poller.done():
            self._poller = asyncio.create_task(self._poll())
        try:
            yield watch
        finally:
            watches = self._watches.get(job_id, [])
            if watch in watches:
                watches.remove(watch)
            if not watches:
                self._watches.pop(job_id, None)

    def stop(self, job_id: str) -> int:
        """End the running hops of `job_id` now; how many there were."""
        watches = self._watches.get(job_id, [])
        now = asyncio.get_running_loop().time()
        for watch in watches:
            if not watch.stopped and not watch.scope.expired():
                watch.stopped = True
                watch.scope.reschedule(now)
        return len(watches)

    async def _poll(self) -> None:
        while self._watches:
            await asyncio.sleep(STOP_POLL_S)
            job_ids = list(self._watches)
            if not job_ids:
                return
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for job_id in job_ids:
                        pipe.hget(self.keyspace.job(job_id), "status")
                    statuses = await pipe.execute()
            except REDIS_UNAVAILABLE as exc:
                log.warning("could not ask whether running jobs were cancelled", error=str(exc))
                continue
            for job_id, status in zip(job_ids, statuses, strict=True):
                if status in _FINISHED and self.stop(job_id):
                    log.info("the job finished while a hop ran; the hop is stopped", job_id=job_id)
