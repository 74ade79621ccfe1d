"""Job control on the dashboard and the API: the jobs list filters by class, tenant and
scheduled; the queues page and API show each class's and tenant's waiting messages and
oldest wait; /metrics has the same with the tenant label capped; the API's jobs get its
tenant."""

from __future__ import annotations

import httpx
from postel.infra.client.client import Client
from postel.infra.runtime.settings import Settings
from postel.infra.web.metrics import METRIC_TENANTS, OTHER_TENANT
from postel.messages import JobOptions
from prometheus_client.parser import text_string_to_metric_families


async def _waiting(settings: Settings, redis_url: str) -> dict[str, str]:
    """Jobs submitted with no worker running: everything waits."""
    async with Client(redis_url, settings) as client:
        ids = {
            "batch": await client.submit("b", options=JobOptions(priority="batch", tenant="acme")),
            "urgent": await client.submit("u", options=JobOptions(priority="interactive")),
            "later": await client.submit("l", options=JobOptions(delay_s=3600, tenant="acme")),
        }
        for n in range(6):  # beyond acme's window: two wait held
            await client.submit(f"more {n}", options=JobOptions(priority="batch", tenant="acme"))
    return ids


async def test_the_jobs_list_filters_by_class_tenant_and_scheduled(
    api: httpx.AsyncClient, settings: Settings, redis_url: str
) -> None:
    ids = await _waiting(settings, redis_url)

    async def listed(**params: str) -> set[str]:
        page = (await api.get("/api/jobs", params=params)).json()
        return {item["job_id"] for item in page["items"]}

    assert ids["urgent"] in await listed(priority="interactive")
    assert await listed(priority="interactive") == {ids["urgent"]}
    acme = await listed(tenant="acme")
    assert ids["batch"] in acme and ids["later"] in acme and ids["urgent"] not in acme
    assert await listed(scheduled="true") == {ids["later"]}
    assert ids["later"] not in await listed(scheduled="false")
    page = (await api.get("/jobs", params={"priority": "interactive"})).text
    assert ids["urgent"] in page and ids["batch"] not in page
    scheduled = (await api.get("/jobs", params={"scheduled": "yes"})).text
    assert ids["later"] in scheduled and ids["urgent"] not in scheduled


async def test_queues_show_each_class_and_tenant_and_metrics_cap_tenants(
    api: httpx.AsyncClient, settings: Settings, redis_url: str
) -> None:
    await _waiting(settings, redis_url)
    async with Client(redis_url, settings) as client:
        for n in range(METRIC_TENANTS + 3):
            await client.submit(f"t{n}", options=JobOptions(tenant=f"tenant-{n:02}"))
    view = (await api.get("/api/queues")).json()
    turns = {(t["worker"], t["priority"], t["tenant"]): t for t in view["turns"]}
    acme = turns[("intent", "batch", "acme")]
    assert (acme["ready"], acme["held"]) == (4, 3)
    assert acme["oldest_wait_s"] is not None and acme["oldest_wait_s"] >= 0
    assert turns[("intent", "interactive", "default")]["ready"] == 1
    intent = next(q for q in view["queues"] if q["worker"] == "intent")
    assert intent["depth"] == 1 + 7 + 1 + METRIC_TENANTS + 3, "held messages are waiting too"
    page = (await api.get("/queues")).text
    assert 'data-turn="intent|batch|acme"' in page
    metrics = (await api.get("/metrics")).text
    tenants = set()
    depth_of_acme = 0.0
    for family in text_string_to_metric_families(metrics):
        for sample in family.samples:
            if sample.name == "postel_queue_class_depth":
                tenants.add(sample.labels["tenant"])
                if sample.labels == {"queue": "intent", "priority": "batch", "tenant": "acme"}:
                    depth_of_acme = sample.value
    assert depth_of_acme == 7
    assert OTHER_TENANT in tenants and len(tenants) == METRIC_TENANTS + 1


async def test_a_job_submitted_through_the_api_is_the_apis_tenant(
    api: httpx.AsyncClient, settings: Settings, redis_url: str
) -> None:
    response = await api.post("/api/jobs", json={"prompt": "over http"})
    job_id = response.json()["job_id"]
    record = (await api.get(f"/api/jobs/{job_id}")).json()
    assert (record["tenant"], record["priority"]) == (settings.web_tenant, "normal")
