"""The fault drill (`postel bench chaos`, postel_bench/chaos.py): a small run of it in CI, and
its parts: the jobs it plans, the model answers it relies on, and how it counts."""

from __future__ import annotations

import json
import random
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner
from postel.infra.cli.main import main
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.runner import load_worker
from postel.infra.runtime.settings import WORKER_NAMES, Settings
from postel.infra.store.events import Event, run_commands
from postel.infra.store.graphs import GraphRegistry
from postel.messages import JobRequest
from postel.services.llm import ScriptedClient
from postel.services.prompts import Capability
from postel_bench.chaos import (
    DOCUMENTED_FAILURES,
    GRAPH,
    PEOPLE,
    ChaosConfig,
    Fleet,
    Kill,
    PlannedJob,
    Run,
    chaos_responder,
    drill_figures,
    format_chaos,
    graphml,
    plan_jobs,
    run_chaos,
    takeover_figures,
)

from postel.testing.fake_model import FAULTS, FakeModel, marker, parse_mix

EVERY_FAULT = ",".join(f"{fault}=0.05" for fault in FAULTS if fault != "ok")


@pytest.mark.bench
@pytest.mark.timeout(420)
async def test_small_drill_loses_nothing_and_duplicates_nothing(settings: Settings) -> None:
    """20 jobs, one of each persistent fault, 5 % passing 500s, one SIGKILL of a worker
    process and one Redis crash: every job ends, once, with its value or a documented
    failure. (The `settings` fixture clears POSTEL_* from the environment the workers
    inherit, so the drill's own settings apply.)"""
    config = ChaosConfig(
        jobs=20,
        kill_every_s=3,
        max_kills=1,
        redis_restart=True,
        faults=parse_mix(EVERY_FAULT),
        flaky=parse_mix("500=0.05"),
        rate=4,
        drain_timeout_s=30,
        settle_s=30,
        timeout_s=240,
        seed=3,
    )
    figures = await run_chaos(config)
    print(format_chaos(figures))
    jobs, redis = figures["jobs"], figures["redis"]
    assert jobs["submitted"] == 20
    assert figures["workers"]["sigkills"] == 1
    assert redis["restarted"] and redis["records_after"] == redis["records_before"] == 10
    met = figures["model"]["by_fault"]
    assert all(met.get(fault, 0) > 0 for fault in FAULTS), met
    assert jobs["lost"] == 0, figures["lost_jobs"]
    assert jobs["duplicated"] == 0, figures["duplicated_jobs"]
    assert jobs["wrong_value"] == 0, figures["wrong_values"]
    assert set(figures["failed_by_status"]) <= DOCUMENTED_FAILURES
    assert jobs["completed"] >= 1 and jobs["completed"] + jobs["failed"] == 20
    assert figures["ok"]


def test_plan_gives_each_fault_its_share_and_every_job_its_value() -> None:
    config = ChaosConfig(jobs=200, faults=parse_mix("hang=0.04,500=0.1,garbage=0.001"))
    jobs = plan_jobs(config, random.Random(5))
    faults = [job.fault for job in jobs]
    assert (faults.count("hang"), faults.count("500"), faults.count("garbage")) == (8, 20, 1)
    assert faults.count("ok") == 171
    for job in jobs:
        assert (marker(job.fault) in job.prompt) == (job.fault != "ok")
        if job.graph is None:
            a, b = (
                int(n) for n in job.prompt.split("add ")[1].split(" together")[0].split(" and ")
            )
            assert job.expected == a + b
        else:
            assert (job.graph, job.expected) == (GRAPH, PEOPLE)
    assert [j.job_id for j in plan_jobs(config, random.Random(5))] == [j.job_id for j in jobs]
    # every class and several tenants are drilled, each on jobs of both kinds
    mixed = {(job.priority, job.tenant, job.graph is None) for job in jobs}
    assert {priority for priority, _tenant, _kind in mixed} == {"interactive", "normal", "batch"}
    assert len({tenant for _priority, tenant, _kind in mixed}) > 1
    assert {job.request().options.priority for job in jobs} == {"interactive", "normal", "batch"}


async def test_the_responder_answers_every_stage_of_both_job_kinds(
    redis_url: str, settings: Settings, tmp_path: Path
) -> None:
    """The real workers, in one process, with the drill's model: both kinds of job complete
    with their expected values (no fault, no kill)."""
    graph = tmp_path / "chaos.graphml"
    graph.write_text(graphml())
    config = ChaosConfig(jobs=4)
    planned = plan_jobs(config, random.Random(1))
    model = Model(ScriptedClient(responder=chaos_responder), Capability.STANDARD)
    specs = [load_worker(name) for name in WORKER_NAMES]
    async with (
        Client(redis_url, settings) as client,
        LocalSystem(settings, redis_url=redis_url, specs=specs, resources={RESOURCE: model}),
    ):
        await GraphRegistry(client.pool, client.keyspace).add(GRAPH, graph)
        for job in planned:
            await client.submit_request(job.request(), job_id=job.job_id)
        records = await client.wait_all([job.job_id for job in planned], timeout=60)
    for job in planned:
        record = records[job.job_id]
        assert (record.status, record.result) == ("completed", job.expected), record.error
    assert {job.graph for job in planned} == {None, GRAPH}


