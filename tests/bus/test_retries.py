"""The one retry policy of a message (infra/runtime/retries.py): postel's tries, arq's one
more, when a failed try is retried, when a take is out of tries, the backoff; and the arq
worker is built from it."""

from __future__ import annotations

import dataclasses
import random

import pytest
import redis.asyncio as aioredis
from arq.connections import ArqRedis
from postel.infra.client.client import Client, JobFailedError
from postel.infra.runtime.actor import Actor, HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.retries import HopRetries
from postel.infra.runtime.runner import build_arq_worker
from postel.infra.runtime.settings import QueueSettings, Settings
from postel.infra.store.keys import Keyspace
from postel.infra.store.wire import ARQ_FUNCTION
from postel.messages import Envelope

from postel.testing.relay import RELAY_WORKERS

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""


class SlowDown(Exception):
    retry_after = 7.0


def test_the_policy_decides_tries_and_backoff() -> None:
    policy = HopRetries.of(QueueSettings(job_timeout=5, max_tries=3))
    assert policy.arq_tries == 4
    assert [policy.retries(a) for a in (1, 2, 3)] == [True, True, False]
    assert [policy.exhausted(a) for a in (3, 4)] == [False, True]
    random.seed(1)
    delays = [policy.delay(RuntimeError("x"), attempt) for attempt in (1, 2, 3, 10)]
    assert 0.4 <= delays[0] <= 0.6 and 0.8 <= delays[1] <= 1.2 and 1.6 <= delays[2] <= 2.4
    assert 24.0 <= delays[3] <= 36.0, "capped at 30 s, give or take the jitter"
    assert policy.delay(SlowDown(), 1) == 7.0, "the error's own Retry-After when longer"


def test_the_arq_worker_and_the_actor_share_the_policy(settings: Settings) -> None:
    tuned = settings.model_copy(update={"validator": QueueSettings(job_timeout=9, max_tries=5)})
    runtime = Runtime.create(ArqRedis(), KEYS, tuned)
    spec = next(s for s in RELAY_WORKERS if s.name == "validator")
    worker = build_arq_worker(spec, runtime, "redis://127.0.0.1:1/0", concurrency=1)
    assert Actor(spec, runtime).retries == HopRetries(max_tries=5)
    assert worker.max_tries == 6
    assert worker.functions[ARQ_FUNCTION].max_tries == 6


def test_a_specs_own_policy_outranks_its_queues_settings(settings: Settings) -> None:
    runtime = Runtime.create(ArqRedis(), KEYS, settings)
    assert settings.queue("validator").max_tries == 3
    relay = next(s for s in RELAY_WORKERS if s.name == "validator")
    spec = dataclasses.replace(relay, retries=HopRetries(max_tries=1))
    worker = build_arq_worker(spec, runtime, "redis://127.0.0.1:1/0", concurrency=1)
    assert Actor(spec, runtime).retries == HopRetries(max_tries=1)
    assert worker.max_tries == 2 and worker.functions[ARQ_FUNCTION].max_tries == 2


async def test_a_spec_with_one_try_dead_letters_after_its_first_failure(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    """The queue's settings allow 3 tries; the spec's own policy allows 1, and wins."""
    tries: list[int] = []

    async def failing(message: Envelope, runtime: Runtime) -> HopOutcome:
        tries.append(message.attempt)
        raise ConnectionError(f"failure on try {message.attempt}")

    intent = WorkerSpec(
        "intent", RELAY_WORKERS[0].accepts, failing, retries=HopRetries(max_tries=1)
    )
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=[intent, *RELAY_WORKERS[1:]]) as system,
        Client(system.url, settings) as client,
    ):
        job_id = await client.submit("once")
        with pytest.raises(JobFailedError) as failure:
            await client.result(job_id, timeout=20)
        statuses = [e.status for e in await client.events.read(job_id) if e.worker == "intent"]
    assert failure.value.status == "out_of_tries"
    assert "gave up after 1 tries: ConnectionError: failure on try 1" in failure.value.error
    assert tries == [1]
    assert statuses == ["received", "dead_lettered", "failed", "failed"], "no retry"
    dead = await redis_client.xrange(KEYS.dead_letters(""))
    assert len(dead) == 1 and dead[0][1][b"job_id"] == job_id.encode()


async def test_a_bug_in_a_handler_fails_the_job_at_once_naming_it(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    """Only the outside world failing now is retried: a KeyError would fail the same way on
    every try, so the first one fails the job `internal_error` with the error named, and the
    message waits in the dead letters for a redrive once the bug is fixed."""
    tries: list[int] = []

    async def buggy(message: Envelope, runtime: Runtime) -> HopOutcome:
        tries.append(message.attempt)
        return {"no": "outcome"}["outcome"]  # type: ignore[return-value]

    intent = WorkerSpec("intent", RELAY_WORKERS[0].accepts, buggy)
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=[intent, *RELAY_WORKERS[1:]]) as system,
        Client(system.url, settings) as client,
    ):
        job_id = await client.submit("a bug")
        with pytest.raises(JobFailedError) as failure:
            await client.result(job_id, timeout=20)
        statuses = [e.status for e in await client.events.read(job_id) if e.worker == "intent"]
    assert failure.value.status == "internal_error"
    assert failure.value.error == "intent: KeyError: 'outcome'"
    assert tries == [1]
    assert "retried" not in statuses and "dead_lettered" in statuses
    dead = await redis_client.xrange(KEYS.dead_letters(""))
    assert [d[1][b"job_id"] for d in dead] == [job_id.encode()]
