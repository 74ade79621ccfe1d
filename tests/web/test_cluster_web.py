"""The five real workers, the API and the dashboard on a real Redis Cluster (three
primaries on loopback, tests/conftest.py): jobs of every lane walk every worker kind, and
the views that read shared streams merge the lanes."""

from __future__ import annotations

from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.settings import Settings
from postel.infra.store.graphs import GraphRegistry
from postel.services.gasl.loaders import DEMO_GRAPH
from postel.services.llm import ScriptedClient
from postel.services.prompts import Capability
from support.story_model import QUESTION, respond


async def test_a_job_walks_every_real_worker_kind_on_the_cluster(
    cluster_url: str, settings: Settings
) -> None:
    async with Client(cluster_url, settings) as client:
        await GraphRegistry(client.pool, client.keyspace).add("mmwr", DEMO_GRAPH)
    model = Model(ScriptedClient(responder=respond), Capability.STANDARD)
    async with (
        LocalSystem(settings, redis_url=cluster_url, resources={RESOURCE: model}),
        Client(cluster_url, settings) as client,
    ):
        job_ids = [await client.submit(QUESTION, graph="mmwr") for _ in range(3)]
        records = [await client.wait(job_id, timeout=120) for job_id in job_ids]
        workers = {event.worker for event in await client.events.read(job_ids[0])}
    assert {record.status for record in records} == {"completed"}
    assert {"intent", "planner", "gasl", "generator", "validator"} <= workers
