"""The actor runtime: one readable loop from a queued payload to the messages it causes.

For every arq job a worker takes:

  decode -> (poison? dead-letter, fail the job, go on)
  -> take the lease, record `received`, learn if an earlier run already committed (stop)
     or the job has finished, cancelled say (`dropped` event, stop)
  -> call the worker's handler
  -> commit, atomically: done marker + downstream messages on their queues + the
     `completed`/`continued` event (+ job record and results stream for terminal messages)

A handler that raises is retried by arq with backoff while tries remain (`retried` event);
out of tries, the message is dead-lettered and the job fails with status `out_of_tries`
(`llm_error` for a model endpoint that kept failing or refused the request). Downstream
messages carry deterministic ids and are enqueued only by the commit that marks their cause
done, so a handler that runs twice (its worker was killed) neither forks the job nor records
its completion twice (infra/commit.py). A handler still running when its job finishes has
its commit refused: nothing goes downstream and a `dropped` event says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import structlog
from arq import Retry
from arq.connections import ArqRedis
from arq.constants import in_progress_key_prefix
from postel.infra import keys
from postel.infra.commit import ARQ_FUNCTION, commit_once
from postel.infra.deadletter import dead_letter
from postel.infra.events import Command, Event, EventLog, EventStatus, Metrics, run_commands
from postel.infra.jobs import JobStore, publish_command
from postel.infra.settings import Settings
from postel.messages import (
    Envelope,
    FailureStatus,
    JobCompleted,
    JobFailed,
    decode_message,
    utc_now,
)
from postel.services.llm.errors import LLMError, LLMRequestRejected
from pydantic import ValidationError
from redis.asyncio import Redis

log = structlog.get_logger(__name__)

DONE_TTL_S = 7 * 24 * 3600

_DROPPED_AT_RECEIVE = "its job had already finished; the message was not handled"
_DROPPED_AT_COMMIT = "its job finished while the message was handled; the outcome was discarded"


@dataclass
class Outcome:
    messages: list[Envelope] = field(default_factory=list)
    metrics: Metrics = field(default_factory=Metrics)
    continued: bool = False


@dataclass
class Runtime:
    """What every handler may use: the arq pool (also the Redis client), settings and the
    stores; `resources` holds per-process objects a worker builds once (a model client)."""

    pool: ArqRedis
    settings: Settings
    events: EventLog
    jobs: JobStore
    resources: dict[str, Any] = field(default_factory=dict)

    @property
    def redis(self) -> Redis:
        return self.pool

    @classmethod
    def create(cls, pool: ArqRedis, settings: Settings) -> Runtime:
        return cls(
            pool=pool,
            settings=settings,
            events=EventLog(
                pool, settings.events_maxlen, settings.job_events_maxlen, settings.job_ttl_s
            ),
            jobs=JobStore(pool, settings.job_ttl_s),
        )


Handler = Callable[[Envelope, Runtime], Awaitable[Outcome]]


@dataclass(frozen=True)
class WorkerSpec:
    name: str
    accepts: tuple[type[Envelope], ...]
    handle: Handler
    setup: Callable[[Runtime], Awaitable[None]] | None = None


class Actor:
    """Runs one worker kind's handler on the messages of its queue."""

    def __init__(self, spec: WorkerSpec, runtime: Runtime) -> None:
        self.spec = spec
        self.runtime = runtime
        self.max_tries = runtime.settings.queue(spec.name).max_tries

    async def handle_job(self, ctx: dict[str, Any], payload: Any) -> None:
        """arq's entry point: `ctx["job_try"]` counts runs, including runs cut by a crash.

        arq protects a running job with an in-progress key that lives job_timeout + 10 s, so
        a killed worker's job would wait that long before another worker may take it. The
        handler instead holds a short lease (`lease_s`) on that key, renewed while its
        process lives: a dead worker's job is free again within `lease_s`."""
        lease_key = in_progress_key_prefix + str(ctx.get("job_id", ""))
        renewing = asyncio.create_task(self._renew_lease(lease_key))
        try:
            await self.run(payload, attempt=int(ctx.get("job_try", 1)), lease_key=lease_key)
        finally:
            renewing.cancel()

    @property
    def lease_ms(self) -> int:
        return int(self.runtime.settings.lease_s * 1000)

    async def _renew_lease(self, key: str) -> None:
        """The first lease is taken with the `received` event (one round trip); renew it."""
        with contextlib.suppress(asyncio.CancelledError):
            while True:
                await asyncio.sleep(self.lease_ms / 4000)
                await self.runtime.redis.pexpire(key, self.lease_ms)

    async def run(self, payload: Any, attempt: int, lease_key: str | None = None) -> None:
        started = time.perf_counter()
        message = await self._decode(payload, attempt)
        if message is None:
            return
        message = message.with_attempt(attempt)
        structlog.contextvars.bind_contextvars(
            job_id=message.job_id, message_id=message.message_id, worker=self.spec.name
        )
        try:
            received = self._event(message, "received", wait_ms=_age_ms(message.created_at))
            seen = await self._receive(message, received, lease_key)
            if seen == "handled":
                log.info("message already handled; skipping the re-run")
                return
            if seen == "job_finished":
                log.info("the message's job has finished; dropping the message")
                await self._record(message, "dropped", error=_DROPPED_AT_RECEIVE)
                return
            if attempt > self.max_tries:
                await self._give_up(message, payload, "out of tries (its worker died each time)")
                return
            if message.deadline is not None and utc_now() > message.deadline:
                failed = message.derive(
                    JobFailed,
                    key="failed",
                    status="deadline_exceeded",
                    error=f"deadline {message.deadline.isoformat()} passed before {self.spec.name}",
                )
                await self._commit(message, Outcome(messages=[failed]), started)
                return
            try:
                outcome = await self.spec.handle(message, self.runtime)
            except Exception as exc:
                await self._after_error(message, payload, exc, attempt, started)
                return
            await self._commit(message, outcome, started)
        finally:
            structlog.contextvars.unbind_contextvars("job_id", "message_id", "worker")

    async def _receive(
        self, message: Envelope, received: Event, lease_key: str | None
    ) -> Literal["new", "handled", "job_finished"]:
        """Take the lease, record `received` and learn whether the message was already
        committed by an earlier run, or its job has finished (cancelled, say): one round
        trip."""
        async with self.runtime.redis.pipeline(transaction=False) as pipe:
            pipe.exists(keys.done(message.message_id))
            pipe.hget(keys.job(message.job_id), "status")
            if lease_key is not None:
                pipe.pexpire(lease_key, self.lease_ms)
            for command in self.runtime.events.commands(received):
                pipe.execute_command(*command)
            replies = await pipe.execute()
        if replies[0]:
            return "handled"
        return "job_finished" if replies[1] in (b"completed", b"failed") else "new"

    async def _decode(self, payload: Any, attempt: int) -> Envelope | None:
        error: str | None = None
        message: Envelope | None = None
        try:
            message = decode_message(payload) if isinstance(payload, dict) else None
            if message is None:
                error = "undecodable message: the payload is not a JSON object"
        except ValidationError as exc:
            error = f"invalid message: {_summarise(exc)}"
        if message is not None and not isinstance(message, self.spec.accepts):
            accepted = ", ".join(cls.model_fields["type"].default for cls in self.spec.accepts)
            error = f"unknown type for worker {self.spec.name}: {message.type!r} (takes {accepted})"
        if error is None:
            return message
        job_id = payload.get("job_id", "") if isinstance(payload, dict) else ""
        message_id = payload.get("message_id", "") if isinstance(payload, dict) else ""
        job_id = job_id if isinstance(job_id, str) else ""
        message_id = message_id if isinstance(message_id, str) else ""
        await dead_letter(
            self.runtime.redis,
            source=f"worker:{self.spec.name}",
            error=error,
            payload=payload,
            job_id=job_id,
            message_id=message_id,
            attempt=attempt,
        )
        log.warning("dead-lettered a poison message", error=error, job_id=job_id)
        if job_id and await self.runtime.redis.exists(keys.job(job_id)):
            await self._fail_job_directly(job_id, message_id, error)
        return None

    async def _fail_job_directly(self, job_id: str, message_id: str, error: str) -> None:
        event = Event(
            job_id=job_id,
            message_id=message_id or "?",
            type="?",
            worker=self.spec.name,
            stage=self.spec.name,
            status="dead_lettered",
            error=error,
        )
        commands = [
            *self.runtime.events.commands(event),
            JobStore.finished_command(job_id, error=error, failure="invalid_request"),
        ]
        await run_commands(self.runtime.redis, commands)

    async def _after_error(
        self, message: Envelope, payload: Any, exc: Exception, attempt: int, started: float
    ) -> None:
        error = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, LLMRequestRejected):
            # The endpoint refused this request; sending it again would be refused again.
            log.error("the model endpoint rejected the request", error=error)
            await self._give_up(message, payload, error, status="llm_error")
            return
        if attempt < self.max_tries:
            log.warning("handler failed; arq will retry", error=error, attempt=attempt)
            await self._record(message, "retried", error=error, started=started)
            raise Retry(defer=min(0.2 * 2 ** (attempt - 1), 5.0)) from exc
        log.error("handler failed on its last try", error=error, attempt=attempt)
        await self._give_up(
            message, payload, error, status="llm_error" if isinstance(exc, LLMError) else None
        )

    async def _give_up(
        self, message: Envelope, payload: Any, error: str, status: FailureStatus | None = None
    ) -> None:
        await dead_letter(
            self.runtime.redis,
            source=f"worker:{self.spec.name}",
            error=error,
            payload=payload,
            job_id=message.job_id,
            message_id=message.message_id,
            attempt=message.attempt,
        )
        await self._record(message, "dead_lettered", error=error)
        failed = message.derive(
            JobFailed,
            key="failed",
            status=status or "out_of_tries",
            error=f"{self.spec.name} gave up after {message.attempt} tries: {error}",
        )
        await self._commit(message, Outcome(messages=[failed]), time.perf_counter())

    async def _commit(self, message: Envelope, outcome: Outcome, started: float) -> None:
        downstream = [m for m in outcome.messages if m.destination is not None]
        duration_ms = (time.perf_counter() - started) * 1000
        status: EventStatus = "continued" if outcome.continued else "completed"
        event = self._event(message, status, duration_ms=duration_ms, metrics=outcome.metrics)
        commands = self.runtime.events.commands(event)
        terminal = [m for m in outcome.messages if m.destination is None]
        for final in terminal:
            commands.extend(self._finish_job(final))
        if not terminal:
            stage = next((m.destination for m in outcome.messages), None) or self.spec.name
            commands.append(JobStore.running_command(message.job_id, stage))
        dropped = self._event(message, "dropped", duration_ms=duration_ms, error=_DROPPED_AT_COMMIT)
        result = await commit_once(
            self.runtime.redis,
            keys.done(message.message_id),
            DONE_TTL_S,
            commands,
            downstream,
            job_id=message.job_id,
            dropped=self.runtime.events.commands(dropped),
        )
        if result == "duplicate":
            log.info("another run committed this message first")
        elif result == "refused":
            log.info("the job finished while this message was handled; its outcome is dropped")

    def _finish_job(self, final: Envelope) -> list[Command]:
        if isinstance(final, JobCompleted):
            record = JobStore.finished_command(final.job_id, result=final.result)
            status: EventStatus = "completed"
            error = ""
        elif isinstance(final, JobFailed):
            record = JobStore.finished_command(
                final.job_id, result=final.partial, error=final.error, failure=final.status
            )
            status, error = "failed", final.error
        else:
            raise TypeError(f"{final.type} has no destination and is not terminal")
        event = Event(
            job_id=final.job_id,
            message_id=final.message_id,
            type=final.type,
            worker=self.spec.name,
            stage="done",
            status=status,
            error=error,
        )
        published = publish_command(final, self.runtime.settings.events_maxlen)
        return [record, *self.runtime.events.commands(event), published]

    def _event(
        self,
        message: Envelope,
        status: EventStatus,
        *,
        duration_ms: float = 0.0,
        error: str = "",
        metrics: Metrics | None = None,
        wait_ms: float = 0.0,
    ) -> Event:
        return Event(
            job_id=message.job_id,
            message_id=message.message_id,
            type=message.type,
            worker=self.spec.name,
            stage=self.spec.name,
            status=status,
            attempt=message.attempt,
            duration_ms=duration_ms,
            error=error,
            wait_ms=wait_ms,
            **(metrics or Metrics()).model_dump(),
        )

    async def _record(
        self,
        message: Envelope,
        status: EventStatus,
        *,
        error: str = "",
        started: float | None = None,
        wait_ms: float = 0.0,
    ) -> None:
        duration_ms = (time.perf_counter() - started) * 1000 if started is not None else 0.0
        await self.runtime.events.record(
            self._event(message, status, duration_ms=duration_ms, error=error, wait_ms=wait_ms)
        )


async def enqueue(pool: ArqRedis, message: Envelope) -> bool:
    """Put a message on its destination's queue; False if that message id is already there
    (or was handled recently): the duplicate is dropped."""
    if message.destination is None:
        raise ValueError(f"{message.type} is terminal and has no queue")
    job = await pool.enqueue_job(
        ARQ_FUNCTION,
        message.model_dump(mode="json"),
        _job_id=message.message_id,
        _queue_name=keys.queue(message.destination),
    )
    return job is not None


def _age_ms(created_at: datetime) -> float:
    return max((utc_now() - created_at).total_seconds() * 1000, 0.0)


def _summarise(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error["loc"]) or "message"
        parts.append(f"{where}: {error['msg']}")
    more = f" (+{exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
    return "; ".join(parts) + more
