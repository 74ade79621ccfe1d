"""The one missing-graph policy: a job whose graph is not there when a worker needs it fails
`invalid_request` naming the graph, and its message is dead-lettered, so registering the
graph and redriving the message finishes the job."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from postel.infra.client.client import Client, JobFailedError
from postel.infra.runtime.actor import HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.redrive import redrive_matching
from postel.infra.runtime.settings import Settings
from postel.infra.store.deadletter import list_dead
from postel.infra.store.graphs import GraphRegistry
from postel.infra.store.keys import Keyspace
from postel.messages import Envelope, GaslPlanExecuted, IntentAnalyzed, JobCompleted, ids
from postel.services.gasl.loaders import DEMO_GRAPH
from postel.services.llm import ScriptedClient
from postel.services.prompts import Capability
from postel.workers import gasl

from postel.testing.relay import RELAY_WORKERS

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""

RELAY = {spec.name: spec for spec in RELAY_WORKERS}


async def _planner(message: Envelope, runtime: Runtime) -> HopOutcome:
    """The relay planner, which also ends the job once a GASL round has run."""
    if not isinstance(message, GaslPlanExecuted):
        return await RELAY["planner"].handle(message, runtime)
    # the round ran on the graph added later: the job ends here, with the prompt as result
    return HopOutcome([message.derive(JobCompleted, ids.COMPLETED, result=message.request.prompt)])


async def test_a_graph_missing_at_the_gasl_worker_fails_the_job_and_can_be_redriven(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    # the real gasl worker among the relay stages; its plan (DECLARE) needs no model
    planner = WorkerSpec("planner", (IntentAnalyzed, GaslPlanExecuted), _planner)
    specs = [{"gasl": gasl.WORKER, "planner": planner}.get(s.name, s) for s in RELAY_WORKERS]
    model = Model(ScriptedClient(responder=lambda request: "unused"), Capability.STANDARD)
    await redis_client.sadd(KEYS.graphs, "later")  # listed, so submission takes the name
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs, resources={RESOURCE: model}),
        Client(redis_url, settings) as client,
    ):
        job_id = await client.submit("about a graph added later", type="str", graph="later")
        with pytest.raises(JobFailedError) as failed:
            await client.result(job_id, timeout=20)
        assert failed.value.status == "invalid_request"
        assert "no graph named 'later'" in failed.value.error
        [dead] = (await list_dead(client.pool, client.keyspace, worker="gasl")).items
        assert dead.job_id == job_id and "GraphNotFound" in dead.error

        await GraphRegistry(client.pool, client.keyspace).add("later", DEMO_GRAPH)
        report = await redrive_matching(client.pool, client.events, by="test", worker="gasl")
        assert [r.job_id for r in report.redriven] == [job_id], report.refused
        assert await client.result(job_id, timeout=20) == "about a graph added later"


def test_the_workers_do_not_each_handle_a_missing_graph() -> None:
    # the policy lives in the runtime (infra/runtime/actor.py); a worker only asks for the graph
    for module in ("gasl", "planner"):
        text = (DEMO_GRAPH.parents[3] / "workers" / f"{module}.py").read_text()
        assert "JobFailed" not in text and "except" not in text
