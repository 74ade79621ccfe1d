"""The bus runtime on real Redis: jobs cross the five real queues from every entrance, every
hop is an event, poison goes to the dead-letter stream, and nothing is pickled."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import pytest
import redis.asyncio as aioredis
from postel.infra.client.client import Client, JobFailedError
from postel.infra.runtime import actor as actor_module
from postel.infra.runtime import presence as presence_module
from postel.infra.runtime.actor import Actor, HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.presence import wait_for
from postel.infra.runtime.settings import Settings
from postel.infra.store.events import Event, run_commands
from postel.infra.store.keys import Keyspace
from postel.infra.store.wire import connect_arq
from postel.messages import (
    Envelope,
    GenerationRequested,
    JobRequest,
    JobSubmitted,
    decode_message,
    utc_now,
)
from support import script, with_support

from postel.testing.relay import RELAY_WORKERS

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""

STAGES = ["intent", "planner", "gasl", "generator", "validator"]

EXPECTED_HOPS = (
    [("client", "submitted", "job.submitted")]
    + [
        pair
        for stage, message_type in zip(
            STAGES,
            [
                "job.submitted",
                "intent.analyzed",
                "gasl.plan_requested",
                "generation.requested",
                "generation.completed",
            ],
            strict=True,
        )
        for pair in ((stage, "received", message_type), (stage, "completed", message_type))
    ]
    + [("validator", "completed", "job.completed")]
)


async def hops(client: Client, job_id: str) -> list[tuple[str, str, str]]:
    return [(e.worker, e.status, e.type) for e in await client.events.read(job_id)]


async def test_client_job_crosses_all_five_queues_with_every_hop_in_order(
    relay_system: LocalSystem, settings: Settings
) -> None:
    async with Client(relay_system.url, settings) as client:
        job_id = await client.submit("ping", type="str")
        assert await client.result(job_id, timeout=20) == "ping"
        assert await hops(client, job_id) == EXPECTED_HOPS
        record = await client.status(job_id)
        assert record.status == "completed" and record.stage == "done"
        assert record.finished_at is not None and record.finished_at >= record.created_at


async def test_event_fields_are_flat_and_numeric(
    relay_system: LocalSystem, settings: Settings, redis_client: aioredis.Redis
) -> None:
    """Every entry has the hop's own fields; the others (error, the figures) appear only where
    set, each named as documented, numbers purely numeric, and read back at their defaults
    where left out."""
    async with Client(relay_system.url, settings) as client:
        job_id = await client.submit("ping")
        await client.result(job_id, timeout=20)
    entries = await redis_client.xrange(KEYS.job_events(job_id))
    hop_fields = {
        "job_id",
        "message_id",
        "type",
        "worker",
        "instance",
        "stage",
        "status",
        "attempt",
        "duration_ms",
        "wait_ms",
    }
    numeric = {
        "attempt",
        "duration_ms",
        "wait_ms",
        "iteration",
        "round",
        "repair",
        "llm_calls",
        "failed_llm_calls",
        "prompt_tokens",
        "completion_tokens",
        "budget_wait_ms",
        "sections",
        "elements",
    }
    documented = set(Event.model_fields) - {"id"}
    received = 0
    for entry_id, fields in entries:
        decoded = {k.decode(): v.decode() for k, v in fields.items()}
        assert hop_fields <= set(decoded) <= documented, decoded
        for name in numeric & set(decoded):
            float(decoded[name])
        event = Event.from_entry(entry_id, fields)
        if event.status == "received":
            received += 1
            assert set(decoded) == hop_fields, "a received entry carries the hop alone"
            assert (event.llm_calls, event.error, event.decision) == (0, "", "")
    assert received == 5
    # the lane's stream has every event but the quick hops' `received`
    lane = [
        (f[b"message_id"], f[b"status"]) for _id, f in await redis_client.xrange(KEYS.events(""))
    ]
    history = [(f[b"message_id"], f[b"status"]) for _id, f in entries]
    assert [e for e in history if e[1] != b"received"] == [e for e in lane if e[1] != b"received"]
    assert set(lane) <= set(history)


async def test_the_handled_tallies_are_kept_alive_by_worker_processes_not_by_hops(
    redis_url: str,
    settings: Settings,
    redis_client: aioredis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(presence_module, "BEAT_S", 0.05)
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=RELAY_WORKERS),
        Client(redis_url, settings) as client,
    ):
        job_id = await client.submit("counted")
        await client.result(job_id, timeout=20)
        tallies = (KEYS.tally_handled(""), KEYS.tally_last(""))
        for tally in tallies:
            await redis_client.persist(tally)  # as the hops left them: no lifetime of their own
        async with asyncio.timeout(20):
            while min([await redis_client.ttl(tally) for tally in tallies]) < 0:
                await asyncio.sleep(0.02)
        assert max([await redis_client.ttl(tally) for tally in tallies]) <= settings.job_ttl_s
        assert await redis_client.hlen(KEYS.tally_handled("")) == 5, "one per worker kind"


async def test_cli_submit_wait_prints_the_result(relay_system: LocalSystem) -> None:
    env = {**os.environ, "POSTEL_REDIS_URL": relay_system.url, "POSTEL_LOG_LEVEL": "WARNING"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "postel",
        "submit",
        "from the cli",
        "--wait",
        "--timeout",
        "30",
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    job_id = lines[0]
    assert json.loads("\n".join(lines[1:])) == "from the cli"
    assert "validator" in err.decode() and "job.completed" in err.decode()
    async with Client(relay_system.url) as client:
        assert await hops(client, job_id) == EXPECTED_HOPS


async def test_raw_xadd_to_ingress_completes(
    relay_system: LocalSystem, settings: Settings, redis_client: aioredis.Redis
) -> None:
    body = json.dumps({"prompt": "from another language", "desired_type": "str"})
    await redis_client.xadd(KEYS.ingress, {"job": body, "job_id": "from-redis-cli"})
    async with Client(relay_system.url, settings) as client:
        result = await client.result("from-redis-cli", timeout=20)
        assert result == "from another language"
        assert (await hops(client, "from-redis-cli"))[0] == (
            "ingress",
            "submitted",
            "job.submitted",
        )
    pending = await redis_client.xpending(KEYS.ingress, KEYS.ingress_group)
    assert pending["pending"] == 0


async def test_ingress_entry_without_job_id_gets_one_from_the_entry(
    relay_system: LocalSystem, settings: Settings, redis_client: aioredis.Redis
) -> None:
    entry = await redis_client.xadd(KEYS.ingress, {"job": json.dumps({"prompt": "no id"})})
    job_id = "ingress-" + entry.decode().replace("-", "_")
    async with Client(relay_system.url, settings) as client:
        assert await client.result(job_id, timeout=20) == "no id"


@pytest.mark.parametrize(
    ("fields", "expected_error"),
    [
        ({"jobb": "{}"}, "missing field `job`"),
        ({"job": "{not json"}, "field `job` is not JSON"),
        ({"job": json.dumps({"prompt": ""})}, "prompt"),
        ({"job": json.dumps({"prompt": "x", "desired_type": "banana"})}, "unknown type 'banana'"),
        ({"job": json.dumps({"prompt": "x", "colour": "red"})}, "colour"),
    ],
)
async def test_malformed_ingress_entries_are_dead_lettered_and_acknowledged(
    relay_system: LocalSystem,
    settings: Settings,
    redis_client: aioredis.Redis,
    fields: dict[str, str],
    expected_error: str,
) -> None:
    await redis_client.xadd(KEYS.ingress, fields)
    await redis_client.xadd(
        KEYS.ingress, {"job": json.dumps({"prompt": "next"}), "job_id": "after"}
    )
    async with Client(relay_system.url, settings) as client:
        assert await client.result("after", timeout=20) == "next"
    dead = await redis_client.xrange(KEYS.dead_letters(""))
    assert len(dead) == 1
    entry = {k.decode(): v.decode() for k, v in dead[0][1].items()}
    assert entry["source"] == "ingress"
    assert expected_error in entry["error"]
    assert json.loads(entry["raw"]) == fields
    assert (await redis_client.xpending(KEYS.ingress, KEYS.ingress_group))["pending"] == 0


async def test_poison_messages_on_a_queue_are_dead_lettered_and_the_worker_goes_on(
    relay_system: LocalSystem, settings: Settings, redis_client: aioredis.Redis
) -> None:
    pool = await connect_arq(relay_system.url)
    try:
        wrong_schema = {"type": "job.submitted", "job_id": "bad1", "message_id": "bad1:x"}
        unknown_type = {"type": "job.teleported", "job_id": "bad2", "message_id": "bad2:x"}
        other_stage = GenerationRequested(
            job_id="bad3",
            message_id="bad3:gen",
            request=JobRequest(prompt="x"),
            progress={
                "intent": {
                    "detectedLanguage": "en",
                    "normalizedRequest": "x",
                    "intent": "x",
                    "primaryGoal": "x",
                }
            },
            task_id="t",
            instructions="x",
        ).model_dump(mode="json")
        for n, payload in enumerate([wrong_schema, unknown_type, other_stage, "plain text"]):
            await pool.enqueue_job(
                "handle", payload, _job_id=f"poison{n}", _queue_name=KEYS.queue("intent")
            )
        await pool.set("arq:job:not-json", b"\x80\x81 not json")
        await pool.zadd(KEYS.queue("intent"), {"not-json": 1})
        async with Client(relay_system.url, settings) as client:
            job_id = await client.submit("still alive")
            assert await client.result(job_id, timeout=20) == "still alive"
            for _ in range(100):
                if await redis_client.xlen(KEYS.dead_letters("")) >= 5:
                    break
                await asyncio.sleep(0.05)
    finally:
        await pool.aclose()
    dead = [
        {k.decode(): v.decode() for k, v in fields.items()}
        for _id, fields in await redis_client.xrange(KEYS.dead_letters(""))
    ]
    errors = " | ".join(d["error"] for d in dead)
    assert len(dead) == 5, errors
    assert "request: Field required" in errors
    assert "job.teleported" in errors
    assert "unknown type for worker intent: 'generation.requested'" in errors
    assert "not a JSON object" in errors
    assert any("not json" in d["raw"] for d in dead)


async def test_no_pickle_the_stored_arq_job_is_json(
    redis_url: str, redis_client: aioredis.Redis
) -> None:
    async with Client(redis_url) as client:  # no workers: the first message stays queued
        await client.submit("x", job_id="j1")
    raw = await redis_client.get("arq:job:j1:submitted")
    stored = json.loads(raw)
    assert stored["f"] == "handle"
    assert stored["a"][0]["message_id"] == "j1:submitted"
    assert not raw.startswith(b"\x80"), "a pickle stream starts with 0x80"


@asynccontextmanager
async def intent_actor(redis_url: str, settings: Settings) -> AsyncIterator[Actor]:
    """The relay intent stage's actor, run directly (no worker)."""
    pool = await connect_arq(redis_url)
    try:
        yield Actor(RELAY_WORKERS[0], Runtime.create(pool, KEYS, settings))
    finally:
        await pool.aclose()


