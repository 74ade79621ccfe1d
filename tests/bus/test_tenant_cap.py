"""A tenant's cap in flight (infra/store/turns.py, `running_set`): with
POSTEL_TENANT_MAX_IN_FLIGHT (or the tenant's own in POSTEL_TENANT_MAX_IN_FLIGHT_BY), no more
of a tenant's hops run at once in a stage than its cap, while other tenants' hops run past
them, and every capped job still ends."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from postel.infra.client.client import Client
from postel.infra.runtime.actor import HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import Settings
from postel.messages import Envelope, JobOptions

from postel.testing.relay import RELAY_WORKERS

CAP = 2


@pytest.mark.parametrize("cap_of", ["every tenant", "this tenant"])
async def test_a_tenant_runs_at_most_its_cap_at_once_and_nothing_waits_for_ever(
    redis_url: str, settings: Settings, cap_of: str
) -> None:
    running: Counter[str] = Counter()
    most: Counter[str] = Counter()
    gate = asyncio.Event()
    relay = RELAY_WORKERS[0]

    async def intent(message: Envelope, runtime: Runtime) -> HopOutcome:
        running[message.tenant] += 1
        most[message.tenant] = max(most[message.tenant], running[message.tenant])
        try:
            if message.tenant == "flood":
                await gate.wait()
            return await relay.handle(message, runtime)
        finally:
            running[message.tenant] -= 1

    specs = [WorkerSpec(relay.name, relay.accepts, intent), *RELAY_WORKERS[1:]]
    settings.concurrency = 8
    if cap_of == "every tenant":
        settings.tenant_max_in_flight = CAP
    else:
        settings.tenant_max_in_flight = 1  # the tenant's own cap overrides it
        settings.tenant_max_in_flight_by = {"flood": CAP}
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs),
        Client(redis_url, settings) as client,
    ):
        flood = [await client.submit(f"f{n}", options=JobOptions(tenant="flood")) for n in range(6)]
        async with asyncio.timeout(20):
            while running["flood"] < CAP:
                await asyncio.sleep(0.02)
        other = await client.submit("o", options=JobOptions(tenant="other"))
        assert await client.result(other, timeout=20) == "o", "another tenant runs past them"
        assert running["flood"] == CAP, "the capped tenant's other messages wait, ready"
        gate.set()
        for n, job_id in enumerate(flood):
            assert await client.result(job_id, timeout=20) == f"f{n}"
    assert most["flood"] == CAP
