"""Push, not poll (infra/runtime/wake.py): idle workers sleep until a wake-up, one wake-up wakes one
worker, a worker that leaves jobs behind wakes the next, and deferred or unannounced work is
picked up by the fallback look at the queue."""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from arq import Retry
from arq.connections import ArqRedis, RedisSettings
from arq.worker import func
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import WORKER_NAMES, Settings
from postel.infra.runtime.wake import _TAKE_JOBS, PushWorker
from postel.infra.store.connect import block_timeout_s
from postel.infra.store.keys import WAKE_TOKENS_MAX, Keyspace
from postel.infra.store.redis_server import EmbeddedRedis, free_port
from postel.infra.store.wire import connect_arq, dumps

from postel.testing.relay import RELAY_WORKERS

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""

JobFunction = Callable[..., Coroutine[Any, Any, Any]]


@asynccontextmanager
async def push_workers(
    url: str,
    function: JobFunction,
    *,
    replicas: int = 1,
    fallback_poll_s: float,
    max_jobs: int = 10,
) -> AsyncIterator[list[PushWorker]]:
    """`replicas` workers of the queue `postel:q:t`, each with its own connection pool, as
    separate processes would have."""
    workers = [
        PushWorker(
            functions=[func(function, name="f")],
            queue_name=KEYS.queue("t"),
            keyspace=KEYS,
            kind="t",
            wake_key=KEYS.wake("t"),
            fallback_poll_s=fallback_poll_s,
            lease_s=5,
            redis_settings=RedisSettings.from_dsn(url),
            max_jobs=max_jobs,
            handle_signals=False,
            job_serializer=dumps,
            # plain JSON: postel's own reader takes only postel's job shape (`handle`)
            job_deserializer=json.loads,
            log_results=False,
        )
        for _ in range(replicas)
    ]
    tasks = [asyncio.create_task(worker.async_run()) for worker in workers]
    try:
        await until_blocked(url, replicas)
        yield workers
    finally:
        # let started jobs finish: arq's close() cancels a job mid-finish
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(10):
                while any(not t.done() for w in workers for t in w.tasks.values()):
                    await asyncio.sleep(0.01)
        for worker in workers:
            await worker.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def until_blocked(url: str, replicas: int) -> None:
    """Until `replicas` clients of this database wait in BLPOP: the workers looked at the queue
    once at start and now sleep."""
    client = aioredis.Redis.from_url(url)
    db = str(client.get_connection_kwargs().get("db", 0))
    try:
        async with asyncio.timeout(10):
            while True:
                clients = await client.client_list()
                blocked = [c for c in clients if c["cmd"] == "blpop" and c["db"] == db]
                if len(blocked) >= replicas:
                    return
                await asyncio.sleep(0.01)
    finally:
        await client.aclose()


async def enqueue_unannounced(pool: ArqRedis, job_id: str) -> None:
    """Put a job on the queue the way arq alone would: no wake-up."""
    await pool.enqueue_job("f", job_id, _job_id=job_id, _queue_name=KEYS.queue("t"))


async def wake(redis: aioredis.Redis, worker: str) -> None:
    """What a commit does to wake a worker: one token on the queue's wake-up list."""
    await redis.lpush(KEYS.wake(worker), "1")
    await redis.ltrim(KEYS.wake(worker), 0, WAKE_TOKENS_MAX - 1)


