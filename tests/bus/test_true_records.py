"""Records that are true: a job record lost under a running job (the replication window of a
failover, a DEL) leaves no ghost, the job reads as "no such job" and can be submitted again;
a message without a record is never run; a worker that gives up on a message another
worker already committed writes nothing; a malformed record is a clear error."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest
import redis.asyncio as aioredis
import structlog
from postel.infra.client.client import Client, JobFailedError
from postel.infra.runtime.actor import LEASE_LOST, Actor, HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import Settings
from postel.infra.store.commit import JOB_RECORD_MISSING
from postel.infra.store.events import run_commands
from postel.infra.store.jobs import JobStore, MalformedJobRecord
from postel.infra.store.keys import Keyspace
from postel.infra.store.wire import connect_arq
from postel.infra.web.job_story import _fold
from postel.messages import JobOptions, JobRequest, JobSubmitted
from postel.services.llm.errors import LLMError

from postel.testing.relay import RELAY_WORKERS

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""


async def dead_letters(redis: aioredis.Redis) -> list[dict[str, str]]:
    return [
        {k.decode(): v.decode() for k, v in fields.items()}
        for _id, fields in await redis.xrange(KEYS.dead_letters(""))
    ]


async def until(check: Any, timeout: float = 30.0) -> None:
    async with asyncio.timeout(timeout):
        while not await check():
            await asyncio.sleep(0.05)


def hanging_once() -> WorkerSpec:
    """The intent relay, except that its first run of each job hangs like a model that
    never answers."""
    seen: set[str] = set()
    relay = RELAY_WORKERS[0]

    async def handle(message: Any, runtime: Runtime) -> HopOutcome:
        if message.job_id not in seen:
            seen.add(message.job_id)
            await asyncio.sleep(3600)
        return await relay.handle(message, runtime)

    return WorkerSpec("intent", relay.accepts, handle)


def postel_cli(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POSTEL_")}
    env.update(POSTEL_REDIS_URL=url, POSTEL_LOG_LEVEL="WARNING")
    return subprocess.run(
        [sys.executable, "-m", "postel", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_a_record_lost_under_a_running_job_leaves_no_ghost_and_the_job_can_be_resubmitted(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    specs = [hanging_once(), *RELAY_WORKERS[1:]]
    options = JobOptions(deadline_s=4)
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs),
        Client(redis_url, settings) as client,
    ):
        job_id = await client.submit("lost", job_id="ghost", options=options)
        await until(lambda: redis_client.exists(KEYS.job_events(job_id)))
        await asyncio.sleep(1.5)
        await redis_client.delete(KEYS.job(job_id))  # the record is lost; intent still runs

        async def dead_lettered() -> bool:
            return any(JOB_RECORD_MISSING in d["error"] for d in await dead_letters(redis_client))

        await until(dead_lettered)  # the intent hop ran past the deadline and committed
        assert not await redis_client.exists(KEYS.job(job_id)), "a ghost record was written"
        assert await redis_client.zcard(KEYS.queue("planner")) == 0, "nothing goes downstream"
        for key in await redis_client.keys(f"*{job_id}*"):
            # -1: no expiry; -2 (it expired since KEYS listed it) is as good as a TTL
            assert await redis_client.ttl(key) != -1, f"{key!r} would live forever"
        status = await asyncio.to_thread(postel_cli, redis_url, "status", job_id)
        assert status.returncode == 4, status.stderr
        assert "no such job 'ghost'" in status.stderr and "Traceback" not in status.stderr
        # docs/SCALING.md's remedy: submit again under the same id, with the same request
        assert await client.submit("lost", job_id="ghost", options=options) == "ghost"
        assert await client.result(job_id, timeout=30) == "lost"
        statuses = [e.status for e in await client.events.read(job_id)]
    assert statuses[0] == "submitted", "the lost job's events went with it"


async def test_a_message_without_a_job_record_is_dead_lettered_never_run(
    relay_system: LocalSystem, settings: Settings, redis_client: aioredis.Redis
) -> None:
    message = JobSubmitted(
        job_id="norecord", message_id="norecord:submitted", request=JobRequest(prompt="x")
    )
    pool = await connect_arq(relay_system.url)
    try:
        await pool.enqueue_job(
            "handle",
            message.model_dump(mode="json"),
            _job_id=message.message_id,
            _queue_name=KEYS.queue("intent"),
        )
        await until(lambda: redis_client.xlen(KEYS.dead_letters("")))
    finally:
        await pool.aclose()
    [dead] = await dead_letters(redis_client)
    assert dead["error"].startswith(JOB_RECORD_MISSING) and dead["job_id"] == "norecord"
    assert dead["source"] == "worker:intent"

    # nothing stays written for the job: arq's own keys of the message go with the finish
    # that follows the dead letter
    async def nothing_left() -> bool:
        return await redis_client.keys("*norecord*") == []

    await until(nothing_left)
    assert await redis_client.zcard(KEYS.queue("planner")) == 0


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(LLMError("the endpoint answered too late"), id="gives-up"),
        pytest.param(RuntimeError("a transient failure"), id="would-retry"),
    ],
)
async def test_a_worker_resumed_after_another_committed_its_message_writes_nothing(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis, failure: Exception
) -> None:
    """The frozen worker (SIGSTOP past its lease) is the actor whose handler waits on
    `resume`; while it waits, another worker runs the same message and commits it. Resumed,
    the stale run fails (as a run cut at its time limit does) and gives up: no dead letter,
    no `dead_lettered` event; or it would be retried: no `retried` event, no retry. A third
    take of the message records nothing either."""
    started, resume = asyncio.Event(), asyncio.Event()

    async def frozen(message: Any, runtime: Runtime) -> HopOutcome:
        started.set()
        await resume.wait()
        raise failure

    relay = RELAY_WORKERS[0]
    pool = await connect_arq(redis_url)
    try:
        runtime = Runtime.create(pool, KEYS, settings)
        request = JobRequest(prompt="once")
        await run_commands(pool, runtime.jobs.created_commands("stale", request, "-"))
        payload = JobSubmitted(
            job_id="stale", message_id="stale:submitted", request=request
        ).model_dump(mode="json")
        stale = Actor(WorkerSpec("intent", relay.accepts, frozen), runtime)
        live = Actor(relay, runtime)
        stale_run = asyncio.create_task(stale.run(payload, attempt=1))
        await started.wait()
        await live.run(payload, attempt=2)
        before = [e.status for e in await runtime.events.read("stale")]
        with structlog.testing.capture_logs() as logs:
            resume.set()
            await stale_run
        await live.run(payload, attempt=3)
        after = [e.status for e in await runtime.events.read("stale")]
        record = await runtime.jobs.get("stale")
    finally:
        await pool.aclose()
    assert await redis_client.xlen(KEYS.dead_letters("")) == 0
    assert after == before, "the stale run and the late take wrote events"
    assert before.count("received") == 2
    assert not {"dead_lettered", "retried"} & set(after)
    assert record.status == "running" and record.stage == "planner"
    # the stale run says so in one INFO line, no error and no traceback
    assert [(e["log_level"], e["event"]) for e in logs] == [("info", LEASE_LOST)], logs


async def test_a_lease_taken_over_and_committed_is_no_warning(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    """The lease renewal of a run held past its lease finds the lease gone: when another
    run committed the message, that is no warning (the run's end says it, once); when
    nothing did, it is."""
    pool = await connect_arq(redis_url)
    try:
        actor = Actor(RELAY_WORKERS[0], Runtime.create(pool, KEYS, settings))
        await redis_client.set(KEYS.done("taken"), "1")
        with structlog.testing.capture_logs() as logs:
            await actor._renew_lease("arq:in-progress:taken")
            await actor._renew_lease("arq:in-progress:lapsed")
    finally:
        await pool.aclose()
    assert [(e["log_level"], e.get("key")) for e in logs] == [
        ("warning", "arq:in-progress:lapsed")
    ], logs


async def test_a_hop_that_fails_is_recorded_failed_with_its_real_duration(
    redis_url: str, settings: Settings
) -> None:
    """A hop that gives up (a model that stopped answering) is a `failed` event carrying the
    time it ran, on the event stream, in `postel events` and on the timeline; not
    `completed ... took=0.0ms`."""
    relay = RELAY_WORKERS[0]

    async def stops_answering(message: Any, runtime: Runtime) -> HopOutcome:
        # CPU time, not a sleep: the recorded duration is at least what this burnt
        spin_until = time.thread_time() + 0.2
        while time.thread_time() < spin_until:
            pass
        raise LLMError("the model stopped answering")

    specs = [WorkerSpec("intent", relay.accepts, stops_answering), *RELAY_WORKERS[1:]]
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs),
        Client(redis_url, settings) as client,
    ):
        job_id = await client.submit("fails")
        with pytest.raises(JobFailedError):
            await client.result(job_id, timeout=60)
        events = await client.events.read(job_id)
    ended = [e for e in events if e.stage == "intent" and e.status != "received"]
    assert [e.status for e in ended] == ["dead_lettered", "failed"], ended
    assert ended[-1].duration_ms >= 200, "the time the hop ran"
    # the timeline: the hop stays dead-lettered (redrive is there), with the time it ran
    [hop] = [h for h in _fold(events) if h.worker == "intent" and h.stage != "done"]
    assert (hop.status, hop.duration_ms) == ("dead_lettered", ended[-1].duration_ms)
    shown = await asyncio.to_thread(postel_cli, redis_url, "events", job_id)
    line = next(line for line in shown.stdout.splitlines() if " failed" in line)
    assert "intent" in line and "took=0.0ms" not in line and "completed" not in line, line


POISON: dict[str, bytes | None] = {
    "empty-payload": b"",
    "no-job-key": None,
    "keyword-argument": json.dumps(
        {"t": 1, "f": "handle", "a": [{}], "k": {"unexpected": 1}, "et": 1}
    ).encode(),
    "try-10e30": None,  # filled in with a valid message below
}


async def test_every_queue_poison_is_dead_lettered(
    relay_system: LocalSystem, settings: Settings, redis_client: aioredis.Redis
) -> None:
    request = JobRequest(prompt="x")
    created = JobStore(redis_client, KEYS, 3600).created_commands("tries", request, "-")
    await run_commands(redis_client, created)
    valid = JobSubmitted(job_id="tries", message_id="tries:submitted", request=request)
    poison = dict(POISON)
    poison["try-10e30"] = json.dumps(
        {"t": 10**30, "f": "handle", "a": [valid.model_dump(mode="json")], "k": {}, "et": 1}
    ).encode()
    queue = KEYS.queue("intent")
    # what a stale run's late retry leaves: its message committed, its job key gone
    await redis_client.set(KEYS.done("leftover"), "1")
    await redis_client.zadd(queue, {"leftover": 1})
    for name, payload in poison.items():
        if payload is not None:
            await redis_client.set(f"arq:job:{name}", payload)
        await redis_client.zadd(queue, {name: 1})
    async with Client(relay_system.url, settings) as client:
        assert await client.result(await client.submit("alive"), timeout=20) == "alive"

    async def all_dead() -> bool:
        dead = await redis_client.xlen(KEYS.dead_letters(""))
        return dead >= len(poison) and await redis_client.zcard(queue) == 0

    await until(all_dead)
    dead = await dead_letters(redis_client)
    errors = " | ".join(d["error"] for d in dead)
    assert len(dead) == len(poison), errors
    assert "queue entry 'empty-payload': no payload" in errors
    assert "queue entry 'no-job-key': no payload" in errors
    # each reason names the real fault
    assert "it passes keyword arguments (unexpected); the handler takes one message" in errors
    assert "not a JSON object" not in errors
    assert "queue entry 'try-10e30': out of tries" in errors
    assert "leftover" not in errors, "a committed message's leftover is no poison"
    assert await redis_client.zcard(queue) == 0
    async with Client(relay_system.url, settings) as client:
        failed = await client.status("tries")
    assert (failed.status, failed.failure) == ("failed", "out_of_tries")


async def test_a_malformed_record_is_a_clear_error_everywhere(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    await redis_client.hset(KEYS.job("odd"), mapping={"status": "running", "stage": "intent"})
    async with Client(redis_url, settings) as client:
        with pytest.raises(MalformedJobRecord, match="job 'odd' has a malformed record"):
            await client.status("odd")
    shown = await asyncio.to_thread(postel_cli, redis_url, "status", "odd")
    assert shown.returncode == 2 and "malformed record" in shown.stderr
    assert "Traceback" not in shown.stderr


async def test_a_finished_job_whose_record_was_lost_runs_whole_when_resubmitted(
    relay_system: LocalSystem, settings: Settings, redis_client: aioredis.Redis
) -> None:
    """Every hop of the lost job left its done marker: the resubmission clears them (from
    the job's events), or the new run would stop at its first hop as already handled."""
    async with Client(relay_system.url, settings) as client:
        await client.submit("twice", job_id="again")
        assert await client.result("again", timeout=20) == "twice"
        await redis_client.delete(KEYS.job("again"))
        assert await client.submit("twice", job_id="again") == "again"
        assert await client.result("again", timeout=20) == "twice"
        events = await client.events.read("again")
    assert [e.status for e in events].count("submitted") == 1
    assert {e.worker for e in events if e.status == "completed"} >= {"intent", "validator"}


async def test_a_job_is_running_from_the_moment_its_first_hop_is_received(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    """Its record said `queued` until the first hop committed, while a worker ran it."""
    specs = [hanging_once(), *RELAY_WORKERS[1:]]
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs),
        Client(redis_url, settings) as client,
    ):
        job_id = await client.submit("held", options=JobOptions(deadline_s=60))
        assert (await client.status(job_id)).status in ("queued", "running")
        await until(lambda: redis_client.exists(KEYS.job_events(job_id)))

        async def received() -> bool:
            return any(e.status == "received" for e in await client.events.read(job_id))

        await until(received)  # the intent worker holds it, its handler hanging
        record = await client.status(job_id)
        assert record.status == "running" and record.stage == "intent"
        await client.cancel(job_id, "done looking")
