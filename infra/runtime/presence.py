"""Which worker processes are alive: each process keeps a short-lived key describing itself,
refreshed while it runs and deleted when it stops, and its name in the set `postel:workers`
(`postel workers` and the dashboard list them). Each refresh also says which hops the process
is handling and whether a model call of theirs is in flight, and since when (`busy`): what a
job's page shows of a hop in progress, at most BEAT_S old."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from postel.infra.store.connect import REDIS_UNAVAILABLE
from postel.infra.store.events import INSTANCE
from postel.infra.store.keys import Keyspace
from postel.infra.store.outage import RideOut
from postel.messages import utc_now
from postel.services.llm.call_log import open_logs
from pydantic import BaseModel
from redis.asyncio import Redis

BEAT_S = 5.0
TTL_S = 15
TALLY_BEATS = 12
"""Every this many beats (a minute), the beat also renews the handled tallies' lifetime."""


class Busy(BaseModel):
    """A hop the process is handling now: its message, the model calls it has made (answered
    and failed) and, while one is in flight, since when."""

    stage: str
    message_id: str
    calls: int = 0
    failed_calls: int = 0
    calling_since: datetime | None = None


class Presence(BaseModel):
    instance: str = INSTANCE
    host: str = socket.gethostname()
    pid: int = os.getpid()
    workers: list[str]
    ingress: bool = False
    started_at: datetime
    busy: list[Busy] = []


def busy_now() -> list[Busy]:
    """The hops this process is handling, as of now."""
    return [
        Busy(
            stage=log.stage,
            message_id=log.message_id,
            calls=len(log.calls),
            failed_calls=log.failed,
            calling_since=datetime.fromtimestamp(log.calling_since, tz=UTC)
            if log.calling_since is not None
            else None,
        )
        for log in open_logs()
    ]


def announcement(workers: list[str], ingress: bool) -> Presence:
    return Presence(workers=workers, ingress=ingress, started_at=utc_now())


async def announce(redis: Redis, keyspace: Keyspace, presence: Presence) -> None:
    """Write the presence, with what the process is busy with now."""
    presence = presence.model_copy(update={"busy": busy_now()})
    async with redis.pipeline(transaction=False) as pipe:
        pipe.set(keyspace.worker(presence.instance), presence.model_dump_json(), ex=TTL_S)
        pipe.sadd(keyspace.workers, presence.instance)
        await pipe.execute()


async def keep_announcing(
    redis: Redis,
    keyspace: Keyspace,
    presence: Presence,
    renew_tallies: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Refresh until cancelled; a process that dies disappears within TTL_S. While Redis is
    unreachable, retry with backoff (the process is listed again as soon as it is back).
    `renew_tallies`, if given, runs at the first beat and every TALLY_BEATS after: the hops a
    worker process commits do not renew the tallies they count in (infra/store/events.py)."""
    reconnect = RideOut("presence")
    beats = 0
    with contextlib.suppress(asyncio.CancelledError):
        while True:
            await asyncio.sleep(BEAT_S)
            while True:
                try:
                    await announce(redis, keyspace, presence)
                    if renew_tallies is not None and beats % TALLY_BEATS == 0:
                        await renew_tallies()
                except REDIS_UNAVAILABLE as exc:
                    await reconnect.failed(exc)
                else:
                    reconnect.succeeded()
                    beats += 1
                    break


async def withdraw(redis: Redis, keyspace: Keyspace, presence: Presence) -> None:
    async with redis.pipeline(transaction=False) as pipe:
        pipe.delete(keyspace.worker(presence.instance))
        pipe.srem(keyspace.workers, presence.instance)
        await pipe.execute()


async def live_workers(redis: Redis, keyspace: Keyspace) -> list[Presence]:
    """The processes whose presence has not expired, read through the set of announced
    instances (not a keyspace scan); instances that died without withdrawing leave it."""
    instances = sorted(_text(i) for i in await redis.smembers(keyspace.workers))
    # a GET each, in one pipeline: on a cluster the presences are in different slots
    async with redis.pipeline(transaction=False) as pipe:
        for instance in instances:
            pipe.get(keyspace.worker(instance))
        values = await pipe.execute() if instances else []
    gone = [i for i, value in zip(instances, values, strict=True) if value is None]
    if gone:
        await redis.srem(keyspace.workers, *gone)
    return [Presence.model_validate_json(value) for value in values if value]


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


async def wait_for(
    redis: Redis, keyspace: Keyspace, worker: str, processes: int, timeout: float = 30.0
) -> None:
    """Until `processes` live processes run worker kind `worker` (TimeoutError otherwise)."""
    async with asyncio.timeout(timeout):
        while sum(worker in p.workers for p in await live_workers(redis, keyspace)) < processes:
            await asyncio.sleep(0.05)
