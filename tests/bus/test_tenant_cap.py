"""A tenant's cap in flight (infra/store/turns.py, `running_set`): with
POSTEL_TENANT_MAX_IN_FLIGHT (or the tenant's own in POSTEL_TENANT_MAX_IN_FLIGHT_BY), no more
of a tenant's hops run at once in a stage than its cap, while other tenants' hops run past
them, and every capped job still ends; on a Redis Cluster the cap holds in each lane."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from postel.infra.client.client import Client
from postel.infra.runtime.actor import HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import Settings
from postel.infra.store.connect import keyspace_of
from postel.messages import Envelope, JobOptions

from postel.testing.relay import RELAY_WORKERS

CAP = 2
FLOOD = 6


async def most_running_at_once(url: str, settings: Settings, flood: list[str]) -> int:
    """Tenant `flood`'s jobs `flood`, then one of tenant `other`, on relay stages whose
    intent hops of `flood` wait for a gate: how many of them ran at once at most."""
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
    async with (
        LocalSystem(settings, redis_url=url, specs=specs),
        Client(url, settings) as client,
    ):
        for job_id in flood:
            await client.submit(job_id, options=JobOptions(tenant="flood"), job_id=job_id)
        async with asyncio.timeout(30):
            while running["flood"] < CAP:
                await asyncio.sleep(0.02)
        other = await client.submit("o", options=JobOptions(tenant="other"))
        assert await client.result(other, timeout=30) == "o", "another tenant runs past them"
        assert running["flood"] == CAP, "the capped tenant's other messages wait, ready"
        gate.set()
        for job_id in flood:
            assert await client.result(job_id, timeout=30) == job_id
    return most["flood"]


@pytest.mark.parametrize("cap_of", ["every tenant", "this tenant"])
async def test_a_tenant_runs_at_most_its_cap_at_once_and_nothing_waits_for_ever(
    redis_url: str, settings: Settings, cap_of: str
) -> None:
    if cap_of == "every tenant":
        settings.tenant_max_in_flight = CAP
    else:
        settings.tenant_max_in_flight = 1  # the tenant's own cap overrides it
        settings.tenant_max_in_flight_by = {"flood": CAP}
    flood = [f"flood-{n}" for n in range(FLOOD)]
    assert await most_running_at_once(redis_url, settings, flood) == CAP


async def test_on_a_cluster_the_cap_holds_in_each_lane(
    cluster_url: str, settings: Settings
) -> None:
    settings.tenant_max_in_flight = CAP
    keyspace = keyspace_of(cluster_url)
    lane = keyspace.lane_of("flood-0")
    candidates = (f"flood-{n}" for n in range(10_000))
    flood = [job_id for job_id in candidates if keyspace.lane_of(job_id) == lane][:FLOOD]
    assert await most_running_at_once(cluster_url, settings, flood) == CAP
