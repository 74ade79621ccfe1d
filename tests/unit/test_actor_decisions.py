"""What the actor (infra/runtime/actor.py) decides for one message, run in process on
fakeredis with a handler the test writes: run it and commit once; or, without running it,
dead-letter a poison payload, drop a finished job's message, dead-letter one whose job has
no record, give up past its tries or its deadline; after a handler's error, retry what the
outside world caused and fail at once what retrying cannot change, each with its failure
status; and never let a cancelled job's late outcome through."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from arq import Retry
from postel.infra.runtime.actor import Actor, HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.cancel import cancel_job
from postel.infra.runtime.settings import QueueSettings, Settings
from postel.infra.runtime.submit import submit_job
from postel.infra.store.deadletter import DeadLetter, list_dead
from postel.messages import (
    Envelope,
    IntentAnalyzed,
    JobCompleted,
    JobOptions,
    JobRequest,
    JobSubmitted,
    ids,
    utc_now,
)
from postel.messages.errors import InvalidInput
from postel.messages.intent import Intent
from postel.messages.task import JobProgress
from postel.services.llm.errors import LLMServerError

REQUEST = JobRequest(prompt="What is 2+2?", desired_type="int")


class Handler:
    """The intent stage's handler: sends the planner its message, or raises `error`."""

    def __init__(self, error: Exception | None = None, *, wait: asyncio.Event | None = None):
        self.error = error
        self.wait = wait
        self.calls: list[int] = []

    async def __call__(self, message: Envelope, runtime: Runtime) -> HopOutcome:
        self.calls.append(message.attempt)
        if self.wait is not None:
            await self.wait.wait()
        if self.error is not None:
            raise self.error
        intent = Intent(
            detected_language="en", normalized_request="q", intent="q", primary_goal="q"
        )
        progress = JobProgress(intent=intent)
        return HopOutcome(
            [message.derive(IntentAnalyzed, ids.INTENT, request=REQUEST, progress=progress)]
        )


def actor(runtime: Runtime, handler: Handler) -> Actor:
    return Actor(WorkerSpec("intent", (JobSubmitted,), handler), runtime)


async def submitted(runtime: Runtime, job_id: str = "j1", **fields: Any) -> dict[str, Any]:
    """The job's first message, as its payload, after its submission."""
    await submit_job(runtime.pool, runtime.events, runtime.jobs, REQUEST, job_id)
    message = JobSubmitted(
        job_id=job_id, message_id=ids.message_id(job_id, ids.SUBMITTED), request=REQUEST, **fields
    )
    return message.model_dump(mode="json")


async def statuses(runtime: Runtime, job_id: str = "j1") -> list[str]:
    return [event.status for event in await runtime.events.read(job_id)]


async def dead_letters(runtime: Runtime) -> list[DeadLetter]:
    return (await list_dead(runtime.pool, runtime.keyspace, limit=50)).items


async def test_a_message_runs_once_and_its_outcome_is_committed(runtime: Runtime) -> None:
    handler = Handler()
    payload = await submitted(runtime)
    await actor(runtime, handler).run(payload, attempt=1)
    await actor(runtime, handler).run(payload, attempt=2)  # arq ran it again: a worker died
    assert handler.calls == [1], "a committed message is not handled again"
    assert await runtime.pool.zcard(runtime.keyspace.queue("planner")) == 1
    assert await statuses(runtime) == ["submitted", "received", "completed"]
    record = await runtime.jobs.get("j1")
    assert (record.status, record.stage) == ("running", "planner")


