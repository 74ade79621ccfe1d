"""Worker presence through the set of announced instances: a process that died without
withdrawing disappears when its key expires, and leaves the set."""

from __future__ import annotations

import redis.asyncio as aioredis
from postel.infra.runtime.presence import Presence, announce, live_workers, withdraw
from postel.infra.store.keys import Keyspace
from postel.messages import utc_now

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""


async def test_an_expired_presence_is_not_listed_and_leaves_the_set(
    redis_client: aioredis.Redis,
) -> None:
    alive = Presence(instance="host:1", workers=["gasl"], started_at=utc_now())
    dead = Presence(instance="host:2", workers=["planner"], started_at=utc_now())
    for presence in (alive, dead):
        await announce(redis_client, KEYS, presence)
    await redis_client.delete(KEYS.worker(dead.instance))  # its key expired: the process died
    assert [p.instance for p in await live_workers(redis_client, KEYS)] == ["host:1"]
    assert await redis_client.smembers(KEYS.workers) == {b"host:1"}
    await withdraw(redis_client, KEYS, alive)
    assert await live_workers(redis_client, KEYS) == []
    assert await redis_client.scard(KEYS.workers) == 0