async def until(condition: Callable[[], bool], timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


def noting_waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The seconds each wait for a wake-up of any worker started from now on may last."""
    waits: list[float] = []
    wait_and_take = PushWorker._wait_and_take

    async def noted(worker: PushWorker, timeout: float, *args: Any) -> Any:
        waits.append(timeout)
        return await wait_and_take(worker, timeout, *args)

    monkeypatch.setattr(PushWorker, "_wait_and_take", noted)
    return waits


async def test_a_deferred_retry_runs_with_no_other_traffic(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[float] = []
    waits = noting_waits(monkeypatch)

    async def flaky(ctx: dict[str, Any], job_id: str) -> None:
        runs.append(time.monotonic())
        if len(runs) == 1:
            raise Retry(defer=2)

    pool = await connect_arq(redis_url)
    try:
        async with push_workers(redis_url, flaky, fallback_poll_s=1.0):
            await enqueue_unannounced(pool, "deferred")
            await wake(pool, "t")
            await until(lambda: len(runs) == 2, timeout=10)
            wake_ups = await pool.llen(KEYS.wake("t"))
    finally:
        await pool.aclose()
    assert runs[1] - runs[0] >= 1.9, "not before it was due, 2 s after the first run"
    # no wake-up announced the retry: the worker found it by looking at the queue, never
    # sleeping longer than the fallback interval between looks
    assert wake_ups == 0
    assert len(waits) >= 2 and max(waits) <= 1.0


async def test_a_lost_wake_up_only_delays_work_by_the_fallback_interval(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[str] = []
    waits = noting_waits(monkeypatch)

    async def record(ctx: dict[str, Any], job_id: str) -> None:
        started.append(job_id)

    pool = await connect_arq(redis_url)
    try:
        async with push_workers(redis_url, record, fallback_poll_s=1.0):
            await enqueue_unannounced(pool, "unannounced")
            await until(lambda: bool(started), timeout=10)
    finally:
        await pool.aclose()
    # taken with no wake-up, after waits that each end within the fallback interval
    assert started == ["unannounced"]
    assert waits and max(waits) <= 1.0


async def test_an_idle_worker_sleeps_until_woken(redis_url: str) -> None:
    started: list[str] = []

    async def record(ctx: dict[str, Any], job_id: str) -> None:
        started.append(job_id)

    pool = await connect_arq(redis_url)
    try:
        async with push_workers(redis_url, record, fallback_poll_s=60):
            await enqueue_unannounced(pool, "quiet")
            await asyncio.sleep(1.5)
            assert started == [], "an idle worker does not look at its queue unprompted"
            await wake(pool, "t")
            await until(lambda: started == ["quiet"], timeout=5)
    finally:
        await pool.aclose()


async def test_the_wake_up_list_is_bounded(redis_url: str) -> None:
    pool = await connect_arq(redis_url)
    try:
        for _ in range(WAKE_TOKENS_MAX + 10):
            await wake(pool, "t")
        assert await pool.llen(KEYS.wake("t")) == WAKE_TOKENS_MAX
    finally:
        await pool.aclose()


@asynccontextmanager
async def private_redis() -> AsyncIterator[str]:
    """A server of the test's own: INFO commandstats counts every client of the server."""
    with tempfile.TemporaryDirectory(prefix="postel-wake-") as state_dir:
        async with EmbeddedRedis(free_port(), Path(state_dir)) as server:
            yield server.url


async def take_scripts_run(client: aioredis.Redis) -> int:
    stats = await client.info("commandstats")
    return int(stats.get("cmdstat_evalsha", {}).get("calls", 0))


async def test_one_wake_up_wakes_one_of_many_idle_replicas() -> None:
    started: list[str] = []

    async def record(ctx: dict[str, Any], job_id: str) -> None:
        started.append(job_id)

    async with private_redis() as url:
        pool = await connect_arq(url)
        try:
            async with push_workers(url, record, replicas=4, fallback_poll_s=60) as workers:
                before = await take_scripts_run(pool)
                await enqueue_unannounced(pool, "one")
                await wake(pool, "t")
                await until(lambda: started == ["one"], timeout=5)
                await asyncio.sleep(0.3)
                assert await take_scripts_run(pool) - before == 1, "one worker looked, once"
                assert sum(w.jobs_complete for w in workers) == 1
        finally:
            await pool.aclose()


async def test_a_full_worker_leaving_jobs_behind_wakes_the_next_replica(redis_url: str) -> None:
    running: dict[str, int] = {}
    release = asyncio.Event()

    async def hold(ctx: dict[str, Any], job_id: str) -> None:
        running[job_id] = id(ctx["redis"])
        await release.wait()

    pool = await connect_arq(redis_url)
    try:
        async with push_workers(redis_url, hold, replicas=2, fallback_poll_s=60, max_jobs=1):
            await enqueue_unannounced(pool, "first")
            await enqueue_unannounced(pool, "second")
            await wake(pool, "t")
            # the second job starts on the other replica while the first one is held (no
            # replica looks again unprompted: the fallback poll is 60 s away)
            await until(lambda: len(running) == 2, timeout=30)
            release.set()
    finally:
        release.set()
        await pool.aclose()
    assert len(set(running.values())) == 2, "one job on each replica"


async def test_a_taken_job_starts_with_no_round_trip_of_its_own() -> None:
    """The take script reads the job and counts its try: the only transaction a job costs is
    arq's finish (arq's own start is a second one)."""
    tries: list[int] = []

    async def record(ctx: dict[str, Any], job_id: str) -> None:
        tries.append(ctx["job_try"])
        if len(tries) == 1:
            raise Retry(defer=0.1)

    async with private_redis() as url:
        pool = await connect_arq(url)
        try:
            async with push_workers(url, record, fallback_poll_s=0.2):
                before = await commands_run(pool, "exec")
                await enqueue_unannounced(pool, "counted")
                await wake(pool, "t")
                await until(lambda: len(tries) == 2, timeout=5)
                await asyncio.sleep(0.3)
                # arq's enqueue, then one finish per run (arq's own start would add one each)
                assert await commands_run(pool, "exec") - before == 3
        finally:
            await pool.aclose()
    assert tries == [1, 2], "the try count read by the take script"


async def test_a_job_whose_payload_expired_is_removed_without_running(redis_url: str) -> None:
    started: list[str] = []

    async def record(ctx: dict[str, Any], job_id: str) -> None:
        started.append(job_id)

    pool = await connect_arq(redis_url)
    try:
        await enqueue_unannounced(pool, "gone")
        await pool.delete("arq:job:gone")
        await enqueue_unannounced(pool, "kept")
        async with push_workers(redis_url, record, fallback_poll_s=60):
            await until(lambda: started == ["kept"], timeout=5)
            async with asyncio.timeout(5):
                while await pool.zcard(KEYS.queue("t")):
                    await asyncio.sleep(0.01)
    finally:
        await pool.aclose()
    assert started == ["kept"]


async def commands_run(pool: ArqRedis, command: str) -> int:
    stats = await pool.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


async def test_a_hop_commits_and_leaves_its_queue_in_one_script() -> None:
    """The commit removes the handled message from its queue: no hop of a job costs arq's
    finish transaction, and nothing is left queued."""
    settings = Settings(log_level="WARNING")
    async with (
        private_redis() as url,
        LocalSystem(settings, redis_url=url, specs=RELAY_WORKERS),
        Client(url, settings) as client,
    ):
        await client.result(await client.submit("warm up"), timeout=20)
        before = await commands_run(client.pool, "exec")
        await client.result(await client.submit("counted"), timeout=20)
        assert await commands_run(client.pool, "exec") == before
        for worker in WORKER_NAMES:
            assert await client.pool.zcard(KEYS.queue(worker)) == 0
        assert not await client.pool.keys("arq:job:*")
        assert not await client.pool.keys("arq:retry:*")


class _CountedScript:
    """The take script, counting the calls made with a round trip of their own."""

    def __init__(self, script: Any) -> None:
        self.script, self.sha, self.calls = script, script.sha, 0

    async def __call__(self, **kwargs: Any) -> Any:
        self.calls += 1
        return await self.script(**kwargs)


@asynccontextmanager
async def one_worker_noting_starts() -> AsyncIterator[tuple[ArqRedis, PushWorker, list[str]]]:
    """A pool to enqueue with and one worker (on a private Redis, 60 s fallback) whose job
    notes its id as it starts."""
    started: list[str] = []

    async def note(ctx: dict[str, Any], job_id: str) -> None:
        started.append(job_id)

    async with private_redis() as url:
        pool = await connect_arq(url)
        try:
            async with push_workers(url, note, fallback_poll_s=60) as [worker]:
                yield pool, worker, started
        finally:
            await pool.aclose()


async def test_a_woken_worker_takes_in_its_waits_round_trip() -> None:
    """After its first look at the queue, a worker's take rides in the pipeline of its BLPOP:
    woken, it starts the job with no round trip of its own to take it."""
    async with one_worker_noting_starts() as (pool, worker, started):
        counted = _CountedScript(worker._take_script)
        worker._take_script = counted  # type: ignore[assignment]
        for n in range(3):
            await enqueue_unannounced(pool, f"job-{n}")
            await wake(pool, "t")
            await until(lambda n=n: len(started) == n + 1, timeout=5)
        assert counted.calls == 0


async def test_a_taken_job_starts_before_its_worker_waits_again() -> None:
    """A woken worker lets the jobs it took start before it writes its next wait: a hop does
    not wait for the worker's own bookkeeping."""
    started_by_next_wait: list[int] = []
    async with one_worker_noting_starts() as (pool, worker, started):
        wait_and_take = worker._wait_and_take

        async def watched(*args: Any) -> Any:
            started_by_next_wait.append(len(started))
            return await wait_and_take(*args)

        worker._wait_and_take = watched  # type: ignore[method-assign]
        await enqueue_unannounced(pool, "job-0")
        await wake(pool, "t")
        await until(lambda: bool(started_by_next_wait), timeout=5)
        assert started_by_next_wait[0] == 1


TAKE_KEYS = ["q", "w", "q:turns", "q:held"]
"""The take script's keys for the queue `q`: its wake-up list, turns and held turns."""


def take_args(free: int, limit: int, lane: str = "") -> list[str | int]:
    """The take script's arguments as a worker of `lane` sends them (lease 5 s)."""
    prefixes = [lane, KEYS.done_prefix(lane), KEYS.job_prefix(lane), "q:held:"]
    return [free, limit, "arq:in-progress:", 5000, "arq:job:", "arq:retry:", 60, *prefixes]


async def test_the_take_says_whether_each_taken_message_must_run() -> None:
    """What a hop would otherwise ask in a round trip before its handler starts, the take
    answers for each job it takes: `new` (and a queued job becomes running), `handled` (its
    done marker is set), `job_finished`, `missing` (no record)."""
    async with private_redis() as url:
        redis = aioredis.Redis.from_url(url)
        take = redis.register_script(_TAKE_JOBS)
        try:
            now_ms = int(time.time() * 1000) - 1_000
            records = {"jq": "queued", "jr": "running", "jh": "running", "jc": "completed"}
            records |= {"jf": "failed"}
            for job_id, status in records.items():
                await redis.hset(KEYS.job(job_id), mapping={"status": status})
            await redis.set(KEYS.done("jh:step"), "1")
            messages = ["jq:step", "jr:step", "jh:step", "jc:step", "jf:step", "jm:step"]
            await redis.zadd("q", {message: now_ms + n for n, message in enumerate(messages)})
            jobs, _left_behind, _next_due = await take(keys=TAKE_KEYS, args=take_args(10, 100))
            verdicts = {jobs[i].decode(): jobs[i + 4].decode() for i in range(0, len(jobs), 6)}
            assert verdicts == {
                "jq:step": "new",
                "jr:step": "new",
                "jh:step": "handled",
                "jc:step": "job_finished",
                "jf:step": "job_finished",
                "jm:step": "missing",
            }
            assert await redis.hget(KEYS.job("jq"), "status") == b"running"
            assert not await redis.exists(KEYS.job("jm")), "a missing record stays missing"
        finally:
            await redis.aclose()


async def test_a_take_reads_past_the_running_front_of_the_queue_page_by_page() -> None:
    """The take script reads the queue in growing pages: jobs behind a long front of jobs
    other workers hold are taken, a page boundary loses none, and the look-ahead limit and
    the first job not yet due still bound the read."""
    async with private_redis() as url:
        redis = aioredis.Redis.from_url(url)
        take = redis.register_script(_TAKE_JOBS)

        async def taken(free: int, limit: int) -> tuple[list[str], int, str]:
            jobs, left_behind, next_due = await take(keys=TAKE_KEYS, args=take_args(free, limit))
            return [jobs[i].decode() for i in range(0, len(jobs), 6)], left_behind, next_due

        try:
            now_ms = int(time.time() * 1000)
            await redis.zadd("q", {f"j{n:03}": now_ms - 10_000 + n for n in range(60)})
            await redis.zadd("q", {"later": now_ms + 60_000})
            for n in range(45):  # held by other workers: the first pages hold nothing free
                await redis.set(f"arq:in-progress:j{n:03}", "1", px=60_000)
            assert await taken(free=2, limit=100) == (["j045", "j046"], 1, b"")
            # the look-ahead stops the read before any free job
            assert await taken(free=2, limit=40) == ([], 0, b"")
            # every free job taken, the read ends at the first job not yet due: the first
            # job taken above, now due when its lease ends
            names, left_behind, next_due = await taken(free=20, limit=100)
            assert names == [f"j{n:03}" for n in range(47, 60)]
            lease_end = await redis.zscore("q", "j045")
            assert (left_behind, next_due) == (0, str(int(lease_end)).encode())
        finally:
            await redis.aclose()


async def test_a_taken_job_is_due_again_when_its_lease_ends_so_takes_pass_it_by() -> None:
    """The take scores a job it takes at its lease's end (and says so): the next take reads
    the ready jobs behind it, not the running ones, within a look-ahead of two."""
    async with private_redis() as url:
        redis = aioredis.Redis.from_url(url)
        take = redis.register_script(_TAKE_JOBS)

        async def taken(free: int, limit: int) -> list[tuple[str, int]]:
            jobs, _left_behind, _next_due = await take(keys=TAKE_KEYS, args=take_args(free, limit))
            return [(jobs[i].decode(), int(jobs[i + 1])) for i in range(0, len(jobs), 6)]

        try:
            seconds, micros = await redis.time()  # the clock the take script reads
            now_ms = seconds * 1000 + micros // 1000
            await redis.zadd("q", {f"j{n}": now_ms - 1_000 + n for n in range(6)})
            first = await taken(free=2, limit=2)
            assert [name for name, _score in first] == ["j0", "j1"]
            for name, score in first:
                assert await redis.zscore("q", name) == score
                assert score >= now_ms + 5000  # taken at Redis's now_ms or later, leased 5 s
                assert await redis.pttl(f"arq:in-progress:{name}") > 0
            assert [name for name, _score in await taken(free=2, limit=2)] == ["j2", "j3"]
        finally:
            await redis.aclose()


async def test_a_wait_due_within_a_millisecond_ends_and_does_not_block_forever(
    redis_url: str,
) -> None:
    """Redis 6.2 reads a BLPOP timeout of 0.001 as 0, forever; the shortest wait any waiter
    (a worker's, the callback sender's) asks for still ends without a wake-up."""
    client = aioredis.Redis.from_url(redis_url)
    try:
        async with asyncio.timeout(10):
            assert await client.blpop([KEYS.wake("t")], block_timeout_s(0.001)) is None
    finally:
        await client.aclose()