async def test_a_terminal_message_finishes_the_job_and_publishes_it(runtime: Runtime) -> None:
    async def finish(message: Envelope, runtime: Runtime) -> HopOutcome:
        return HopOutcome([message.derive(JobCompleted, ids.COMPLETED, result=4)])

    payload = await submitted(runtime)
    await Actor(WorkerSpec("intent", (JobSubmitted,), finish), runtime).run(payload, attempt=1)
    record = await runtime.jobs.get("j1")
    assert (record.status, record.result) == ("completed", 4)
    assert await runtime.pool.xlen(runtime.keyspace.results("")) == 1
    assert (await statuses(runtime))[-1] == "completed"


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        ("not an object", "undecodable message: the payload is a string, not a JSON object"),
        ({"type": "job.submitted", "job_id": "j1"}, "invalid message"),
        ({"type": "no.such.type", "job_id": "j1", "message_id": "m"}, "invalid message"),
    ],
    ids=["text", "invalid", "unknown-type"],
)
async def test_a_poison_payload_is_dead_lettered_and_fails_its_job(
    runtime: Runtime, payload: Any, error: str
) -> None:
    handler = Handler()
    await submitted(runtime)
    await actor(runtime, handler).run(payload, attempt=1)
    assert handler.calls == []
    [letter] = await dead_letters(runtime)
    assert error in letter.error and letter.worker == "intent"
    record = await runtime.jobs.get("j1")
    expected = "failed" if isinstance(payload, dict) else "queued"
    assert record.status == expected, "a payload naming a running job fails it"


async def test_a_job_failed_by_a_poison_message_calls_back_once(runtime: Runtime) -> None:
    request = JobRequest(prompt="x", options=JobOptions(callback_url="https://hooks.test/p"))
    await submit_job(runtime.pool, runtime.events, runtime.jobs, request, "j1")
    poison = {"type": "job.submitted", "job_id": "j1"}
    callbacks = runtime.keyspace.callbacks("")
    await actor(runtime, Handler()).run(poison, attempt=1)
    assert (await runtime.jobs.get("j1")).status == "failed"
    assert await runtime.pool.zrange(callbacks, 0, -1) == [b"j1"], "its callback is due"
    await runtime.pool.zrem(callbacks, "j1")  # sent
    await actor(runtime, Handler()).run(poison, attempt=1)
    assert await runtime.pool.zcard(callbacks) == 0, "a finished job's end is not sent again"
    assert (await statuses(runtime)).count("dead_lettered") == 1


async def test_a_message_for_another_worker_is_dead_lettered(runtime: Runtime) -> None:
    payload = await submitted(runtime)
    planner_only = Actor(WorkerSpec("planner", (IntentAnalyzed,), Handler()), runtime)
    await planner_only.run(payload, attempt=1)
    [letter] = await dead_letters(runtime)
    assert "unknown type for worker planner: 'job.submitted'" in letter.error


async def test_a_finished_jobs_message_is_dropped_unhandled(runtime: Runtime) -> None:
    handler = Handler()
    payload = await submitted(runtime)
    await cancel_job(runtime.pool, runtime.events, "j1", by="cli")
    await actor(runtime, handler).run(payload, attempt=1)
    assert handler.calls == []
    assert (await statuses(runtime))[-1] == "dropped"
    assert (await runtime.jobs.get("j1")).failure == "cancelled"


async def test_a_message_without_a_job_record_is_dead_lettered_and_writes_nothing(
    runtime: Runtime,
) -> None:
    handler = Handler()
    payload = await submitted(runtime)
    await runtime.pool.delete(runtime.keyspace.job("j1"))
    await actor(runtime, handler).run(payload, attempt=1)
    assert handler.calls == []
    [letter] = await dead_letters(runtime)
    assert letter.error.startswith("job record missing")
    assert await runtime.pool.exists(runtime.keyspace.job("j1")) == 0


async def test_a_take_past_its_tries_gives_up_without_running(
    runtime: Runtime, settings: Settings
) -> None:
    handler = Handler()
    payload = await submitted(runtime)
    await actor(runtime, handler).run(payload, attempt=settings.intent.max_tries + 1)
    assert handler.calls == []
    record = await runtime.jobs.get("j1")
    assert (record.status, record.failure) == ("failed", "out_of_tries")
    assert len(await dead_letters(runtime)) == 1, "kept to be redriven"


async def test_a_message_past_its_deadline_fails_its_job_unhandled(runtime: Runtime) -> None:
    handler = Handler()
    payload = await submitted(runtime, deadline=utc_now() - timedelta(seconds=1))
    await actor(runtime, handler).run(payload, attempt=1)
    assert handler.calls == []
    record = await runtime.jobs.get("j1")
    assert (record.status, record.failure) == ("failed", "deadline_exceeded")
    assert await dead_letters(runtime) == [], "nothing to redrive: the deadline stays passed"


