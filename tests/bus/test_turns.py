"""Who goes first (infra/store/turns.py): higher classes first, with aging bounded by the
classes' advance; tenants in turn within a class; deferred jobs fall due when asked; a
job's later hops keep its class and tenant; every key a queue's turns use is in its lane."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta

import pytest
import redis
import redis.asyncio as aioredis
from click.testing import Result
from postel.infra.runtime.actor import Runtime
from postel.infra.runtime.ingress import IngressConsumer
from postel.infra.runtime.settings import ProducerDefaults, Settings
from postel.infra.runtime.submit import start_job, submit_job
from postel.infra.runtime.wake import _TAKE_JOBS
from postel.infra.store import commit
from postel.infra.store.events import EventLog
from postel.infra.store.jobs import JobStore
from postel.infra.store.keys import Keyspace
from postel.infra.store.turns import CLASS_ADVANCE_MS, PRIORITY_GAP_MS, TENANT_WINDOW
from postel.infra.store.wire import connect_arq
from postel.messages import JobFailed, JobOptions, JobRequest, JobSubmitted, ids, utc_now
from postel.messages.job import Priority
from redis.cluster import key_slot

KEYS = Keyspace()


class Queue:
    """The intent queue of the tests' Redis, filled by submissions and read by the take
    script as a worker with one free slot sends it."""

    def __init__(self, redis: aioredis.Redis, events: EventLog, jobs: JobStore) -> None:
        self.redis = redis
        self.events = events
        self.jobs = jobs
        self.take = redis.register_script(_TAKE_JOBS)

    async def submit(self, job_id: str, priority: Priority = "normal", tenant: str = "t") -> None:
        first = JobSubmitted(
            job_id=job_id,
            message_id=ids.message_id(job_id, ids.SUBMITTED),
            request=JobRequest(prompt=job_id),
            priority=priority,
            tenant=tenant,
        )
        assert await start_job(self.redis, self.events, self.jobs, first, source="test")  # type: ignore[arg-type]

    async def take_one(self) -> str | None:
        keys = [
            KEYS.queue("intent"),
            KEYS.wake("intent"),
            KEYS.turns("intent"),
            KEYS.held_turns("intent"),
        ]
        args = [1, 1000, "arq:in-progress:", 60_000, "arq:job:", "arq:retry:", 60]
        args += ["", KEYS.done_prefix(""), KEYS.job_prefix(""), KEYS.held_prefix("intent")]
        jobs, _left_behind, _next_due = await self.take(keys=keys, args=args)
        return ids.job_of(jobs[0].decode()) if jobs else None

    async def take_all(self) -> list[str]:
        order = []
        while (job_id := await self.take_one()) is not None:
            order.append(job_id)
        return order


@pytest.fixture
async def queue(redis_url: str, settings: Settings) -> AsyncIterator[Queue]:
    pool = await connect_arq(redis_url)
    try:
        events = EventLog(pool, KEYS, settings.events_maxlen, settings.job_events_maxlen, 3600)
        yield Queue(pool, events, JobStore(pool, KEYS, 3600))
    finally:
        await pool.aclose()


async def test_every_stage_takes_higher_classes_first(queue: Queue) -> None:
    for priority in ("batch", "normal", "interactive"):
        for n in range(3):
            await queue.submit(f"{priority}-{n}", priority, tenant=f"t{n}")
    order = await queue.take_all()
    assert order == [f"{p}-{n}" for p in ("interactive", "normal", "batch") for n in range(3)]


@pytest.mark.parametrize("later_ms", [-1, 1])
async def test_aging_a_batch_message_is_overtaken_only_within_the_classes_advance(
    queue: Queue, monkeypatch: pytest.MonkeyPatch, later_ms: int
) -> None:
    """The documented bound: a message goes before every message of a higher class that
    enters its queue more than the classes' advance after it (2 gaps from batch to
    interactive), and after one that enters sooner."""
    gap = CLASS_ADVANCE_MS["interactive"] - CLASS_ADVANCE_MS["batch"]
    assert gap == 2 * PRIORITY_GAP_MS
    batch_enters = utc_now() - timedelta(milliseconds=3 * gap)
    clock = [batch_enters]
    monkeypatch.setattr(commit, "utc_now", lambda: clock[0])
    await queue.submit("batch", "batch", tenant="a")
    clock[0] = batch_enters + timedelta(milliseconds=gap + later_ms)
    await queue.submit("interactive", "interactive", tenant="b")
    expected = ["batch", "interactive"] if later_ms > 0 else ["interactive", "batch"]
    assert await queue.take_all() == expected


async def test_within_a_class_tenants_are_served_in_turn(queue: Queue) -> None:
    """Tenant a's backlog of 20 arrived first; b's 3 are taken within the first two windows,
    not after a's 20."""
    for n in range(20):
        await queue.submit(f"a{n:02}", tenant="a")
    for n in range(3):
        await queue.submit(f"b{n}", tenant="b")
    order = await queue.take_all()
    assert sorted(order) == sorted([f"a{n:02}" for n in range(20)] + ["b0", "b1", "b2"])
    assert max(order.index(f"b{n}") for n in range(3)) < 2 * TENANT_WINDOW
    assert [job for job in order if job.startswith("a")] == [f"a{n:02}" for n in range(20)]
    held = await queue.redis.llen(KEYS.held("intent", "", "normal|a"))
    assert held == 0, "every held message was given a turn"


