"""Which worker processes are alive: each process keeps a short-lived key describing itself,
refreshed while it runs and deleted when it stops (`postel workers` lists them)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from datetime import datetime

from postel.infra import keys
from postel.infra.events import INSTANCE
from postel.infra.outage import REDIS_UNAVAILABLE, RideOut
from postel.messages import utc_now
from pydantic import BaseModel
from redis.asyncio import Redis

BEAT_S = 5.0
TTL_S = 15


class Presence(BaseModel):
    instance: str = INSTANCE
    host: str = socket.gethostname()
    pid: int = os.getpid()
    workers: list[str]
    ingress: bool = False
    started_at: datetime


def announcement(workers: list[str], ingress: bool) -> Presence:
    return Presence(workers=workers, ingress=ingress, started_at=utc_now())


async def announce(redis: Redis, presence: Presence) -> None:
    await redis.set(keys.worker(presence.instance), presence.model_dump_json(), ex=TTL_S)


async def keep_announcing(redis: Redis, presence: Presence) -> None:
    """Refresh until cancelled; a process that dies disappears within TTL_S. While Redis is
    unreachable, retry with backoff (the process is listed again as soon as it is back)."""
    reconnect = RideOut("presence")
    with contextlib.suppress(asyncio.CancelledError):
        while True:
            await asyncio.sleep(BEAT_S)
            while True:
                try:
                    await announce(redis, presence)
                except REDIS_UNAVAILABLE as exc:
                    await reconnect.failed(exc)
                else:
                    reconnect.succeeded()
                    break


async def withdraw(redis: Redis, presence: Presence) -> None:
    await redis.delete(keys.worker(presence.instance))


async def live_workers(redis: Redis) -> list[Presence]:
    names = [key async for key in redis.scan_iter(match=keys.worker("*"), count=500)]
    values = await redis.mget(names) if names else []
    return sorted(
        (Presence.model_validate_json(value) for value in values if value),
        key=lambda p: p.instance,
    )


async def wait_for(redis: Redis, worker: str, processes: int, timeout: float = 30.0) -> None:
    """Until `processes` live processes run worker kind `worker` (TimeoutError otherwise)."""
    async with asyncio.timeout(timeout):
        while sum(worker in p.workers for p in await live_workers(redis)) < processes:
            await asyncio.sleep(0.05)