async def submitted(actor: Actor, job_id: str) -> dict[str, Any]:
    """A job's first message as it lies on the queue, with its job record."""
    request = JobRequest(prompt="x")
    record = actor.runtime.jobs.created_commands(job_id, request, "-")
    await run_commands(actor.runtime.redis, record)
    return JobSubmitted(
        job_id=job_id, message_id=f"{job_id}:submitted", request=request
    ).model_dump(mode="json")


async def test_a_handler_run_twice_commits_once(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    async with intent_actor(redis_url, settings) as actor:
        await actor.run(await submitted(actor, "twice"), attempt=1)
        await actor.run(await submitted(actor, "twice"), attempt=2)
    statuses = [f[b"status"] for _id, f in await redis_client.xrange(KEYS.job_events("twice"))]
    assert statuses.count(b"completed") == 1
    assert await redis_client.zcard(KEYS.queue("planner")) == 1


def flaky_spec(failures: int) -> WorkerSpec:
    calls = {"n": 0}

    async def handle(message: object, runtime: Runtime) -> HopOutcome:
        calls["n"] += 1
        if calls["n"] <= failures:
            raise ConnectionError(f"transient failure {calls['n']}")
        return await RELAY_WORKERS[0].handle(message, runtime)  # type: ignore[arg-type]

    return WorkerSpec("intent", RELAY_WORKERS[0].accepts, handle)


async def test_a_failing_handler_is_retried_then_succeeds(
    redis_url: str, settings: Settings
) -> None:
    specs = [flaky_spec(failures=1), *RELAY_WORKERS[1:]]
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
        Client(system.url, settings) as client,
    ):
        job_id = await client.submit("retry me")
        assert await client.result(job_id, timeout=20) == "retry me"
        intent_events = [
            (e.status, e.attempt) for e in await client.events.read(job_id) if e.worker == "intent"
        ]
        assert intent_events == [("received", 1), ("retried", 1), ("received", 2), ("completed", 2)]