async def test_a_tenant_beyond_its_window_waits_in_its_held_list(queue: Queue) -> None:
    for n in range(TENANT_WINDOW + 2):
        await queue.submit(f"a{n}", tenant="a")
    assert await queue.redis.zcard(KEYS.queue("intent")) == TENANT_WINDOW
    assert await queue.redis.llen(KEYS.held("intent", "", "normal|a")) == 2
    assert await queue.redis.hget(KEYS.turns("intent"), "normal|a") == str(TENANT_WINDOW).encode()


async def test_counts_that_drifted_are_mended_when_nothing_can_be_taken(queue: Queue) -> None:
    """A ready message removed by hand leaves its tenant's count high; a take that finds
    nothing to take while messages are held gives each held tenant a fresh window."""
    for n in range(TENANT_WINDOW + 1):
        await queue.submit(f"a{n}", tenant="a")
    await queue.redis.delete(KEYS.queue("intent"))  # the ready ones, gone untaken
    assert await queue.take_one() is None  # mends: a4 enters the queue
    assert await queue.take_all() == [f"a{TENANT_WINDOW}"]
    assert not await queue.redis.exists(KEYS.held_turns("intent"))


async def test_a_deferred_job_is_recorded_scheduled_and_falls_due_then(
    queue: Queue, redis_url: str
) -> None:
    starts = utc_now() + timedelta(hours=1)
    request = JobRequest(prompt="later", options=JobOptions(not_before=starts, tenant="a"))
    job_id = await submit_job(queue.redis, queue.events, queue.jobs, request, "later")  # type: ignore[arg-type]
    record = await queue.jobs.get(job_id)
    assert record.status == "queued" and record.scheduled
    assert record.not_before == starts and record.tenant == "a"
    assert await queue.take_one() is None, "not due for an hour"
    score = await queue.redis.zscore(KEYS.queue("intent"), "later:submitted")
    assert score == int(starts.timestamp() * 1000)
    # it takes no turn of its tenant's: a's next job is ready at once
    await queue.submit("now", tenant="a")
    assert await queue.take_one() == "now"


async def test_delay_s_defers_by_that_long_and_deadlines_count_from_the_start(
    queue: Queue,
) -> None:
    options = JobOptions(delay_s=600, deadline_s=60)
    job_id = await submit_job(
        queue.redis,  # type: ignore[arg-type]
        queue.events,
        queue.jobs,
        JobRequest(prompt="x", options=options),
        "delayed",
    )
    record = await queue.jobs.get(job_id)
    assert record.not_before is not None
    assert record.scheduled
    score = await queue.redis.zscore(KEYS.queue("intent"), "delayed:submitted")
    assert score == int(record.not_before.timestamp() * 1000), "it falls due then"
    raw = await queue.redis.get("arq:job:delayed:submitted")
    assert raw is not None
    assert datetime.fromisoformat(_deadline(raw)) >= record.not_before + timedelta(seconds=60)


def _deadline(payload: bytes) -> str:
    message = json.loads(payload)["a"][0]
    deadline: str = message["deadline"]
    return deadline


