"""No silent end: a handler that outlives its hop, its job's deadline or its model's patience
ends the job with a documented failure, in time, instead of being cut off by arq."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
import redis.asyncio as aioredis
from postel.infra.client.client import Client, JobFailedError
from postel.infra.runtime.actor import HopLimit, HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.runner import load_worker
from postel.infra.runtime.settings import QueueSettings, Settings
from postel.infra.store.keys import Keyspace
from postel.messages import JobOptions, JobRequest, JobSubmitted, utc_now
from postel.services.llm import LLMServerError
from postel.services.llm.budget import remaining_budget

from postel.testing.fake_model import FakeModel
from postel.testing.relay import RELAY_WORKERS

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""


def intent_doing(work: object) -> WorkerSpec:
    async def handle(message: object, runtime: Runtime) -> HopOutcome:
        await work()  # type: ignore[operator]
        return await RELAY_WORKERS[0].handle(message, runtime)  # type: ignore[arg-type]

    return WorkerSpec("intent", RELAY_WORKERS[0].accepts, handle)


def test_the_model_budget_is_derived_from_the_workers_job_timeout() -> None:
    message = JobSubmitted(job_id="j", message_id="j:submitted", request=JobRequest(prompt="x"))
    limit = HopLimit.of(message, QueueSettings(job_timeout=120))
    assert limit.seconds == pytest.approx(114.0)
    assert limit.model_seconds == pytest.approx(113.0)
    assert not limit.by_deadline
    short = HopLimit.of(message, QueueSettings(job_timeout=3))
    assert short.seconds == pytest.approx(2.0) and short.model_seconds == pytest.approx(1.8)
    deadline = utc_now() + timedelta(seconds=5)
    soon = message.model_copy(update={"deadline": deadline})
    before = utc_now()
    by_deadline = HopLimit.of(soon, QueueSettings(job_timeout=120))
    after = utc_now()
    # what was left of the deadline when the limit was taken
    assert by_deadline.by_deadline
    left = sorted((deadline - moment).total_seconds() for moment in (before, after))
    assert left[0] <= by_deadline.seconds <= left[1]


async def test_model_calls_see_the_hop_budget(redis_url: str, settings: Settings) -> None:
    """The model budget ends 8.1 s (job_timeout 10 s less the hop's and the model's reserves)
    after the hop started, a moment between the submission and the answer."""
    ends: list[float] = []

    async def note_budget_end() -> None:
        left = remaining_budget()
        assert left is not None
        ends.append(time.monotonic() + left)

    settings.intent = QueueSettings(job_timeout=10)
    specs = [intent_doing(note_budget_end), *RELAY_WORKERS[1:]]
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
        Client(system.url, settings) as client,
    ):
        submitted = time.monotonic()
        await client.result(await client.submit("x"), timeout=20)
        answered = time.monotonic()
    model_s = 8.1  # HopLimit.of: 10 s - 1 s for the commit - 0.9 s for recording the failure
    assert len(ends) == 1
    assert submitted + model_s - 1e-6 <= ends[0] <= answered + model_s + 1e-6


async def test_a_handler_that_never_returns_ends_hop_timeout_before_arq_cuts_it(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    settings.intent = QueueSettings(job_timeout=3)
    specs = [intent_doing(asyncio.Event().wait), *RELAY_WORKERS[1:]]
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
        Client(system.url, settings) as client,
    ):
        job_id = await client.submit("stuck")
        with pytest.raises(JobFailedError) as failure:
            await client.result(job_id, timeout=20)
        received = [e for e in await client.events.read(job_id) if e.status == "received"]
    assert failure.value.status == "hop_timeout"
    # the runtime's own limit (2 s) ended the run, not arq's cut at job_timeout (3 s), whose
    # failure reads "arq cut the run off"; and the message was taken once, not again
    assert "intent ran past its time limit (2.0s; the worker's job_timeout is 3s)" in (
        failure.value.error
    )
    assert len(received) == 1
    dead = await redis_client.xrange(KEYS.dead_letters(""))
    assert len(dead) == 1, "the message is kept to be redriven"


async def test_a_deadline_passing_mid_hop_fails_the_job_by_the_deadline_not_the_timeout(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    specs = [intent_doing(asyncio.Event().wait), *RELAY_WORKERS[1:]]
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
        Client(system.url, settings) as client,
    ):
        started = time.perf_counter()
        job_id = await client.submit("late", options=JobOptions(deadline_s=2))
        with pytest.raises(JobFailedError) as failure:
            await client.result(job_id, timeout=20)
        elapsed = time.perf_counter() - started
    assert failure.value.status == "deadline_exceeded"
    assert elapsed > 1.8, "the handler ran until the deadline"
    # the hop's limit was what the deadline left (under 2 s), not the worker's 114 s
    limit = re.search(r"ran past the job's deadline \((\d+\.\d)s;", failure.value.error)
    assert limit is not None, failure.value.error
    assert 0 < float(limit.group(1)) <= 2.0
    assert await redis_client.xlen(KEYS.dead_letters("")) == 0


async def test_a_model_failure_is_not_retried_again_by_the_handler(
    redis_url: str, settings: Settings
) -> None:
    calls: list[int] = []

    async def failing_model() -> None:
        calls.append(1)
        raise LLMServerError("http://model/v1 failed after 5 attempt(s): HTTP 500")

    specs = [intent_doing(failing_model), *RELAY_WORKERS[1:]]
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
        Client(system.url, settings) as client,
    ):
        job_id = await client.submit("down")
        with pytest.raises(JobFailedError) as failure:
            await client.result(job_id, timeout=20)
        statuses = [e.status for e in await client.events.read(job_id)]
    assert failure.value.status == "llm_error"
    assert calls == [1], "the model layer's retries are the only ones"
    assert "retried" not in statuses


async def test_a_run_cut_off_by_arq_after_a_blocked_event_loop_still_fails_its_job(
    redis_url: str, settings: Settings
) -> None:
    """CPU-bound work that blocks the event loop past job_timeout: arq cancels the run (and
    would drop the message); the runtime records the failure instead."""

    async def block_the_loop() -> None:
        time.sleep(2.5)
        await asyncio.sleep(30)

    settings.intent = QueueSettings(job_timeout=2)
    specs = [intent_doing(block_the_loop), *RELAY_WORKERS[1:]]
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
        Client(system.url, settings) as client,
    ):
        job_id = await client.submit("blocked")
        with pytest.raises(JobFailedError) as failure:
            await client.result(job_id, timeout=20)
    assert failure.value.status == "hop_timeout"


@pytest.fixture
def fake_model() -> Iterator[FakeModel]:
    with FakeModel(lambda request: "unused") as fake:
        yield fake


def real_intent_against(fake: FakeModel, settings: Settings) -> list[WorkerSpec]:
    settings.llm_provider = "openai"
    settings.llm_base_url = fake.base_url
    return [load_worker("intent"), *RELAY_WORKERS[1:]]


async def test_a_hanging_model_on_default_model_settings_ends_llm_error(
    redis_url: str, settings: Settings, fake_model: FakeModel
) -> None:
    """Default POSTEL_LLM_TIMEOUT_S (120 s) and retries; only job_timeout is short."""
    fake_model.set_faults(mode="hang")
    settings.intent = QueueSettings(job_timeout=4)
    specs = real_intent_against(fake_model, settings)
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
        Client(system.url, settings) as client,
    ):
        job_id = await client.submit("hello")
        with pytest.raises(JobFailedError) as failure:
            await client.result(job_id, timeout=30)
    # llm_error, not hop_timeout: the model call ended inside the hop's 3 s, cut by the
    # hop's budget rather than by its own 120 s timeout
    assert failure.value.status == "llm_error"
    assert "time budget" in failure.value.error or "no answer within" in failure.value.error
    assert "within 120s" not in failure.value.error
    assert fake_model.stats().by_fault.get("hang", 0) >= 1


async def test_a_429_asking_for_longer_than_the_budget_ends_llm_error_at_once(
    redis_url: str, settings: Settings, fake_model: FakeModel
) -> None:
    fake_model.set_faults(mode="429", retry_after="600")
    specs = real_intent_against(fake_model, settings)
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
        Client(system.url, settings) as client,
    ):
        job_id = await client.submit("hello")
        with pytest.raises(JobFailedError) as failure:
            await client.result(job_id, timeout=30)
    assert failure.value.status == "llm_error"
    assert "HTTP 429" in failure.value.error
    assert fake_model.stats().total <= 2, "retries capped at 30 s fit, 600 s do not"


async def test_a_5_s_deadline_with_a_hanging_model_ends_deadline_exceeded(
    redis_url: str, settings: Settings, fake_model: FakeModel
) -> None:
    fake_model.set_faults(mode="hang")
    specs = real_intent_against(fake_model, settings)
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
        Client(system.url, settings) as client,
    ):
        job_id = await client.submit("hello", options=JobOptions(deadline_s=5))
        with pytest.raises(JobFailedError) as failure:
            await client.result(job_id, timeout=30)
        received = [e for e in await client.events.read(job_id) if e.status == "received"]
    # the deadline ended the hop (the default job_timeout, 120 s, would be hop_timeout), and
    # the hanging call was not retried in another try
    assert failure.value.status == "deadline_exceeded"
    assert "within 120s" not in failure.value.error
    assert len(received) == 1
    assert fake_model.stats().by_fault.get("hang", 0) >= 1


async def test_following_a_job_that_never_ends_times_out(
    redis_url: str, settings: Settings
) -> None:
    """`postel demo` and `postel reason` follow events through run_job: its timeout covers the
    following too, not only the final wait."""
    from postel.infra.client.session import run_job

    specs = [intent_doing(asyncio.Event().wait), *RELAY_WORKERS[1:]]
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
        Client(system.url, settings) as client,
    ):
        with pytest.raises(TimeoutError):
            await run_job(
                client, JobRequest(prompt="forever"), timeout=1.5, on_event=print, job_id="forever"
            )
        # the job has not ended (its hop limit is 114 s): the timeout ended the following
        assert (await client.status("forever")).status in ("queued", "running")