async def test_a_handler_out_of_tries_dead_letters_and_fails_the_job(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    specs = [flaky_spec(failures=99), *RELAY_WORKERS[1:]]
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
        Client(system.url, settings) as client,
    ):
        job_id = await client.submit("never")
        with pytest.raises(JobFailedError) as failure:
            await client.result(job_id, timeout=30)
        assert failure.value.status == "out_of_tries"
        assert "transient failure 3" in failure.value.error
    dead = await redis_client.xrange(KEYS.dead_letters(""))
    assert len(dead) == 1 and dead[0][1][b"job_id"] == job_id.encode()


async def test_two_processes_of_one_kind_share_its_queue(
    redis_url: str, settings: Settings
) -> None:
    # two jobs at a time per process, so neither replica can take the whole burst
    env = {
        **os.environ,
        "POSTEL_REDIS_URL": redis_url,
        "POSTEL_LOG_LEVEL": "WARNING",
        "POSTEL_CONCURRENCY": "2",
    }
    procs = [
        subprocess.Popen(script("relay_worker", "gasl", "--slow", "0.05"), env=with_support(env))
        for _ in range(2)
    ]
    others = [s for s in RELAY_WORKERS if s.name != "gasl"]
    try:
        async with (
            LocalSystem(settings, redis_url=redis_url, specs=others) as system,
            Client(system.url, settings) as client,
        ):
            await wait_for(client.pool, client.keyspace, "gasl", processes=2)
            ids = await asyncio.gather(*(client.submit(f"job {n}") for n in range(30)))
            records = await client.wait_all(ids, timeout=60)
            assert all(r.status == "completed" for r in records.values())
            instances: set[str] = set()
            for job_id in ids:
                gasl = [e for e in await client.events.read(job_id) if e.worker == "gasl"]
                assert [e.status for e in gasl] == ["received", "completed"], "handled once"
                instances.add(gasl[0].instance)
            assert len(instances) == 2, "both processes took jobs from the shared queue"
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)


