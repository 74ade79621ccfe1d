"""Guards against model-written plans: caps are per job and bounded, every plan and command
runs against a wall-clock budget, and a round runs off the event loop."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import networkx as nx
import pytest
from postel.messages import GaslPlanRequested, JobProgress, JobRequest
from postel.messages.gasl import GaslPlan
from postel.messages.intent import Intent
from postel.messages.task import Task, TaskPlan
from postel.services.gasl.budget import (
    COMMAND_BUDGET,
    PLAN_BUDGET,
    Deadline,
    PlanClock,
    TimeBudget,
)
from postel.services.gasl.engines.caps import HARD_MAXIMA, Caps
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.stage import execute_round
from support.gasl import FakeModel, small_graph

# Every cap raised as far as a plan may, then all paths between all nodes: minutes of work
# on a dense graph without a time budget.
RUNAWAY = [
    "SET adapter.caps.max_path_length=1000000",
    "SET adapter.caps.max_paths=1000000000",
    "SET adapter.caps.max_expansions=1000000000000",
    "SET adapter.caps.max_results=1000000000",
    "FIND nodes AS all",
    'FIND paths FROM ${all} TO (entity_type = "NOBODY") WHERE NOT id CONTAINS "zz" AS p',
]


def dense_graph(nodes: int = 60) -> nx.Graph:
    graph = nx.relabel_nodes(nx.complete_graph(nodes), {i: f"n{i}" for i in range(nodes)})
    for node in graph.nodes:
        graph.nodes[node].update(id=node, entity_type="THING")
    return graph


def plan_message(job: str, commands: list[str], round_number: int = 0) -> GaslPlanRequested:
    intent = Intent(detected_language="en", normalized_request="q", intent="q", primary_goal="q")
    task = Task(id="t", objective="look", kind="graph_analysis")
    return GaslPlanRequested(
        job_id=job,
        message_id=f"{job}:gasl:{round_number}",
        request=JobRequest(prompt="q", graph="g"),
        progress=JobProgress(intent=intent, plan=TaskPlan(tasks=[task])),
        round=round_number,
        plan=GaslPlan(plan_id=f"{job}-{round_number}", commands=commands),
    )


async def test_a_jobs_caps_never_reach_another_job() -> None:
    adapter = NetworkXAdapter.from_graph(small_graph())  # shared, as the registry caches it
    first = await execute_round(
        plan_message("a", ["SET adapter.caps.max_results=2", "FIND nodes AS all"]),
        adapter,
        None,
        None,
    )
    capped = first.message.records[-1]
    assert (capped.status, capped.count, capped.caps_hit) == ("partial", 2, ["max_results"])
    other = await execute_round(plan_message("b", ["FIND nodes AS all"]), adapter, None, None)
    found = other.message.records[-1]
    assert (found.status, found.count, found.caps_hit) == ("success", 5, [])
    # The job's own later rounds keep what it SET: the caps travel in its state.
    again = await execute_round(
        plan_message("a", ["FIND nodes AS all"], 1), adapter, first.state, None
    )
    assert again.message.records[-1].count == 2
    assert again.state["caps"]["max_results"] == 2


async def test_set_lowers_caps_freely_and_raises_them_only_to_the_hard_maximum() -> None:
    ex = GaslExecutor(NetworkXAdapter.from_graph(small_graph()))
    plan = {
        "plan_id": "p",
        "commands": [
            "SET adapter.caps.max_paths=1",
            "SET adapter.caps.max_paths=1000000000",
            "SET adapter.caps.max_depth=0",
            'SET adapter.caps.max_depth="deep"',
        ],
        "config": {"stop_on_error": False},
    }
    lowered, raised, zero, text = (await ex.execute_plan(plan)).records
    assert (lowered.status, lowered.rows) == ("success", [{"cap": "max_paths", "value": 1}])
    most = HARD_MAXIMA["max_paths"]
    assert (raised.status, raised.caps_hit) == ("partial", ["max_paths"])
    assert raised.rows == [{"cap": "max_paths", "value": most, "asked": 1_000_000_000}]
    assert raised.detail["hint"] == f"max_paths can be raised to at most {most}: it is now {most}"
    assert ex.caps.max_paths == most
    assert zero.status == "error" and "positive integer" in (zero.error or "")
    assert text.status == "error" and "'deep'" in (text.error or "")
    assert ex.caps.max_depth == 3
    with pytest.raises(ValueError, match="positive integer"):
        Caps(max_results=-1)


async def test_a_runaway_plan_stops_within_its_budget_naming_the_cap() -> None:
    adapter = NetworkXAdapter.from_graph(dense_graph())
    budget = TimeBudget(plan_s=0.8, command_s=0.5)
    ex = GaslExecutor(adapter, budget=budget)
    plan = {
        "plan_id": "r",
        "commands": [*RUNAWAY, RUNAWAY[-1].replace(" AS p", " AS q"), "COUNT p AS n"],
    }
    # the thread's CPU time: a busy machine adds to the wall time, not to the plan's work
    started = time.thread_time()
    result = await ex.execute_plan(plan)
    cpu_s = time.thread_time() - started
    assert cpu_s < budget.plan_s + 0.5, f"the plan used {cpu_s:.2f} s of CPU on a 0.8 s budget"
    *sets, everything, first, second, skipped = result.records
    assert [r.status for r in sets] == ["partial"] * 4 and everything.count == 60
    assert (first.status, first.caps_hit) == ("partial", [COMMAND_BUDGET])
    assert first.duration_ms >= 450
    assert (second.status, second.caps_hit) == ("partial", [PLAN_BUDGET])
    assert (skipped.status, skipped.caps_hit) == ("error", [PLAN_BUDGET])
    assert skipped.command == "COUNT p AS n" and "not run" in (skipped.error or "")
    assert result.stopped


async def test_row_commands_stop_on_their_deadline() -> None:
    ex = GaslExecutor(
        NetworkXAdapter.from_graph(small_graph()), budget=TimeBudget(plan_s=60, command_s=0.05)
    )
    tags = list(range(50))
    ex.context.set("rows", [{"i": i, "tags": tags} for i in range(300_000)])
    plan = {
        "plan_id": "rows",
        "commands": ["SELECT rows WHERE tags = 49 AND i >= 0 AS kept", "COUNT rows AS n"],
        "config": {"stop_on_error": False},
    }
    started = time.thread_time()
    selected, counted = (await ex.execute_plan(plan)).records
    cpu_s = time.thread_time() - started
    # it ends partial with the rows it took, naming the budget
    assert (selected.status, selected.caps_hit) == ("partial", [COMMAND_BUDGET])
    assert 0 < selected.detail["rows_taken"] < selected.detail["rows_total"] == 300_000
    assert selected.count == selected.detail["rows_taken"]  # every row taken matched
    assert cpu_s < 0.5, "stopped near its 0.05 s deadline, not after all 300,000 rows"
    assert counted.status == "success" and counted.rows == [300_000]


def test_an_index_build_cut_short_is_not_kept() -> None:
    graph = nx.Graph()
    graph.add_nodes_from((f"n{i}", {"id": f"n{i}", "bucket": i % 7}) for i in range(500))
    adapter = NetworkXAdapter.from_graph(graph)
    where = adapter_where("bucket = 3")
    passed = Deadline(0.0, COMMAND_BUDGET, 0.01, clock=lambda: 1.0)
    cut = adapter.find_nodes(where, None, deadline=passed)
    assert cut.items == [] and cut.caps_hit == [COMMAND_BUDGET]
    whole = adapter.find_nodes(where, None)
    assert len(whole.items) == 71 and whole.used_index and whole.caps_hit == []


def adapter_where(text: str) -> Any:
    from postel.services.gasl.parser import parse_one

    command = parse_one(f"FIND nodes WHERE {text} AS x")
    return command.where  # type: ignore[attr-defined]


def test_budgets_follow_the_job_timeout_and_refuse_nonsense() -> None:
    assert TimeBudget.within(120) == TimeBudget(plan_s=60.0, command_s=15.0)
    assert TimeBudget.within(120, deadline_in_s=20) == TimeBudget(plan_s=10.0, command_s=2.5)
    assert TimeBudget.within(120, deadline_in_s=-5).plan_s == 0.1  # gone: report at once
    assert TimeBudget() == TimeBudget(plan_s=60.0, command_s=15.0)
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="positive number of seconds"):
            TimeBudget(plan_s=bad)
    now = [100.0]
    clock = PlanClock(TimeBudget(plan_s=10, command_s=4), clock=lambda: now[0])
    assert clock.command_deadline().cap == COMMAND_BUDGET
    now[0] = 107.0  # 3 s of the plan left: the plan's budget ends first
    deadline = clock.command_deadline()
    assert (deadline.cap, deadline.remaining()) == (PLAN_BUDGET, 3.0)


async def test_a_round_leaves_the_event_loop_free() -> None:
    adapter = WatchedAdapter(dense_graph())
    started = time.perf_counter()
    result = await execute_round(
        plan_message("busy", RUNAWAY), adapter, None, None, TimeBudget(plan_s=1.5, command_s=1.0)
    )
    took = time.perf_counter() - started
    # which budget stops it first depends on how much CPU the thread gets on a busy machine
    assert result.message.records[-1].caps_hit in ([COMMAND_BUDGET], [PLAN_BUDGET])
    assert took >= 1.0
    # the search ran on another thread: the event loop was free to run other tasks meanwhile
    assert adapter.threads and threading.get_ident() not in adapter.threads


class LoopModel(FakeModel):
    """Answers only on the event loop it was made on (as an HTTP client would), or hangs."""

    def __init__(self, *answers: dict[str, Any], hang: bool = False) -> None:
        super().__init__(*answers)
        self.loop = asyncio.get_running_loop()
        self.hang = hang
        self.cancelled = False

    async def complete_json(
        self, step: str, parts: dict[str, str], schema: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        assert asyncio.get_running_loop() is self.loop
        if self.hang:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        return await super().complete_json(step, parts, schema)


async def test_model_steps_run_on_the_callers_loop_within_the_plan_budget() -> None:
    adapter = NetworkXAdapter.from_graph(small_graph())
    model = LoopModel({"items": [{"pair": "ADA+BOB", "source_ids": ["c1"]}]})
    commands = ["FIND nodes AS all", 'PROCESS all USING "pair them" AS pairs']
    done = await execute_round(plan_message("m", commands), adapter, None, model)
    assert [r.status for r in done.message.records] == ["success", "success"]
    assert done.message.records[1].rows[0]["pair"] == "ADA+BOB"

    slow = LoopModel(hang=True)
    hung = await execute_round(
        plan_message("h", commands), adapter, None, slow, TimeBudget(plan_s=0.5, command_s=0.1)
    )
    step = hung.message.records[1]
    # the plan's budget cut the model's 60 s hang: its call was cancelled
    assert (step.status, step.caps_hit) == ("error", [PLAN_BUDGET])
    assert slow.cancelled


class WatchedAdapter(NetworkXAdapter):
    """Notes the thread each path search runs on, and the caps each one returned with."""

    def __init__(self, graph: nx.Graph) -> None:
        super().__init__(graph)
        self.threads: list[int] = []
        self.returned: list[list[str]] = []

    def find_paths(self, *args: Any, **kwargs: Any) -> Any:
        self.threads.append(threading.get_ident())
        found = super().find_paths(*args, **kwargs)
        self.returned.append(found.caps_hit)
        return found


async def test_a_cancelled_round_stops_its_thread() -> None:
    adapter = WatchedAdapter(dense_graph())
    # an hour: the runaway search never ends by itself, nor by its budget, within the test
    budget = TimeBudget(plan_s=3600, command_s=3600)
    running = asyncio.create_task(
        execute_round(plan_message("c", RUNAWAY), adapter, None, None, budget)
    )
    for _ in range(500):  # until the search runs
        if adapter.threads:
            break
        await asyncio.sleep(0.01)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    for _ in range(1500):
        if adapter.returned:
            break
        await asyncio.sleep(0.02)
    # it returned, stopped at a deadline check that the cancellation made read as passed
    assert adapter.returned, "the search ran on after the cancellation"
    assert adapter.returned[0] in ([COMMAND_BUDGET], [PLAN_BUDGET])
