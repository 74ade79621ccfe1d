"""Cancelling a job on real Redis: the job fails as `cancelled`, a handler running at that
moment has its commit refused, a queued message is dropped when taken, and a finished job
cannot be cancelled."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
import redis.asyncio as aioredis
from click.testing import Result
from postel.infra.client.client import Client, JobFailedError
from postel.infra.runtime.cancel import JobAlreadyFinished
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import Settings
from postel.infra.store.jobs import JobNotFound
from postel.infra.store.keys import Keyspace
from support.recording import Recorder

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""


async def statuses(client: Client, job_id: str) -> list[tuple[str, str]]:
    return [(e.worker, e.status) for e in await client.events.read(job_id)]


async def wait_for_event(client: Client, job_id: str, worker: str, status: str) -> None:
    async with asyncio.timeout(20):
        while (worker, status) not in await statuses(client, job_id):
            await asyncio.sleep(0.02)


async def test_a_running_handler_has_its_commit_refused_and_nothing_follows(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    recorder = Recorder(held="planner")
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=recorder.specs()),
        Client(redis_url, settings) as client,
    ):
        job_id = await client.submit("stop me")
        async with asyncio.timeout(20):
            await recorder.entered.wait()
        record = await client.cancel(job_id, "changed my mind")
        assert (record.status, record.failure) == ("failed", "cancelled")
        assert record.error == "cancelled by client: changed my mind"
        recorder.release.set()
        await wait_for_event(client, job_id, "planner", "dropped")
        with pytest.raises(JobFailedError) as failure:
            await client.result(job_id, timeout=5)
        assert failure.value.status == "cancelled"
        assert recorder.workers() == ["intent", "planner"]
        # the planner's outcome went nowhere: no gasl message was ever enqueued
        assert await redis_client.zcard(KEYS.queue("gasl")) == 0
        assert not await redis_client.exists(f"arq:job:{job_id}:gasl:0:0")
        assert (await client.status(job_id)).status == "failed"
        hops = await statuses(client, job_id)
        assert hops[-2:] == [("client", "failed"), ("planner", "dropped")]
        assert ("planner", "completed") not in hops


async def test_a_queued_message_of_a_cancelled_job_is_dropped_when_taken(
    redis_url: str, settings: Settings
) -> None:
    recorder = Recorder()
    async with Client(redis_url, settings) as client:
        job_id = await client.submit("queued, never started")
        await client.cancel(job_id)
        async with LocalSystem(settings, redis_url=redis_url, specs=recorder.specs()):
            await wait_for_event(client, job_id, "intent", "dropped")
        events = await client.events.read(job_id)
    assert recorder.handled == [], "no handler saw the message"
    dropped = events[-1]
    assert dropped.message_id == f"{job_id}:submitted"
    assert "already finished" in dropped.error


async def test_a_finished_or_unknown_job_cannot_be_cancelled(
    relay_system: LocalSystem, settings: Settings
) -> None:
    async with Client(relay_system.url, settings) as client:
        job_id = await client.submit("done quickly")
        await client.result(job_id, timeout=20)
        with pytest.raises(JobAlreadyFinished, match="already finished: completed"):
            await client.cancel(job_id)
        with pytest.raises(JobNotFound):
            await client.cancel("no-such-job")
        assert (await client.status(job_id)).status == "completed"


async def test_cancel_twice_is_refused_the_second_time(redis_url: str, settings: Settings) -> None:
    async with Client(redis_url, settings) as client:
        job_id = await client.submit("twice")
        await client.cancel(job_id)
        with pytest.raises(JobAlreadyFinished, match=r"failed \(cancelled\)"):
            await client.cancel(job_id)
        terminal = [e for e in await client.events.read(job_id) if e.type == "job.failed"]
    assert len(terminal) == 1


def test_postel_cancel_exit_codes(redis_url: str, in_process: Callable[..., Result]) -> None:

    async def submit() -> str:
        async with Client(redis_url) as client:
            return await client.submit("from the shell")

    job_id = asyncio.run(submit())

    def cancel(job: str) -> Result:
        return in_process("cancel", job, "--reason", "test", env={"POSTEL_REDIS_URL": redis_url})

    first = cancel(job_id)
    assert first.exit_code == 0, first.stderr
    assert first.stdout.strip() == f"{job_id} cancelled: cancelled by cli: test"
    again = cancel(job_id)
    assert again.exit_code == 6 and "already finished" in again.stderr
    assert cancel("no-such-job").exit_code == 4