async def test_the_way_ins_defaults_yield_to_the_requests_own_options(queue: Queue) -> None:
    plain = JobRequest(prompt="x")
    own = JobRequest(prompt="y", options=JobOptions(priority="interactive", tenant="mine"))
    for job_id, request in (("plain", plain), ("own", own)):
        await submit_job(
            queue.redis,  # type: ignore[arg-type]
            queue.events,
            queue.jobs,
            request,
            job_id,
            priority="batch",
            tenant="producer",
        )
    plain_record, own_record = await queue.jobs.get("plain"), await queue.jobs.get("own")
    assert (plain_record.priority, plain_record.tenant) == ("batch", "producer")
    assert (own_record.priority, own_record.tenant) == ("interactive", "mine")


def test_a_jobs_later_hops_keep_its_class_and_tenant() -> None:
    first = JobSubmitted(
        job_id="j",
        message_id="j:submitted",
        request=JobRequest(prompt="x"),
        priority="batch",
        tenant="acme",
    )
    ended = first.derive(JobFailed, ids.FAILED, status="llm_error", error="x")
    assert (ended.priority, ended.tenant) == ("batch", "acme")


def test_on_a_cluster_a_queues_turns_lie_in_its_lane() -> None:
    """The commit and take scripts touch a queue with its wake-up list, turns hash, held
    turns and held lists: one hash slot per lane."""
    cluster = Keyspace(lane_count=16)
    for lane in cluster.lanes():
        keys = [
            cluster.queue("gasl", lane),
            cluster.wake("gasl", lane),
            cluster.turns("gasl", lane),
            cluster.held_turns("gasl", lane),
            cluster.held("gasl", lane, "batch|acme"),
            cluster.held_prefix("gasl", lane) + "normal|other",
            cluster.running_prefix("gasl", lane) + "acme",
        ]
        assert len({key_slot(key.encode()) for key in keys}) == 1


async def test_an_ingress_producers_jobs_get_its_class_and_tenant(
    redis_url: str, settings: Settings
) -> None:
    """POSTEL_PRODUCERS sets a producer's class; its tenant is its name unless configured;
    a job's own options win; an entry naming no producer gets the last resorts."""
    settings = settings.model_copy(
        update={"producers": {"nightly": ProducerDefaults(priority="batch")}}
    )
    pool = await connect_arq(redis_url)
    try:
        consumer = IngressConsumer(Runtime.create(pool, KEYS, settings))
        own = json.dumps({"prompt": "y", "options": {"priority": "interactive", "tenant": "x"}})
        entries = {
            "n": {"job": json.dumps({"prompt": "x"}), "job_id": "n", "producer": "nightly"},
            "o": {"job": own, "job_id": "o", "producer": "nightly"},
            "a": {"job": json.dumps({"prompt": "z"}), "job_id": "a"},
        }
        for n, fields in enumerate(entries.values()):
            await consumer.handle(f"1-{n}", fields)
        jobs = JobStore(pool, KEYS, 3600)
        classes = {job_id: await jobs.get(job_id) for job_id in entries}
        assert (classes["n"].priority, classes["n"].tenant) == ("batch", "nightly")
        assert (classes["o"].priority, classes["o"].tenant) == ("interactive", "x")
        assert (classes["a"].priority, classes["a"].tenant) == ("normal", "default")
    finally:
        await pool.aclose()


def test_the_command_line_submits_with_class_tenant_and_deferral(
    redis_url: str, in_process: Callable[..., Result]
) -> None:
    env = {"POSTEL_REDIS_URL": redis_url}
    args = ["--priority", "batch", "--tenant", "acme", "--delay-s", "3600", "--job-id", "c1"]
    submitted = in_process("submit", "later please", *args, env=env)
    assert submitted.exit_code == 0, submitted.stderr
    bad = in_process("submit", "x", "--not-before", "2030-01-01T09:00:00", env=env)
    assert bad.exit_code == 2 and "time zone" in bad.stderr
    client = redis.Redis.from_url(redis_url)
    try:
        record = client.hgetall(KEYS.job("c1"))
    finally:
        client.close()
    assert (record[b"priority"], record[b"tenant"]) == (b"batch", b"acme")
    assert b"not_before" in record
