"""A model route's shared budget (infra/store/budgets.py), decided by one script per acquire:
requests and tokens refill at their per-minute rate up to one second's share, concurrent
calls hold leased slots, a 429's pause holds everyone, and nothing is taken by a call that
must wait. Each decision on clocks the test chooses, in process on fakeredis."""

from __future__ import annotations

from arq.connections import ArqRedis
from postel.infra.store.budgets import _ACQUIRE, _PAUSE, _RELEASE, RedisCallGate
from postel.infra.store.keys import Keyspace

T0 = 1_800_000_000_000  # ms
LEASE_MS = 300_000


class Route:
    """One route's scripts, run at the clock the test gives."""

    def __init__(self, pool: ArqRedis, keyspace: Keyspace) -> None:
        self.pool = pool
        self.keys = [keyspace.route_budget("r"), keyspace.route_slots("r")]
        self._acquire = pool.register_script(_ACQUIRE)
        self._release = pool.register_script(_RELEASE)
        self._pause = pool.register_script(_PAUSE)

    async def acquire(
        self,
        now: int,
        *,
        rpm: int = 0,
        tpm: int = 0,
        most: int = 0,
        tokens: int = 0,
        who: str = "a",
    ) -> int:
        """0 when the call may go, else the milliseconds to wait."""
        allowed, wait_ms = await self._acquire(
            keys=self.keys, args=[now, rpm, tpm, most, tokens, who, LEASE_MS]
        )
        assert int(allowed) == (int(wait_ms) == 0)
        return int(wait_ms)

    async def release(self, who: str, give_back: int = 0) -> None:
        await self._release(keys=self.keys, args=[who, give_back])

    async def pause(self, now: int, until: int) -> None:
        await self._pause(keys=self.keys[:1], args=[until, now])


async def test_requests_refill_at_their_rate_and_burst_one_seconds_share(
    fake_pool: ArqRedis, keyspace: Keyspace
) -> None:
    route = Route(fake_pool, keyspace)
    assert await route.acquire(T0, rpm=60) == 0
    assert await route.acquire(T0, rpm=60) == 1000, "60/min: the next request in a second"
    assert await route.acquire(T0 + 500, rpm=60) == 500
    assert await route.acquire(T0 + 1000, rpm=60) == 0
    assert await route.acquire(T0 + 60_000, rpm=60) == 0, "a quiet minute banks one second"
    assert await route.acquire(T0 + 60_000, rpm=60) == 1000


async def test_tokens_are_taken_as_estimated_and_given_back_as_used(
    fake_pool: ArqRedis, keyspace: Keyspace
) -> None:
    route = Route(fake_pool, keyspace)
    assert await route.acquire(T0, tpm=6000, tokens=100) == 0
    assert await route.acquire(T0, tpm=6000, tokens=100) == 1000, "100 tokens/s refill"
    await route.release("a", give_back=60)  # the call used 40 of its 100
    assert await route.acquire(T0, tpm=6000, tokens=60) == 0


async def test_a_call_that_waits_takes_nothing(fake_pool: ArqRedis, keyspace: Keyspace) -> None:
    route = Route(fake_pool, keyspace)
    assert await route.acquire(T0, rpm=60, tpm=6000, tokens=100) == 0
    assert await route.acquire(T0 + 1000, rpm=60, tpm=6000, tokens=200) == 1000
    assert await route.acquire(T0 + 1000, rpm=60, tpm=6000, tokens=100) == 0, "still there"


async def test_concurrent_calls_hold_slots_until_released_or_their_lease_ends(
    fake_pool: ArqRedis, keyspace: Keyspace
) -> None:
    route = Route(fake_pool, keyspace)
    assert await route.acquire(T0, most=1, who="a") == 0
    assert await route.acquire(T0, most=1, who="b") == 50
    await route.release("a")
    assert await route.acquire(T0, most=1, who="b") == 0
    assert await route.acquire(T0 + LEASE_MS + 1, most=1, who="c") == 0, "b died holding it"


async def test_a_pause_holds_every_caller_and_a_later_pause_wins(
    fake_pool: ArqRedis, keyspace: Keyspace
) -> None:
    route = Route(fake_pool, keyspace)
    await route.pause(T0, until=T0 + 3000)
    await route.pause(T0, until=T0 + 1000)
    assert await route.acquire(T0 + 500) == 2500
    assert await route.acquire(T0 + 3000) == 0


async def test_an_unlimited_route_always_goes(fake_pool: ArqRedis, keyspace: Keyspace) -> None:
    route = Route(fake_pool, keyspace)
    assert [await route.acquire(T0, tokens=10**6) for _ in range(100)] == [0] * 100


async def test_the_gate_uses_these_scripts(fake_pool: ArqRedis, keyspace: Keyspace) -> None:
    gate = RedisCallGate(fake_pool, keyspace, "r", rpm=60, max_concurrent=1)
    permit = await gate.acquire(10)
    assert await fake_pool.zcard(keyspace.route_slots("r")) == 1
    await gate.release(permit, 10)
    assert await fake_pool.zcard(keyspace.route_slots("r")) == 0