async def test_a_rejected_model_request_fails_the_job_at_once(
    redis_url: str, settings: Settings
) -> None:
    from postel.services.llm import LLMRequestRejected

    async def rejected(message: object, runtime: Runtime) -> HopOutcome:
        raise LLMRequestRejected("HTTP 400: context too long", status_code=400, server_message="")

    specs = [WorkerSpec("intent", RELAY_WORKERS[0].accepts, rejected), *RELAY_WORKERS[1:]]
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
        Client(system.url, settings) as client,
    ):
        job_id = await client.submit("too long")
        with pytest.raises(JobFailedError) as failure:
            await client.result(job_id, timeout=20)
        attempts = [e.attempt for e in await client.events.read(job_id) if e.status == "received"]
    assert failure.value.status == "llm_error"
    assert "context too long" in failure.value.error
    assert attempts == [1], "not retried"


async def test_a_job_past_its_deadline_fails_as_deadline_exceeded(
    relay_system: LocalSystem, settings: Settings
) -> None:
    from postel.messages import JobOptions

    async with Client(relay_system.url, settings) as client:
        job_id = await client.submit("too late", options=JobOptions(deadline_s=0.000001))
        with pytest.raises(JobFailedError) as failure:
            await client.result(job_id, timeout=20)
    assert failure.value.status == "deadline_exceeded"


