"""A script hashed once runs on a server that has never seen it, and again after the server
lost its scripts (a restart, a failover to a replica that never ran it)."""

from __future__ import annotations

import redis.asyncio as aioredis
from postel.infra.store.scripts import LuaScript


async def test_a_script_loads_itself_where_it_is_missing(redis_client: aioredis.Redis) -> None:
    script = LuaScript("return redis.call('INCRBY', KEYS[1], ARGV[1])")
    assert await script(redis_client, ["n"], [2]) == 2
    assert await redis_client.script_exists(script.sha) == [True]
    await redis_client.script_flush()
    assert await script(redis_client, ["n"], [3]) == 5
    assert await redis_client.script_exists(script.sha) == [True]
