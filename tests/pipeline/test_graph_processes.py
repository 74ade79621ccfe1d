"""Two planner and two gasl processes serve interleaved jobs on different graphs."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.presence import wait_for
from postel.infra.runtime.runner import load_worker
from postel.infra.runtime.settings import Settings
from postel.infra.store.graphs import GraphRegistry
from postel.services.gasl.loaders import DEMO_GRAPH
from postel.services.llm import ScriptedClient
from postel.services.prompts import Capability
from support import script, with_support
from support.rule_model import respond

LIGHTRAG = """<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="d0" for="node" attr.name="entity_id" attr.type="string"/>
  <key id="d1" for="node" attr.name="entity_type" attr.type="string"/>
  <key id="d2" for="node" attr.name="description" attr.type="string"/>
  <key id="d3" for="node" attr.name="source_id" attr.type="string"/>
  <graph edgedefault="undirected">
    <node id="Ada"><data key="d0">Ada</data><data key="d1">person</data>
      <data key="d2">a mathematician</data><data key="d3">chunk-a</data></node>
    <node id="Alan"><data key="d0">Alan</data><data key="d1">person</data>
      <data key="d2">a logician</data><data key="d3">chunk-a</data></node>
    <node id="Grace"><data key="d0">Grace</data><data key="d1">person</data>
      <data key="d2">an admiral</data><data key="d3">chunk-b</data></node>
    <node id="Navy"><data key="d0">Navy</data><data key="d1">organization</data>
      <data key="d2">a navy</data><data key="d3">chunk-b</data></node>
  </graph>
</graphml>
"""


async def test_two_planners_and_two_gasl_workers_serve_jobs_on_two_graphs(
    redis_url: str, settings: Settings, tmp_path: Path
) -> None:
    small = tmp_path / "lightrag.graphml"
    small.write_text(LIGHTRAG)
    # two jobs at a time per process, so neither replica can take the whole burst
    env = {
        **os.environ,
        "POSTEL_REDIS_URL": redis_url,
        "POSTEL_LOG_LEVEL": "WARNING",
        "POSTEL_CONCURRENCY": "2",
    }
    procs = [
        subprocess.Popen(script("rules_worker", "planner", "gasl"), env=with_support(env))
        for _ in range(2)
    ]
    others = [load_worker(name) for name in ("intent", "generator", "validator")]
    model = Model(ScriptedClient(responder=respond), Capability.STANDARD)
    try:
        async with Client(redis_url, settings) as client:
            registry = GraphRegistry(client.pool, client.keyspace)
            await registry.add("mmwr", DEMO_GRAPH)
            await registry.add("tiny", small)
            await wait_for(client.pool, client.keyspace, "planner", processes=2)
            await wait_for(client.pool, client.keyspace, "gasl", processes=2)
            async with LocalSystem(
                settings, redis_url=redis_url, specs=others, resources={RESOURCE: model}
            ):
                graphs = ["mmwr", "tiny"] * 6
                ids = await asyncio.gather(
                    *(client.submit("How many people?", type="int", graph=g) for g in graphs)
                )
                records = await client.wait_all(ids, timeout=120)
                instances: dict[str, set[str]] = {"planner": set(), "gasl": set()}
                for job_id, graph in zip(ids, graphs, strict=True):
                    assert records[job_id].status == "completed", records[job_id].error
                    assert records[job_id].result == (371 if graph == "mmwr" else 3)
                    for event in await client.events.read(job_id):
                        if event.worker in instances and event.status == "completed":
                            instances[event.worker].add(event.instance)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)
    assert len(instances["planner"]) == 2, "both planner processes served jobs"
    assert len(instances["gasl"]) == 2, "both gasl processes served jobs"