async def test_a_late_commit_upstream_does_not_reopen_a_finished_job(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    from postel.infra.store.commit import commit_once
    from postel.infra.store.jobs import JobStore

    pool = await connect_arq(redis_url)
    try:
        jobs = JobStore(pool, KEYS, 3600)
        await run_commands(pool, jobs.created_commands("raced", JobRequest(prompt="x"), "-"))
        finished = [jobs.finished_command("raced", result=1)]
        assert (
            await commit_once(
                pool, KEYS, KEYS.done("raced:last"), 60, finished, job_id="raced", message_ttl_s=60
            )
            == "committed"
        )
        # the upstream stage commits after its downstream already finished the job
        late = [jobs.running_command("raced", "validator")]
        dropped = [["SET", "raced:dropped", "1"]]
        result = await commit_once(
            pool,
            KEYS,
            KEYS.done("raced:earlier"),
            60,
            late,
            job_id="raced",
            message_ttl_s=60,
            dropped=lambda: dropped,
        )
        assert result == "refused"
        assert await redis_client.exists(KEYS.done("raced:earlier"), "raced:dropped") == 2
        record = await jobs.get("raced")
        assert (record.status, record.result) == ("completed", 1)
        await run_commands(pool, jobs.created_commands("fresh", JobRequest(prompt="x"), "-"))
        running = [jobs.running_command("fresh", "gasl")]
        assert await commit_once(
            pool, KEYS, KEYS.done("fresh:a"), 60, running, job_id="fresh", message_ttl_s=60
        ) == ("committed")
        assert await commit_once(
            pool, KEYS, KEYS.done("fresh:a"), 60, running, job_id="fresh", message_ttl_s=60
        ) == ("duplicate")
        assert (await jobs.get("fresh")).stage == "gasl"
    finally:
        await pool.aclose()


async def test_live_worker_processes_are_listed_and_withdrawn(
    redis_url: str, settings: Settings
) -> None:
    from postel.infra.runtime.presence import live_workers

    async with Client(redis_url, settings) as client:
        async with LocalSystem(settings, redis_url=redis_url, specs=RELAY_WORKERS):
            [presence] = await live_workers(client.pool, client.keyspace)
            assert presence.workers == ["intent", "planner", "gasl", "generator", "validator"]
            assert presence.ingress and presence.pid == os.getpid()
            env = {**os.environ, "POSTEL_REDIS_URL": redis_url, "POSTEL_LOG_LEVEL": "WARNING"}
            listed = subprocess.run(
                [sys.executable, "-m", "postel", "workers"],
                env=env,
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
            ).stdout
            assert "intent, planner, gasl, generator, validator + ingress" in listed
        assert await live_workers(client.pool, client.keyspace) == [], (
            "a stopped process withdraws at once"
        )


async def test_a_hops_wait_runs_from_the_commit_that_sent_it(
    redis_url: str, settings: Settings
) -> None:
    """The `received` event's wait_ms measures the bus: work the sender did after building a
    message (here half a second) belongs to the sender's hop, not to the next one's wait."""
    intent, planner = RELAY_WORKERS[:2]
    moments: dict[str, datetime] = {}

    async def builds_then_works(message: JobSubmitted, runtime: Runtime) -> HopOutcome:
        outcome = await intent.handle(message, runtime)
        await asyncio.sleep(0.5)
        moments["sender's work ended"] = utc_now()
        return outcome

    async def notes_its_start(message: Envelope, runtime: Runtime) -> HopOutcome:
        moments["planner started"] = utc_now()
        return await planner.handle(message, runtime)

    specs = [
        dataclasses.replace(intent, handle=builds_then_works),
        dataclasses.replace(planner, handle=notes_its_start),
        *RELAY_WORKERS[2:],
    ]
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
        Client(system.url, settings) as client,
    ):
        job_id = await client.submit("ping")
        await client.result(job_id, timeout=20)
        events = await client.events.read(job_id)
    intent_done = next(e for e in events if e.worker == "intent" and e.status == "completed")
    planner_received = next(e for e in events if e.worker == "planner" and e.status == "received")
    assert intent_done.duration_ms >= 500
    # the wait began after the sender's work, and ended before the planner's handler began
    between = moments["planner started"] - moments["sender's work ended"]
    assert planner_received.wait_ms <= between.total_seconds() * 1000 + 0.001


