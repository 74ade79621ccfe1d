"""A killed worker loses nothing: its job is recovered by a restarted process and completes
exactly once; a restarted embedded Redis still holds the queued jobs (AOF)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

from arq.constants import in_progress_key_prefix
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import Settings
from postel.infra.runtime.submit import submit_job
from postel.infra.store.events import EventLog
from postel.infra.store.jobs import JobStore
from postel.infra.store.keys import Keyspace
from postel.infra.store.redis_server import EmbeddedRedis, free_port
from postel.infra.store.wire import connect_arq
from postel.messages import JobRequest
from support import script, with_support

from postel.testing.relay import RELAY_WORKERS

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""


def start_planner(url: str, slow: float, *options: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "POSTEL_REDIS_URL": url, "POSTEL_LOG_LEVEL": "WARNING"}
    return subprocess.Popen(
        script("relay_worker", "planner", "--slow", str(slow), *options), env=with_support(env)
    )


async def test_sigkill_mid_job_then_restart_completes_exactly_once(
    redis_url: str, settings: Settings
) -> None:
    others = [s for s in RELAY_WORKERS if s.name != "planner"]
    doomed = start_planner(redis_url, slow=30)
    try:
        async with (
            LocalSystem(settings, redis_url=redis_url, specs=others),
            Client(redis_url, settings) as client,
        ):
            job_id = await client.submit("survive a crash")
            async for event in client.follow(job_id):
                if event.worker == "planner" and event.status == "received":
                    break
            doomed.send_signal(signal.SIGKILL)
            doomed.wait(10)
            killed_at = time.perf_counter()
            lease_ms = await client.pool.pttl(in_progress_key_prefix + f"{job_id}:intent")
            replacement = start_planner(redis_url, slow=0)
            try:
                timeout = settings.lease_s + 30
                assert await client.result(job_id, timeout=timeout) == "survive a crash"
                recovery_s = time.perf_counter() - killed_at
            finally:
                replacement.terminate()
                replacement.wait(10)
            events = await client.events.read(job_id)
            hops = [(e.worker, e.status, e.attempt) for e in events]
    finally:
        if doomed.poll() is None:
            doomed.kill()
    planner = [(status, attempt) for worker, status, attempt in hops if worker == "planner"]
    assert planner == [("received", 1), ("received", 2), ("completed", 2)]
    gasl = [(status, attempt) for worker, status, attempt in hops if worker == "gasl"]
    assert gasl == [("received", 1), ("completed", 1)]
    assert sum(1 for h in hops if h[1] == "completed" and h[0] == "validator") == 2
    # what kept the killed worker's job from the others lapses within one lease of the kill
    # (-2: already gone), not arq's job_timeout + 10 s; the rest is restart and the job itself
    assert lease_ms != -1 and lease_ms <= settings.lease_s * 1000
    print(f"recovery after SIGKILL: {recovery_s:.1f} s (lease {settings.lease_s} s)")


async def test_sigkill_after_taking_a_job_before_its_handler_frees_it_within_the_lease(
    redis_url: str, settings: Settings
) -> None:
    """arq's in-progress key, set when a worker takes a job, first lives one lease (not
    job_timeout + 10 s): no window between taking a job and renewing its lease keeps it."""
    import redis.asyncio as aioredis

    others = [s for s in RELAY_WORKERS if s.name != "planner"]
    doomed = start_planner(redis_url, 0, "--stall-after-take", "60")
    redis = aioredis.Redis.from_url(redis_url)
    try:
        async with (
            LocalSystem(settings, redis_url=redis_url, specs=others),
            Client(redis_url, settings) as client,
        ):
            job_id = await client.submit("taken, then killed")
            taken = in_progress_key_prefix + f"{job_id}:intent"
            async with asyncio.timeout(20):
                while not await redis.exists(taken):
                    await asyncio.sleep(0.01)
            doomed.send_signal(signal.SIGKILL)
            doomed.wait(10)
            killed_at = time.perf_counter()
            lease_ms = await redis.pttl(taken)
            replacement = start_planner(redis_url, slow=0)
            try:
                result = await client.result(job_id, timeout=settings.lease_s + 30)
                recovery_s = time.perf_counter() - killed_at
            finally:
                replacement.terminate()
                replacement.wait(10)
            planner = [
                (e.status, e.attempt)
                for e in await client.events.read(job_id)
                if e.worker == "planner"
            ]
    finally:
        await redis.aclose()
        if doomed.poll() is None:
            doomed.kill()
    assert result == "taken, then killed"
    # the killed worker never ran it; its take counted as a try (the try is counted when a
    # worker takes the job, as the job's start)
    assert planner == [("received", 2), ("completed", 2)]
    # the take's in-progress key lapses within one lease of the kill (-2: already gone), not
    # at arq's own expiry, the planner's job_timeout + 10 s (190 s)
    assert lease_ms != -1 and lease_ms <= settings.lease_s * 1000
    print(f"recovery after SIGKILL between take and handler: {recovery_s:.1f} s")


async def test_queued_jobs_survive_an_embedded_redis_restart(
    tmp_path: Path, settings: Settings
) -> None:
    port = free_port()
    server = EmbeddedRedis(port, tmp_path / "aof")
    await server.start()
    pool = await connect_arq(server.url)
    try:
        job_id = await submit_job(
            pool,
            EventLog(pool, KEYS, 1000, 100, 3600),
            JobStore(pool, KEYS, 3600),
            JobRequest(prompt="queued before a restart"),
        )
    finally:
        await pool.aclose()
    await server.stop()
    async with (
        LocalSystem(settings, port=port, state_dir=tmp_path / "aof", specs=RELAY_WORKERS),
        Client(f"redis://127.0.0.1:{port}/0", settings) as client,
    ):
        assert await client.result(job_id, timeout=20) == "queued before a restart"
    assert await asyncio.to_thread((tmp_path / "aof").exists)


async def test_a_worker_that_cannot_start_stops_the_embedded_redis_too(
    tmp_path: Path, settings: Settings
) -> None:
    import dataclasses

    import pytest
    from postel.infra.runtime.actor import Runtime
    from postel.infra.store.redis_server import port_is_open

    async def no_model(runtime: Runtime) -> None:
        raise RuntimeError("no model to call")

    broken = [dataclasses.replace(RELAY_WORKERS[0], setup=no_model), *RELAY_WORKERS[1:]]
    port = free_port()
    with pytest.raises(RuntimeError, match="no model to call"):
        async with LocalSystem(settings, port=port, state_dir=tmp_path / "s", specs=broken):
            pass
    assert not port_is_open(port), "the embedded server was stopped"
