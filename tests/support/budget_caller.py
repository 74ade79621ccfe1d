"""One process of the shared-budget tests: at START (epoch seconds, or `paused+S`: S seconds
after the route was first paused, however long this process took to start) it makes CALLS
calls through an OpenAI client guarded by the route's Redis gate, and prints each call's
budget wait in ms as JSON.

    python -m support.budget_caller REDIS_URL BASE_URL START CALLS RPM
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from postel.infra.store.budgets import RedisCallGate
from postel.infra.store.keys import Keyspace
from postel.services.llm import ChatMessage, LLMRequest, OpenAIClient, OpenAIConfig
from postel.services.llm.budget import call_budget
from postel.services.llm.retry import RetryPolicy
from redis.asyncio import Redis

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""

ROUTE = "test-route"


async def start_time(redis: Redis, start: str) -> float:
    if not start.startswith("paused+"):
        return float(start)
    while not await redis.hget(KEYS.route_budget(ROUTE), "paused_until"):
        await asyncio.sleep(0.005)
    return time.time() + float(start.removeprefix("paused+"))


async def main(redis_url: str, base_url: str, start: str, calls: int, rpm: int) -> None:
    redis = Redis.from_url(redis_url)
    gate = RedisCallGate(redis, KEYS, ROUTE, rpm=rpm)
    config = OpenAIConfig(base_url=base_url, model="m", retry=RetryPolicy(max_attempts=5))
    client = OpenAIClient(config, gate)
    await asyncio.sleep(max(0.0, await start_time(redis, start) - time.time()))
    waits = []
    for _ in range(calls):
        with call_budget(60):
            question = ChatMessage(role="user", content="hi")
            response = await client.complete(LLMRequest(messages=[question], max_tokens=8))
        waits.append(round(response.budget_wait_ms, 1))
    await client.aclose()
    await redis.aclose()
    sys.stdout.write(json.dumps(waits) + "\n")


if __name__ == "__main__":
    url, base, start, count, limit = sys.argv[1:6]
    asyncio.run(main(url, base, start, int(count), int(limit)))