async def test_a_hops_wait_ends_when_its_run_starts_decoding_is_handling(
    redis_url: str, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait and the handling of a hop do not overlap: decoding the message (here slowed
    to 0.3 s) counts in the hop's duration_ms, not in its wait_ms."""

    decoding_started: list[datetime] = []

    def slow_decode(raw: Any) -> Envelope:
        decoding_started.append(utc_now())
        time.sleep(0.3)
        return decode_message(raw)

    monkeypatch.setattr(actor_module, "decode_message", slow_decode)
    async with intent_actor(redis_url, settings) as actor:
        payload = await submitted(actor, "slow")
        await actor.run(payload, attempt=1)
        events = await actor.runtime.events.read("slow")
    received = next(e for e in events if e.status == "received")
    completed = next(e for e in events if e.status == "completed")
    # the wait ran from the message's creation to no later than its decoding began
    created = JobSubmitted.model_validate(payload).created_at
    before_decoding = decoding_started[0] - created
    assert received.wait_ms <= before_decoding.total_seconds() * 1000 + 0.001
    assert completed.duration_ms >= 300


async def test_a_queued_message_lives_as_long_as_its_job_record(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    """A message waits on its queue as long as its job's record lives, not arq's one day: a
    queue whose workers are all down over a weekend loses nothing."""
    days = 3
    lasting = settings.model_copy(update={"job_ttl_s": days * 24 * 3600})
    async with intent_actor(redis_url, lasting) as actor:
        await actor.run(await submitted(actor, "lasting"), attempt=1)
    async with Client(redis_url, lasting) as client:
        await client.submit("x", job_id="waiting")
    for queued in ("arq:job:lasting:intent", "arq:job:waiting:submitted"):
        lives_ms = await redis_client.pttl(queued)
        assert (days - 0.01) * 24 * 3600 * 1000 < lives_ms <= days * 24 * 3600 * 1000, queued


async def test_a_commit_sends_its_dropped_and_missing_commands_only_when_it_runs_them(
    redis_url: str, redis_client: aioredis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dropped and missing commands (an event, a dead letter carrying the payload) would
    double what every hop's commit sends Redis: a commit neither makes nor sends them, and
    one that needs them is sent again with them."""
    from postel.infra.store.commit import commit_once
    from postel.infra.store.jobs import JobStore

    pool = await connect_arq(redis_url)
    sent: list[tuple[Any, ...]] = []
    evalsha = pool.evalsha

    async def spying(*args: Any) -> Any:
        sent.append(args)
        return await evalsha(*args)

    monkeypatch.setattr(pool, "evalsha", spying)
    dropped = [["SET", "rare:dropped", "1"]]
    missing = [["SET", "rare:missing", "1"]]
    made: list[str] = []

    def making(name: str, commands: list[list[str]]) -> Callable[[], list[list[str]]]:
        def make() -> list[list[str]]:
            made.append(name)
            return commands

        return make

    def carried(word: str) -> bool:
        return any(word in args for args in sent)

    try:
        jobs = JobStore(pool, KEYS, 3600)
        await run_commands(pool, jobs.created_commands("rare", JobRequest(prompt="x"), "-"))
        running = [jobs.running_command("rare", "gasl")]
        common = {
            "job_id": "rare",
            "message_ttl_s": 60,
            "dropped": making("dropped", dropped),
            "missing": making("missing", missing),
        }
        result = await commit_once(
            pool, KEYS, KEYS.done("rare:a"), 60, running, record="require", **common
        )
        assert (result, len(sent), made) == ("committed", 1, [])
        assert not carried("rare:dropped") and not carried("rare:missing")
        await run_commands(pool, [jobs.finished_command("rare", result=1)])
        sent.clear()
        result = await commit_once(
            pool, KEYS, KEYS.done("rare:b"), 60, running, record="require", **common
        )
        assert (result, len(sent)) == ("refused", 2)
        assert await redis_client.exists("rare:dropped", KEYS.done("rare:b")) == 2
        sent.clear()
        result = await commit_once(
            pool,
            KEYS,
            KEYS.done("gone:a"),
            60,
            running,
            record="require",
            **{**common, "job_id": "gone"},
        )
        assert (result, len(sent)) == ("missing", 2)
        assert await redis_client.exists("rare:missing") == 1
        assert await redis_client.exists(KEYS.done("gone:a")) == 0
    finally:
        await pool.aclose()