async def test_the_outside_world_failing_is_retried_until_the_last_try(
    runtime: Runtime, settings: Settings
) -> None:
    handler = Handler(ConnectionRefusedError("the endpoint refused"))
    payload = await submitted(runtime)
    last = settings.intent.max_tries
    for attempt in range(1, last):
        with pytest.raises(Retry):
            await actor(runtime, handler).run(payload, attempt=attempt)
    await actor(runtime, handler).run(payload, attempt=last)
    assert handler.calls == list(range(1, last + 1))
    assert (await statuses(runtime)).count("retried") == last - 1
    record = await runtime.jobs.get("j1")
    assert (record.status, record.failure) == ("failed", "out_of_tries")
    assert record.error == f"intent gave up after {last} tries: ConnectionRefusedError: " + (
        "the endpoint refused"
    )
    assert len(await dead_letters(runtime)) == 1


@pytest.mark.parametrize(
    ("error", "failure"),
    [
        (TypeError("a bug"), "internal_error"),
        (KeyError("field"), "internal_error"),
        (InvalidInput("the request lacks a graph"), "invalid_request"),
        (LLMServerError("500 after 5 attempts"), "llm_error"),
    ],
    ids=["type-error", "key-error", "postel-error", "llm-error"],
)
async def test_what_retrying_cannot_change_fails_at_once(
    runtime: Runtime, error: Exception, failure: str
) -> None:
    handler = Handler(error)
    payload = await submitted(runtime)
    await actor(runtime, handler).run(payload, attempt=1)
    assert handler.calls == [1]
    record = await runtime.jobs.get("j1")
    assert (record.status, record.failure) == ("failed", failure)
    assert type(error).__name__ in (record.error or "")
    assert len(await dead_letters(runtime)) == 1, "kept, to redrive once the cause is fixed"
    assert "retried" not in await statuses(runtime)


async def test_a_handler_past_its_time_limit_fails_hop_timeout(
    runtime: Runtime, settings: Settings
) -> None:
    quick = settings.model_copy(update={"intent": QueueSettings(job_timeout=0.2)})
    runtime = Runtime.create(runtime.pool, runtime.keyspace, quick)
    payload = await submitted(runtime)
    await actor(runtime, Handler(wait=asyncio.Event())).run(payload, attempt=1)
    record = await runtime.jobs.get("j1")
    assert (record.status, record.failure) == ("failed", "hop_timeout")


async def test_a_job_cancelled_while_its_handler_ran_keeps_nothing_of_it(
    runtime: Runtime,
) -> None:
    release = asyncio.Event()
    handler = Handler(wait=release)
    payload = await submitted(runtime)
    running = asyncio.create_task(actor(runtime, handler).run(payload, attempt=1))
    while not handler.calls:
        await asyncio.sleep(0.01)
    await cancel_job(runtime.pool, runtime.events, "j1", by="web")
    release.set()
    await running
    assert await runtime.pool.zcard(runtime.keyspace.queue("planner")) == 0
    assert (await statuses(runtime))[-1] == "dropped"
    assert (await runtime.jobs.get("j1")).failure == "cancelled"


async def test_a_stale_run_that_fails_after_another_committed_records_nothing(
    runtime: Runtime,
) -> None:
    """Its worker froze past the lease; another worker committed the message meanwhile."""
    release = asyncio.Event()
    stale = Handler(OSError("the socket closed"), wait=release)
    payload = await submitted(runtime)
    running = asyncio.create_task(actor(runtime, stale).run(payload, attempt=1))
    while not stale.calls:
        await asyncio.sleep(0.01)
    await actor(runtime, Handler()).run(payload, attempt=2)
    before = await statuses(runtime)
    release.set()
    await running  # no Retry: there is nothing left to retry
    assert await statuses(runtime) == before
    assert await dead_letters(runtime) == []
