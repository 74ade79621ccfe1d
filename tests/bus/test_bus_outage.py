"""Workers ride out Redis outages: a worker process (all five relay stages and the ingress
consumer) keeps running while its Redis is killed and restarted on the same port and
directory, and every job submitted before or after the outage completes, once."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from postel.infra.client.client import Client
from postel.infra.runtime.presence import BEAT_S, live_workers, wait_for
from postel.infra.runtime.settings import Settings
from postel.infra.store.keys import Keyspace
from postel.infra.store.redis_server import free_port, port_is_open, redis_server_binary
from support import script, with_support

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""

STAGES = ["intent", "planner", "gasl", "generator", "validator"]


class CrashableRedis:
    """A redis-server that keeps every write in its append-only file (fsync always), so a
    SIGKILL loses nothing acknowledged: what the test measures is the workers, not fsync."""

    def __init__(self, state_dir: Path) -> None:
        self.port = free_port()
        self.state_dir = state_dir
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [
                str(redis_server_binary()),
                *("--port", str(self.port), "--bind", "127.0.0.1"),
                *("--dir", str(self.state_dir), "--save", ""),
                *("--appendonly", "yes", "--appendfsync", "always"),
                *("--logfile", str(self.state_dir / "redis.log")),
            ],
            stdout=subprocess.DEVNULL,
        )
        async with asyncio.timeout(10):
            while not port_is_open(self.port):
                await asyncio.sleep(0.02)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)


def start_relay_process(url: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "POSTEL_REDIS_URL": url, "POSTEL_LOG_LEVEL": "INFO"}
    with log.open("wb") as sink:
        return subprocess.Popen(
            script("relay_worker", *STAGES, "--ingress", "--slow", "0.2"),
            env=with_support(env),
            stderr=sink,
        )


@pytest.mark.parametrize("outage_s", [1, 10])
async def test_workers_ride_out_a_redis_outage(
    tmp_path: Path, settings: Settings, outage_s: float
) -> None:
    server = CrashableRedis(tmp_path / "redis")
    await server.start()
    log = tmp_path / "worker.log"
    worker = start_relay_process(server.url, log)
    try:
        async with Client(server.url, settings) as client:
            await wait_for(client.pool, client.keyspace, "intent", processes=1)
            before = [await client.submit(f"before {n}") for n in range(10)]
            await asyncio.sleep(0.3)  # some of them mid-hop when Redis dies
        server.kill()
        await asyncio.sleep(outage_s)
        assert worker.poll() is None, "the worker process is still running during the outage"
        await server.start()
        restarted = time.perf_counter()
        async with Client(server.url, settings) as client:
            after = [await client.submit(f"after {n}") for n in range(10)]
            raw = aioredis.Redis.from_url(server.url)
            body = json.dumps({"prompt": "after, by ingress"})
            await raw.xadd(KEYS.ingress, {"job": body, "job_id": "ingress-after"})
            async with asyncio.timeout(30):
                while not await raw.exists(KEYS.job("ingress-after")):
                    await asyncio.sleep(0.05)
            await raw.aclose()
            jobs = [*before, *after, "ingress-after"]
            records = await client.wait_all(jobs, timeout=60)
            drained_s = time.perf_counter() - restarted
            assert {job: r.status for job, r in records.items()} == dict.fromkeys(jobs, "completed")
            for job in jobs:
                finished = [e for e in await client.events.read(job) if e.type == "job.completed"]
                assert len(finished) == 1, f"{job} completed once"
            # presence still refreshes: a deleted presence key comes back within a beat
            for presence in await live_workers(client.pool, client.keyspace):
                await client.pool.delete(KEYS.worker(presence.instance))
            async with asyncio.timeout(BEAT_S + 5):
                while not await live_workers(client.pool, client.keyspace):
                    await asyncio.sleep(0.1)
            assert [p.pid for p in await live_workers(client.pool, client.keyspace)] == [worker.pid]
        assert worker.poll() is None, "no worker process exited"
    except BaseException:
        print(log.read_text(errors="replace")[-4000:])
        raise
    finally:
        worker.terminate()
        worker.wait(20)
        if server.process is not None and server.process.poll() is None:
            server.kill()
    assert "redis unreachable; retrying" in log.read_text()
    print(f"{outage_s} s outage: {len(jobs)} jobs completed {drained_s:.1f} s after the restart")


async def test_a_worker_process_exits_once_redis_is_gone_longer_than_the_give_up_time(
    tmp_path: Path, settings: Settings
) -> None:
    from postel.infra.runtime.runner import run_workers
    from redis.exceptions import ConnectionError as RedisConnectionError

    from postel.testing.relay import RELAY_WORKERS

    server = CrashableRedis(tmp_path / "redis")
    await server.start()
    ready = asyncio.Event()
    running = asyncio.create_task(
        run_workers(
            STAGES,
            settings.model_copy(update={"redis_give_up_s": 1.0}),
            server.url,
            ready=ready,
            specs=RELAY_WORKERS,
        )
    )
    try:
        await asyncio.wait_for(ready.wait(), 10)
        await asyncio.sleep(0.2)
        server.kill()
        with pytest.raises(RedisConnectionError):
            await asyncio.wait_for(running, 10)
    finally:
        running.cancel()
        if server.process is not None and server.process.poll() is None:
            server.kill()


def test_postel_worker_gives_up_with_exit_code_3_when_told_to() -> None:
    env = {
        **os.environ,
        "POSTEL_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
        "POSTEL_REDIS_GIVE_UP_S": "1",
        "POSTEL_LOG_LEVEL": "WARNING",
    }
    done = subprocess.run(
        [sys.executable, "-m", "postel", "worker", "validator"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 3, done.stderr
    assert "cannot reach Redis" in done.stderr
    assert done.stderr.count("redis unreachable; retrying") >= 2, "each attempt is logged"


async def lease_renewal_across_an_outage(
    tmp_path: Path, settings: Settings, outage_s: float
) -> bool:
    """Hold a 1 s lease, kill Redis for `outage_s`, restart it: does the lease key still
    exist 3 s later?"""
    from postel.infra.runtime.actor import Actor, Runtime
    from postel.infra.store.wire import connect_arq

    from postel.testing.relay import RELAY_WORKERS

    server = CrashableRedis(tmp_path / "redis")
    await server.start()
    pool = await connect_arq(server.url)
    try:
        actor = Actor(
            RELAY_WORKERS[0],
            Runtime.create(pool, KEYS, settings.model_copy(update={"lease_s": 1.0})),
        )
        await pool.set("arq:in-progress:leased", b"1", px=1000)
        renewing = asyncio.create_task(actor._renew_lease("arq:in-progress:leased"))
        await asyncio.sleep(0.3)
        server.kill()
        await asyncio.sleep(outage_s)
        await server.start()
        await asyncio.sleep(3)
        held = bool(await pool.exists("arq:in-progress:leased"))
        renewing.cancel()
        await asyncio.gather(renewing, return_exceptions=True)
        return held
    finally:
        await pool.aclose()
        server.kill()


async def test_a_lease_is_renewed_again_after_a_short_outage(
    tmp_path: Path, settings: Settings
) -> None:
    assert await lease_renewal_across_an_outage(tmp_path, settings, outage_s=0.5), (
        "renewal survived failed PEXPIREs and kept the lease past its first expiry"
    )


async def test_a_lease_that_lapsed_during_an_outage_is_not_recreated(
    tmp_path: Path, settings: Settings
) -> None:
    assert not await lease_renewal_across_an_outage(tmp_path, settings, outage_s=1.5), (
        "a lapsed lease may belong to another worker by now"
    )


async def test_after_an_outage_an_ingress_consumer_reads_its_own_pending_entries_first(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    """Entries the consumer had read when Redis went away are pending on it when Redis is
    back: it submits them at once, not after claim_idle_ms (60 s here)."""
    from postel.infra.runtime.actor import Runtime
    from postel.infra.runtime.ingress import IngressConsumer
    from postel.infra.store.wire import connect_arq
    from redis.exceptions import ConnectionError as RedisConnectionError

    pool = await connect_arq(redis_url)
    try:
        consumer = IngressConsumer(Runtime.create(pool, KEYS, settings), claim_idle_ms=60_000)
        await consumer.ensure_group()
        for n in range(5):
            await redis_client.xadd(KEYS.ingress, {"job": json.dumps({"prompt": f"p{n}"})})
        # read before the outage, never submitted: pending on this consumer
        await redis_client.xreadgroup(KEYS.ingress_group, consumer.name, {KEYS.ingress: ">"})
        real_claim = consumer.redis.xautoclaim
        outage = {"left": 1}

        async def claim_in_an_outage(*args: object, **kwargs: object) -> object:
            if outage["left"]:
                outage["left"] -= 1
                raise RedisConnectionError("Connection closed by server.")
            return await real_claim(*args, **kwargs)

        consumer.redis.xautoclaim = claim_in_an_outage  # type: ignore[method-assign]
        running = asyncio.create_task(consumer.run())

        async def acknowledged() -> bool:
            return (await redis_client.xpending(KEYS.ingress, KEYS.ingress_group))["pending"] == 0

        try:
            async with asyncio.timeout(20):
                while not await acknowledged():
                    await asyncio.sleep(0.05)
        finally:
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running
        assert len(await redis_client.keys("postel:job:ingress-*")) == 5
    finally:
        await pool.aclose()


async def test_a_handler_that_loses_redis_more_often_than_its_tries_still_completes(
    redis_url: str, settings: Settings
) -> None:
    """Each of the planner's first runs meets an error that means "Redis is not answering
    now", more runs than the message has tries (3): each is ridden out, gives back its try,
    and is never recorded as the message's failure."""
    from postel.infra.runtime.actor import HopOutcome, Runtime, WorkerSpec
    from postel.infra.runtime.local_system import LocalSystem
    from postel.infra.store.connect import ServerBusyError
    from postel.messages import Envelope
    from redis.exceptions import ClusterDownError, MovedError, ReadOnlyError

    from postel.testing.relay import RELAY_WORKERS

    intent, planner, *rest = RELAY_WORKERS
    outages: list[Exception] = [
        ClusterDownError("The cluster is down"),
        MovedError("3999 127.0.0.1:6381"),
        ReadOnlyError("You can't write against a read only replica."),
        ServerBusyError("Redis is busy running a script."),
    ]
    assert len(outages) > settings.queue("planner").max_tries

    async def losing_redis(message: Envelope, runtime: Runtime) -> HopOutcome:
        if outages:
            raise outages.pop(0)
        return await planner.handle(message, runtime)

    specs = [intent, WorkerSpec("planner", planner.accepts, losing_redis), *rest]
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
        Client(system.url, settings) as client,
    ):
        job_id = await client.submit("through four outages")
        assert await client.result(job_id, timeout=60) == "through four outages"
        planned = [e for e in await client.events.read(job_id) if e.worker == "planner"]
    assert not outages
    assert [(e.status, e.attempt) for e in planned if e.status != "received"] == [("completed", 1)]
