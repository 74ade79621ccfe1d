"""The gasl worker on the embedded runtime: a model-written runaway plan ends within the
budget the worker derives from its job timeout, names the budget to the planner, and never
blocks the event loop the worker's lease is renewed on."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.settings import QueueSettings, Settings
from postel.infra.store.graphs import GraphRegistry
from postel.messages import JobOptions
from postel.services.gasl import NetworkXAdapter
from postel.services.llm import LLMRequest, ScriptedClient
from postel.services.prompts import Capability

from postel.testing.stage_model import StageModel, one_task

PATHS = 'FIND paths FROM ${all} TO (entity_type = "NOBODY") WHERE NOT id CONTAINS "zz" AS p'
RUNAWAY_PLAN = [
    "SET adapter.caps.max_path_length=1000000",
    "SET adapter.caps.max_expansions=1000000000000",
    "FIND nodes AS all",
    *(f"{PATHS}{n}" for n in range(5)),
]
INTENT = {
    "detectedLanguage": "en",
    "normalizedRequest": "How many things?",
    "intent": "Count things.",
    "primaryGoal": "a number",
    "dataType": "numbers",
}
TASKS = one_task("Count the things", "graph_analysis")


class Planner:
    """The scripted model: it plans the runaway, and completes once the prompt says the
    plan's budget was spent, noting the seconds that budget had."""

    def __init__(self) -> None:
        self.spent_budgets_s: list[float] = []
        self.respond = StageModel(INTENT, TASKS, self.rounds)

    def __call__(self, request: LLMRequest) -> str:
        return self.respond(request)

    def rounds(self, request: LLMRequest) -> str:
        spent = re.search(r"the plan_time_budget of ([\d.]+) s is spent", request.prompt_text())
        if spent:
            self.spent_budgets_s.append(float(spent.group(1)))
            return "COMPLETE: 60"
        plan = {"why": "every path", "commands": RUNAWAY_PLAN}
        action = {"action": "continue", "confidence": 0.9, "plan": plan}
        return json.dumps({"decision": "continue", "hypothesis": "h", "next_actions": [action]})


def dense_graphml(path: Path) -> Path:
    graph = nx.relabel_nodes(nx.complete_graph(60), {i: f"n{i}" for i in range(60)})
    nx.set_node_attributes(graph, "thing", "entity_type")
    nx.write_graphml(graph, path)
    return path


async def test_a_runaway_plan_ends_within_the_workers_budget(
    redis_url: str, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # job timeout 4 s: each plan may run 2 s, each command 0.5 s
    settings = settings.model_copy(update={"gasl": QueueSettings(job_timeout=4), "lease_s": 1.0})
    planner = Planner()
    model = Model(ScriptedClient(responder=planner), Capability.STANDARD)
    searched_on: set[int] = set()
    find_paths = NetworkXAdapter.find_paths

    def noting_thread(adapter: NetworkXAdapter, *args: Any, **kwargs: Any) -> Any:
        searched_on.add(threading.get_ident())
        return find_paths(adapter, *args, **kwargs)

    monkeypatch.setattr(NetworkXAdapter, "find_paths", noting_thread)
    async with (
        LocalSystem(settings, redis_url=redis_url, resources={RESOURCE: model}),
        Client(redis_url, settings) as client,
    ):
        await GraphRegistry(client.pool, client.keyspace).add(
            "dense", dense_graphml(tmp_path / "dense.graphml")
        )
        job_id = await client.submit("How many things?", type="int", graph="dense")
        result = await client.result(job_id, timeout=60)
        events = await client.events.read(job_id)
    assert result == 60
    assert planner.spent_budgets_s == [2.0], "the plan's budget, half the job timeout, ran out"
    gasl = [(e.status, e.round) for e in events if e.worker == "gasl"]
    assert gasl.count(("received", 0)) == 1, f"the round ran once, not taken over: {gasl}"
    assert ("completed", 0) in gasl
    # the searches ran off the event loop, which renews the 1 s lease while the plan runs 2 s
    assert searched_on and threading.get_ident() not in searched_on


async def test_the_budget_shrinks_to_fit_the_jobs_deadline(
    redis_url: str, settings: Settings, tmp_path: Path
) -> None:
    # gasl job timeout 120 s: a plan would have 60 s, but the job must end within 8 s
    planner = Planner()
    model = Model(ScriptedClient(responder=planner), Capability.STANDARD)
    async with (
        LocalSystem(settings, redis_url=redis_url, resources={RESOURCE: model}),
        Client(redis_url, settings) as client,
    ):
        await GraphRegistry(client.pool, client.keyspace).add(
            "dense", dense_graphml(tmp_path / "dense.graphml")
        )
        job_id = await client.submit(
            "How many things?", type="int", graph="dense", options=JobOptions(deadline_s=8)
        )
        await client.wait(job_id, timeout=60)
        events = await client.events.read(job_id)
    assert [e.round for e in events if e.worker == "gasl" and e.status == "completed"] == [0]
    # half of what was left of the 8 s when the round started, not half of the 120 s timeout
    [budget_s] = planner.spent_budgets_s
    assert 0 < budget_s <= 4.0
