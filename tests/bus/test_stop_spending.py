"""Cancel stops spending (infra/runtime/stops.py): cancelling a job whose hop is in a model
call closes that call's HTTP request, the job ends `cancelled` and nothing more of it runs,
while another job in flight beside it completes; a running GASL plan is interrupted; a
deadline passing during a call closes it too."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from postel.infra.client.client import Client, JobFailedError
from postel.infra.runtime.actor import WorkerSpec
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.runner import load_worker
from postel.infra.runtime.settings import Settings
from postel.infra.runtime.stops import HopStops
from postel.infra.store.keys import Keyspace
from postel_bench.chaos import chaos_responder
from redis.asyncio import Redis

from postel.testing.fake_model import FakeModel, marker
from postel.testing.relay import RELAY_WORKERS

KEYS = Keyspace()


@pytest.fixture
def fake_model() -> Iterator[FakeModel]:
    with FakeModel(chaos_responder) as fake:
        fake.set_faults(stream_s=120)
        yield fake


def real_intent_against(fake: FakeModel, settings: Settings) -> list[WorkerSpec]:
    settings.llm_provider = "openai"
    settings.llm_base_url = fake.base_url
    settings.llm_max_retries = 0
    return [load_worker("intent"), *RELAY_WORKERS[1:]]


async def until(predicate: object, what: str) -> None:
    async with asyncio.timeout(30):
        while not predicate():  # type: ignore[operator]
            await asyncio.sleep(0.02)


async def test_cancel_closes_the_in_flight_model_call_and_disturbs_no_other_job(
    redis_url: str, settings: Settings, fake_model: FakeModel
) -> None:
    specs = real_intent_against(fake_model, settings)
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
        Client(system.url, settings) as client,
    ):
        slow = await client.submit(f"How many people? {marker('slow_stream')}")
        await until(lambda: fake_model.stats().in_flight == 1, "the slow call started")
        other = await client.submit("How many people are there?")
        await client.cancel(slow, "too slow")
        await until(lambda: fake_model.stats().hung_up == 1, "the endpoint saw the close")
        with pytest.raises(JobFailedError) as failure:
            await client.result(slow, timeout=30)
        assert failure.value.status == "cancelled"
        assert await client.result(other, timeout=30) is not None
        record = await client.status(slow)
        events = await client.events.read(slow)
    stats = fake_model.stats()
    assert stats.streamed == 0, "the slow answer was never sent whole"
    assert stats.by_fault.get("slow_stream") == 1, "nothing more of the job called the model"
    assert (record.prompt_tokens, record.completion_tokens) == (0, 0)
    intent = [e.status for e in events if e.worker == "intent"]
    assert intent == ["received", "dropped"], "the hop ended without committing"
    assert "the hop was stopped" in events[-1].error


async def test_a_deadline_passing_during_a_model_call_closes_it(
    redis_url: str, settings: Settings, fake_model: FakeModel
) -> None:
    fake_model.set_faults(mode="slow_stream")
    specs = real_intent_against(fake_model, settings)
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
        Client(system.url, settings) as client,
    ):
        job_id = await client.submit("How many people?", options={"deadline_s": 1})
        with pytest.raises(JobFailedError) as failure:
            await client.result(job_id, timeout=30)
        await until(lambda: fake_model.stats().hung_up == 1, "the endpoint saw the close")
    assert failure.value.status == "deadline_exceeded"
    assert fake_model.stats().streamed == 0


async def test_a_stopped_hop_is_ended_where_it_waits(redis_url: str) -> None:
    """The poll finds the job finished and brings the hop's limit to now: the handler is
    cancelled inside its wait (a GASL plan's thread is told to stop by that cancellation,
    services/gasl/stage.py) and the scope says it was stopped."""
    redis = Redis.from_url(redis_url)
    stops = HopStops(redis, KEYS)
    try:
        await redis.hset(KEYS.job("j"), "status", "running")
        entered = asyncio.Event()

        async def handler() -> None:
            entered.set()
            await asyncio.sleep(3600)

        async def run() -> bool:
            async with asyncio.timeout(None) as scope:
                with stops.watching("j", scope) as watch:
                    await handler()
            return watch.stopped

        running = asyncio.create_task(run())
        await entered.wait()
        await redis.hset(KEYS.job("j"), "status", "failed")
        with pytest.raises(TimeoutError):
            await running
        assert stops.stop("j") == 0, "the hop is no longer registered"
    finally:
        await redis.aclose()
