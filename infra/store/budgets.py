"""Shared model budgets: requests/min, tokens/min and concurrent calls per model route,
enforced across every process of a fleet through Redis.

A route is one model at one endpoint (its base URL and model name): every worker, in every
process, whose calls go there shares its budget. Limits come from POSTEL_LLM_RPM,
POSTEL_LLM_TPM and POSTEL_LLM_MAX_CONCURRENT, or a worker kind's own
(POSTEL_<WORKER>__LLM_RPM, ...); unset or 0 is unlimited.

- Requests and tokens are token buckets refilled continuously at the per-minute rate. A
  bucket holds at most one second's share (at least one request, and at least the tokens of
  the call asking), which is the burst: in any minute the endpoint sees at most the limit plus
  that burst. A call's tokens are estimated before it (its prompt plus its max_tokens) and
  corrected with the usage it reports after.
- Concurrent calls hold a slot in a sorted set, with a lease (`SLOT_LEASE_S`), so a process
  killed mid-call frees its slot by itself.
- A 429 with Retry-After pauses the route for everyone until then.

Each acquire is one Lua script: refill, check every limit and the pause, and either take the
request, the tokens and a slot together or take nothing and say how long to wait. A caller
waits and asks again; waiting is not a failure and costs no try, unless it would outlast the
hop's time budget, which fails the call like a Retry-After that long would.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid

import structlog
from postel.infra.store.keys import Keyspace
from postel.services.llm.budget import remaining_budget
from postel.services.llm.errors import LLMRateLimited
from postel.services.llm.gate import Permit
from redis.asyncio import Redis

log = structlog.get_logger(__name__)

SLOT_LEASE_S = 300
"""How long a concurrency slot outlives a process that died holding it."""
MAX_WAIT_STEP_S = 1.0
"""A waiting caller asks again at least this often (a slot may free sooner than computed)."""

# KEYS: the route's bucket hash, its slots sorted set. ARGV: now (ms), requests/min,
# tokens/min, max concurrent, estimated tokens, holder id, slot lease (ms).
# Returns {1, 0} when the call may go, {0, ms to wait} when it may not (nothing taken).
_ACQUIRE = """
local now = tonumber(ARGV[1])
local rpm, tpm, most = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local estimate = tonumber(ARGV[5])
local state = redis.call('HMGET', KEYS[1], 'requests', 'tokens', 'at', 'paused_until')
local paused_until = tonumber(state[4]) or 0
if paused_until > now then
  return {0, paused_until - now}
end
local elapsed = math.max(now - (tonumber(state[3]) or now), 0)
local wait = 0
local requests, tokens = 0, 0
if rpm > 0 then
  local cap = math.max(1, rpm / 60)
  requests = math.min(cap, (tonumber(state[1]) or cap) + elapsed * rpm / 60000)
  if requests < 1 then wait = math.max(wait, (1 - requests) * 60000 / rpm) end
end
if tpm > 0 then
  local cap = math.max(estimate, tpm / 60)
  tokens = math.min(cap, (tonumber(state[2]) or cap) + elapsed * tpm / 60000)
  if tokens < estimate then wait = math.max(wait, (estimate - tokens) * 60000 / tpm) end
end
if most > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  if redis.call('ZCARD', KEYS[2]) >= most then wait = math.max(wait, 50) end
end
if wait > 0 then
  return {0, math.ceil(wait)}
end
redis.call('HSET', KEYS[1], 'requests', requests - (rpm > 0 and 1 or 0),
           'tokens', tokens - (tpm > 0 and estimate or 0), 'at', now)
redis.call('PEXPIRE', KEYS[1], 120000)
if most > 0 then
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[7]), ARGV[6])
  redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[7]))
end
return {1, 0}
"""

# KEYS: bucket hash, slots. ARGV: holder, tokens to give back (negative: take more).
_RELEASE = """
redis.call('ZREM', KEYS[2], ARGV[1])
if tonumber(ARGV[2]) ~= 0 and redis.call('HEXISTS', KEYS[1], 'tokens') == 1 then
  redis.call('HINCRBYFLOAT', KEYS[1], 'tokens', ARGV[2])
end
return 1
"""

# KEYS: bucket hash. ARGV: paused until (ms). A later pause wins.
_PAUSE = """
local until_ms = tonumber(ARGV[1])
if until_ms > (tonumber(redis.call('HGET', KEYS[1], 'paused_until')) or 0) then
  redis.call('HSET', KEYS[1], 'paused_until', until_ms)
  redis.call('PEXPIRE', KEYS[1], math.max(120000, until_ms - tonumber(ARGV[2])))
end
return 1
"""


def route_id(base_url: str | None, model: str) -> str:
    """The budget shared by every call to `model` at `base_url`."""
    return hashlib.sha256(f"{base_url or 'local'}\n{model}".encode()).hexdigest()[:16]


class RedisCallGate:
    """services.llm.gate.CallGate on Redis, for one route."""

    def __init__(
        self,
        redis: Redis,
        keyspace: Keyspace,
        route: str,
        *,
        rpm: int = 0,
        tpm: int = 0,
        max_concurrent: int = 0,
    ) -> None:
        self.redis = redis
        self.route = route
        self.limits = (rpm, tpm, max_concurrent)
        self._keys = [keyspace.route_budget(route), keyspace.route_slots(route)]
        self._acquire = redis.register_script(_ACQUIRE)
        self._release = redis.register_script(_RELEASE)
        self._pause = redis.register_script(_PAUSE)

    async def acquire(self, estimated_tokens: int) -> Permit:
        holder = uuid.uuid4().hex
        started = time.monotonic()
        while True:
            now_ms = int(time.time() * 1000)
            allowed, wait_ms = await self._acquire(
                keys=self._keys,
                args=[now_ms, *self.limits, estimated_tokens, holder, SLOT_LEASE_S * 1000],
            )
            if int(allowed):
                return Permit(holder, estimated_tokens, time.monotonic() - started)
            wait_s = int(wait_ms) / 1000
            left = remaining_budget()
            if left is not None and wait_s >= left:
                raise LLMRateLimited(
                    f"model route {self.route}: its shared budget frees in {wait_s:.1f}s, "
                    f"after the hop's time budget ({left:.1f}s left)"
                )
            await asyncio.sleep(min(wait_s, MAX_WAIT_STEP_S))

    async def release(self, permit: Permit, used_tokens: int) -> None:
        give_back = permit.estimated_tokens - used_tokens if self.limits[1] else 0
        await self._release(keys=self._keys, args=[permit.holder, give_back])

    async def pause(self, seconds: float) -> None:
        now_ms = int(time.time() * 1000)
        log.warning("model route paused by a 429", route=self.route, seconds=seconds)
        await self._pause(keys=self._keys[:1], args=[now_ms + int(seconds * 1000), now_ms])