def event(message_id: str, instance: str, status: str, at_ms: int) -> Event:
    return Event(
        id=f"{at_ms}-0",
        job_id="j",
        message_id=message_id,
        type="task.planned",
        worker="planner",
        instance=instance,
        stage="planner",
        status=status,
    )


def test_takeover_is_timed_from_the_kill_to_the_next_conclusion_of_a_held_message(
    tmp_path: Path,
) -> None:
    host = socket.gethostname()
    killed, other = f"{host}:111", f"{host}:222"
    fleet = Fleet({}, tmp_path, 2)
    fleet.kills.append(Kill("planner", 111, at=100.0))
    hops = [
        event("m1", killed, "received", 99_000),  # held: taken over 5 s after the kill
        event("m2", killed, "received", 99_500),
        event("m2", killed, "completed", 99_800),  # concluded before the kill: not held
        event("m3", killed, "received", 99_900),  # held, never concluded: a loss
        event("m4", other, "received", 99_950),  # another process's message
        event("m1", other, "received", 104_000),
        event("m1", other, "completed", 105_000),
        event("m5", killed, "received", 100_500),  # after the kill: cannot be held
    ]
    figures = takeover_figures(fleet, hops)
    assert figures["kills_holding_messages"] == 1
    assert figures["held_messages"] == 2
    assert figures["taken_over"] == 1 and figures["max_s"] == 5.0
    assert figures["never_concluded"] == ["m3"]


async def test_the_count_tells_lost_duplicated_wrong_and_undocumented_apart(
    redis_url: str, settings: Settings, tmp_path: Path
) -> None:
    planned = [PlannedJob(f"job-{name}", "ok", "p", 5) for name in "abcdefg"]
    run = Run(ChaosConfig(jobs=len(planned)), planned)
    async with Client(redis_url, settings) as client:
        store = client.jobs
        finished = {
            "job-a": {"result": 5},  # completed, right value
            "job-b": {"result": 6},  # completed, wrong value
            "job-e": {"failure": "llm_error", "error": "x"},
            "job-f": {"failure": "exploded", "error": "x"},  # not a documented status
            "job-g": {"result": 5},  # completed, but published twice
        }
        for job in planned:
            run.submitted[job.job_id] = 0.0
            if job.job_id != "job-d":  # d: no record at all
                await run_commands(
                    client.pool, store.created_commands(job.job_id, JobRequest(prompt="p"), "-")
                )
        for job_id, outcome in finished.items():
            await run_commands(client.pool, [client.jobs.finished_command(job_id, **outcome)])
        for job_id in ("job-a", "job-g", "job-g"):
            await client.pool.xadd("postel:results", {"job_id": job_id, "message": "{}"})
        fake = FakeModel(chaos_responder)
        try:
            figures = await drill_figures(client, run, Fleet({}, tmp_path, 2), fake)
        finally:
            fake.stop()
    jobs = figures["jobs"]
    assert (jobs["completed"], jobs["failed"], jobs["lost"]) == (3, 2, 2)
    assert figures["lost_jobs"]["job-c"].startswith("queued at intent")
    assert figures["lost_jobs"]["job-d"].startswith("missing")
    assert figures["wrong_values"] == {"job-b": {"expected": 5, "got": 6}}
    assert figures["duplicated_jobs"] == ["job-g"]
    assert figures["undocumented_failures"] == {"job-f": "exploded"}
    assert figures["failed_by_status"] == {"llm_error": 1, "exploded": 1}
    assert not figures["ok"]
    json.dumps(figures)  # the --json output


async def test_a_job_left_counted_in_flight_fails_the_drill(
    redis_url: str, settings: Settings, tmp_path: Path
) -> None:
    """Every job ended, but one is still in its tenant's jobs in flight: a count that
    drifted (fair share, infra/store/turns.py) fails the verdict."""
    planned = [PlannedJob(f"job-{name}", "ok", "p", 5) for name in "ab"]
    run = Run(ChaosConfig(jobs=len(planned)), planned)
    async with Client(redis_url, settings) as client:
        for job in planned:
            run.submitted[job.job_id] = 0.0
            created = client.jobs.created_commands(job.job_id, JobRequest(prompt="p"), "-")
            await run_commands(client.pool, created)
            await run_commands(client.pool, [client.jobs.finished_command(job.job_id, result=5)])
        fake = FakeModel(chaos_responder)
        try:
            clean = await drill_figures(client, run, Fleet({}, tmp_path, 2), fake)
            await client.pool.sadd(client.keyspace.in_flight("", "default"), "job-b")
            drifted = await drill_figures(client, run, Fleet({}, tmp_path, 2), fake)
        finally:
            fake.stop()
    assert clean["ok"] and clean["jobs"]["left_in_flight"] == 0
    assert drifted["left_in_flight_jobs"] == ["job-b"] and not drifted["ok"]


def test_cli_names_a_bad_fault_mix() -> None:
    result = CliRunner().invoke(main, ["bench", "chaos", "--faults", "boom=0.1"])
    assert result.exit_code == 2
    assert "unknown fault 'boom'" in result.output
