"""The actor runtime: one readable loop from a queued payload to the messages it causes.

For every arq job a worker takes:

  decode -> (poison? dead-letter, fail the job, go on)
  -> learn if an earlier run already committed (stop), the job has
     finished, cancelled say (`dropped` event, stop), or has no record (dead-letter, stop):
     the take script told (infra/runtime/wake.py), or a round trip asks; only a message
     that runs has a `received` event, written with its commit if the hop is quick
     (infra/runtime/arrival.py)
  -> call the worker's handler within the hop's time limit
  -> commit, atomically: done marker + downstream messages on their queues + the
     `completed`/`continued` event (+ job record and results stream for terminal messages)

No handler run ends silently. The hop's time limit (HopLimit) lies inside the worker's
job_timeout, so the runtime, not arq, ends a run that is too slow, and records why; model
calls get that limit minus a reserve, so a hanging or rate-limiting endpoint fails as an
LLMError while there is still time to commit the failure. How a failure ends:
  - the job's deadline passed (before or during the hop)  -> `deadline_exceeded`
  - the hop outlasted its limit                            -> `hop_timeout`
  - the model endpoint failed (after its own retries)      -> `llm_error`
  - Redis not answering (REDIS_UNAVAILABLE)                -> ridden out: the message runs
    again, its try given back
  - the outside world failing now (TRANSIENT: OSError, Unavailable): arq retries the
    message with exponential backoff (`retried` event) while tries remain, then
    `out_of_tries`
  - an error raised on purpose (PostelError: the graph is missing, say) -> `invalid_request`
  - any other exception, a bug                             -> `internal_error`, at once
The model layer's retries are the one retry budget of a model failure: the handler does not
retry it again. Failed messages other than deadline ones are dead-lettered, so they can be
redriven. A result that cannot be stored (too large, not JSON) fails the job
`invalid_request` instead of leaving it running. Downstream messages carry deterministic ids
and are enqueued only by the commit that marks their cause done, so a handler that runs
twice (its worker was killed) neither forks the job nor records its completion twice
(infra/store/commit.py).
A handler still running when its job finishes (cancelled, say) is stopped where it waits
(infra/runtime/stops.py: an in-flight model call is closed, a GASL plan interrupted) and the
hop ends with a `dropped` event; one that commits first has its commit refused: nothing goes
downstream and a `dropped` event says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import structlog
from arq import Retry
from arq.connections import ArqRedis
from arq.constants import in_progress_key_prefix, job_key_prefix, retry_key_prefix
from postel.infra.runtime.arrival import Arrival
from postel.infra.runtime.memory import MemoryPolicy
from postel.infra.runtime.retries import HopRetries, RedisLost
from postel.infra.runtime.settings import QueueSettings, Settings
from postel.infra.runtime.stops import HopStops, Watch
from postel.infra.runtime.tracing import hop_span, with_trace
from postel.infra.store.calls import count_failed_calls, record_commands
from postel.infra.store.commit import (
    JOB_RECORD_MISSING,
    CommitResult,
    Received,
    commit_once,
    receive_once,
)
from postel.infra.store.connect import REDIS_UNAVAILABLE
from postel.infra.store.deadletter import dead_letter, dead_letter_command, summarise_validation
from postel.infra.store.events import Command, Event, EventLog, EventStatus, Metrics
from postel.infra.store.graphs import GraphRegistry
from postel.infra.store.job_stores import job_stores
from postel.infra.store.jobs import JobNotFound, JobStore
from postel.infra.store.keys import Keyspace, lane_of_arq, message_of
from postel.infra.store.wire import UnreadableEntry
from postel.messages import (
    Envelope,
    FailureStatus,
    JobCompleted,
    JobFailed,
    decode_message,
    ids,
    utc_now,
)
from postel.messages.errors import PostelError, Refused, TimedOut, Unavailable
from postel.services.llm.budget import call_budget
from postel.services.llm.call_log import LoggedCall, logging_calls
from postel.services.llm.errors import LLMError
from postel.services.llm.metered import Meter
from postel.services.step import Step
from pydantic import ValidationError
from redis.asyncio import Redis
from redis.exceptions import ResponseError

log = structlog.get_logger(__name__)

DONE_TTL_S = 7 * 24 * 3600

_hop: ContextVar[RunningHop | None] = ContextVar("hop", default=None)
"""The hop this task runs: its `received` event, and while that is unwritten the Arrival
that each write able to end the hop (a commit, a `retried` record) takes it from."""

_DROPPED_AT_RECEIVE = "its job had already finished; the message was not handled"
_DROPPED_AT_COMMIT = "its job finished while the message was handled; the outcome was discarded"


@dataclass
class HopOutcome:
    """What a worker's handler gives back for one hop: the messages it sends on, its
    figures, whether it continued the AI loop; the runtime commits it."""

    messages: list[Envelope] = field(default_factory=list)
    metrics: Metrics = field(default_factory=Metrics)
    continued: bool = False
    calls: list[LoggedCall] = field(default_factory=list)
    """The hop's model calls, filled in by the runtime and recorded with the commit."""

    @classmethod
    def of(cls, step: Step, meter: Meter | None = None) -> HopOutcome:
        """A service's Step as the hop's outcome, with its model calls' counts."""
        return cls(step.messages, Metrics.of(step.figures, meter), continued=step.continued)


@dataclass
class Runtime:
    """What every handler may use: the arq pool (also the Redis client), the names of its
    keys, settings and the stores; `resources` holds per-process objects a worker builds
    once (a model client); `memory` is the process's memory policy, holding its graph
    versions (infra/runtime/memory.py)."""

    pool: ArqRedis
    keyspace: Keyspace
    settings: Settings
    events: EventLog
    jobs: JobStore
    memory: MemoryPolicy
    resources: dict[str, Any] = field(default_factory=dict)
    stops: HopStops = field(init=False)
    """This process's running hops, stopped when their job finishes (infra/runtime/stops.py)."""

    def __post_init__(self) -> None:
        self.stops = HopStops(self.pool, self.keyspace)

    @property
    def redis(self) -> Redis:
        return self.pool

    @classmethod
    def create(cls, pool: ArqRedis, keyspace: Keyspace, settings: Settings) -> Runtime:
        events, jobs = job_stores(pool, keyspace, settings)
        return cls(
            pool=pool,
            keyspace=keyspace,
            settings=settings,
            events=events,
            jobs=jobs,
            memory=MemoryPolicy(settings.graph_versions),
        )

    def graphs(self) -> GraphRegistry:
        """The graph registry, its versions held by this process's memory policy."""
        return GraphRegistry(
            self.pool, self.keyspace, self.memory.graphs, storage=self.settings.graph_storage()
        )


Handler = Callable[[Envelope, Runtime], Awaitable[HopOutcome]]


@dataclass(frozen=True)
class WorkerSpec:
    name: str
    accepts: tuple[type[Envelope], ...]
    handle: Handler
    setup: Callable[[Runtime], Awaitable[None]] | None = None
    retries: HopRetries | None = None
    """The retry policy of this worker's messages; None takes its queue's from settings
    (`retry_policy`). The actor and the arq worker built for the spec both read that one."""

    def retry_policy(self, settings: Settings) -> HopRetries:
        """The policy a worker runs this spec's messages under, decided here only: the spec's
        own, or one from its queue's settings (POSTEL_<NAME>__MAX_TRIES)."""
        if self.retries is not None:
            return self.retries
        return HopRetries.of(settings.queue(self.name))


class HopTimeout(TimedOut):
    """A handler ran past its hop's time limit."""


class HopStopped(Refused):
    """The hop's job finished (cancelled, say) while its handler ran: the handler was
    stopped where it waited (infra/runtime/stops.py)."""


COMMIT_RESERVE_S = 1.0
"""Time kept at the end of a hop for recording its outcome before arq would cut it off."""


@dataclass(frozen=True)
class HopLimit:
    """How long one handler run may take: its worker's job_timeout less a reserve for the
    commit, or less if the job's deadline comes first."""

    seconds: float
    by_deadline: bool
    ends_at: float  # time.monotonic()

    @classmethod
    def of(cls, message: Envelope, queue: QueueSettings) -> HopLimit:
        seconds = queue.job_timeout - max(COMMIT_RESERVE_S, 0.05 * queue.job_timeout)
        seconds = max(seconds, queue.job_timeout / 2)
        by_deadline = False
        if message.deadline is not None:
            left = (message.deadline - utc_now()).total_seconds()
            if left < seconds:
                seconds, by_deadline = max(left, 0.0), True
        return cls(seconds, by_deadline, time.monotonic() + seconds)

    @property
    def reserve(self) -> float:
        return min(COMMIT_RESERVE_S, 0.1 * self.seconds)

    @property
    def model_seconds(self) -> float:
        """What model calls may use: the limit less a reserve to record their failure."""
        return self.seconds - self.reserve

    def spent(self) -> bool:
        return time.monotonic() >= self.ends_at - self.reserve - 0.05


class Actor:
    """Runs one worker kind's handler on the messages of its queue."""

    def __init__(self, spec: WorkerSpec, runtime: Runtime) -> None:
        self.spec = spec
        self.runtime = runtime
        self.queue = runtime.settings.queue(spec.name)
        self.retries = spec.retry_policy(runtime.settings)

    async def handle_job(self, ctx: dict[str, Any], payload: Any) -> bool:
        """arq's entry point: `ctx["job_try"]` counts takes of the message by a worker,
        including those cut by a crash before or during the handler.

        arq protects a running job with an in-progress key that lives job_timeout + 10 s, so
        a killed worker's job would wait that long before another worker may take it. The
        worker sets it to a short lease (`lease_s`, infra/runtime/wake.py), which the handler renews
        while its process lives: a dead worker's job is free again within `lease_s`.

        Redis lost mid-message (a command of the runtime's or of the handler's failed with
        REDIS_UNAVAILABLE) is not the message's fault: the message is handed back to arq to
        run again, with its try given back (a commit that did land is seen by the re-run's
        done check). If Redis is still away, arq cannot record that either, and the lease
        lapses instead: the message runs again all the same.

        `ctx["received"]` is what the take script found the message to be (infra/runtime/
        wake.py); where it is absent (arq's own Worker), the hop asks in a round trip.

        True when the commit also removed the message's arq job from its queue (the worker
        then skips arq's own finish, a round trip)."""
        lease_key = in_progress_key_prefix + str(ctx.get("job_id", ""))
        renewing = asyncio.create_task(self._renew_lease(lease_key))
        attempt = int(ctx.get("job_try", 1))
        began = time.perf_counter()
        try:
            return await self.run(
                payload, attempt=attempt, lease_key=lease_key, seen=ctx.get("received")
            )
        except REDIS_UNAVAILABLE as exc:
            log.warning("lost redis while handling a message; it runs again", error=str(exc))
            raise RedisLost() from exc
        except asyncio.CancelledError:
            # arq cancels a run at job_timeout (then drops the message) and at shutdown (then
            # runs it again). The hop limit ends runs earlier, so a cut at job_timeout means
            # the event loop was blocked past it: record the failure rather than lose the job.
            # A run whose lease another worker took over while it was held (a SIGSTOP past
            # the lease) has nothing to record: the other run committed the message.
            cut_off = time.perf_counter() - began >= self.queue.job_timeout
            if cut_off and await asyncio.shield(self._fail_cut_off(payload, attempt, began)):
                return False
            raise
        finally:
            renewing.cancel()

    async def _fail_cut_off(self, payload: Any, attempt: int, started: float) -> bool:
        """Fail the job of a run cut off at job_timeout; True (and nothing recorded) if
        another run committed its message meanwhile."""
        message = decode_message(payload).with_attempt(attempt)
        if await self._lease_lost(message):
            return True
        error = f"arq cut the run off at job_timeout ({self.queue.job_timeout:g}s)"
        log.error("run cut off; the job fails", job_id=message.job_id, error=error)
        await self._give_up(message, payload, error, status="hop_timeout", started=started)
        return False

    async def _lease_lost(self, message: Envelope) -> bool:
        """Did another run commit `message` while this one was held past its lease (its
        worker frozen, say)? Then this run's failure is no fault: one INFO line says so."""
        if not await self.runtime.redis.exists(self.runtime.keyspace.done(message.message_id)):
            return False
        log.info(LEASE_LOST, message_id=message.message_id)
        return True

    @property
    def lease_ms(self) -> int:
        return int(self.runtime.settings.lease_s * 1000)

    async def _renew_lease(self, key: str) -> None:
        """The take script set the lease (infra/runtime/wake.py); renew it four times per
        lease. A renewal that cannot reach Redis is retried at the next beat; one
        that finds the lease gone (it lapsed while Redis was away, so another worker may run
        this message too, and only one run commits) stops renewing: a lapsed lease is never
        recreated over another worker's."""
        with contextlib.suppress(asyncio.CancelledError):
            while True:
                await asyncio.sleep(self.lease_ms / 4000)
                try:
                    held = await self.runtime.redis.pexpire(key, self.lease_ms)
                except REDIS_UNAVAILABLE as exc:
                    log.warning("could not renew the lease; retrying", key=key, error=str(exc))
                    continue
                if not held:
                    # gone because another run took the message over and committed it: the
                    # run says so once when it ends (LEASE_LOST)
                    arq_job = key.removeprefix(in_progress_key_prefix)
                    done = self.runtime.keyspace.done(message_of(arq_job))
                    if not await self.runtime.redis.exists(done):
                        log.warning("the lease lapsed; another worker may run this too", key=key)
                    return

    async def run(
        self,
        payload: Any,
        attempt: int,
        lease_key: str | None = None,
        seen: Received | None = None,
    ) -> bool:
        """Handle one message; True if its commit removed its arq job from the queue.
        `seen` is whether it must run, as its take found (None: ask Redis).

        The message's wait (the hop latency) ends here, when a worker starts running it, and
        its handling (`duration_ms`) starts here: decoding it is handling, not waiting."""
        arrived = utc_now()
        started = time.perf_counter()
        message = await self._decode(payload, attempt)
        if message is None:
            return False
        message = message.with_attempt(attempt)
        structlog.contextvars.bind_contextvars(
            job_id=message.job_id, message_id=message.message_id, worker=self.spec.name
        )
        try:
            with hop_span(self.spec.name, message):
                return await self._run(message, payload, attempt, lease_key, started, arrived, seen)
        finally:
            hop = _hop.get()
            if hop is not None and hop.arrival is not None:
                hop.arrival.close()
            _hop.set(None)
            structlog.contextvars.unbind_contextvars("job_id", "message_id", "worker")

    async def _run(
        self,
        message: Envelope,
        payload: Any,
        attempt: int,
        lease_key: str | None,
        started: float,
        arrived: datetime,
        seen: Received | None,
    ) -> bool:
        """Receive, check and handle the message, then commit its outcome."""
        received = self._event(message, "received", wait_ms=_age_ms(message.created_at, arrived))
        arrival = None
        if seen is None:
            seen = await self._receive(message, received)
        elif seen == "new" and (window_s := self.runtime.settings.received_window_ms / 1000):
            arrival = Arrival(self.runtime.events, received, window_s)
        elif seen == "new":
            await self.runtime.events.record(received)
        _hop.set(RunningHop(received, arrival))
        if seen == "handled":
            log.info("message already handled; skipping the re-run")
            return False
        if seen == "job_finished":
            log.info("the message's job has finished; dropping the message")
            await self._record(message, "dropped", error=_DROPPED_AT_RECEIVE)
            return False
        if seen == "missing":
            log.warning("the message's job has no record; dead-lettering it")
            await self.runtime.redis.execute_command(*self._record_missing(message, payload))
            return False
        if self.retries.exhausted(attempt):
            error = "out of tries (its worker died each time)"
            await self._give_up(message, payload, error, started=started)
            return False
        if message.deadline is not None and utc_now() > message.deadline:
            error = f"deadline {message.deadline.isoformat()} passed before {self.spec.name}"
            await self._give_up(
                message, payload, error, status="deadline_exceeded", keep=False, started=started
            )
            return False
        limit = HopLimit.of(message, self.queue)
        try:
            outcome = await self._handle(message, limit)
        except HopStopped as exc:
            log.info("the job finished while the message was handled; the hop was stopped")
            await self._record(message, "dropped", error=str(exc), started=started)
            return False
        except Exception as exc:
            await self._after_error(message, payload, exc, attempt, started, limit)
            return False
        arq_job = lease_key.removeprefix(in_progress_key_prefix) if lease_key else None
        return await self._commit(message, payload, outcome, started, arq_job)

    async def _handle(self, message: Envelope, limit: HopLimit) -> HopOutcome:
        """The handler, within the hop's limit; its model calls within the model budget. A
        handler that fails has its failed model attempts counted now: it commits nothing."""
        with logging_calls(self.spec.name, message.message_id) as calls:
            try:
                outcome = await self._handle_within(message, limit)
            except Exception:
                try:
                    await count_failed_calls(
                        self.runtime.redis, self.runtime.keyspace, message.job_id, calls.failed
                    )
                except REDIS_UNAVAILABLE as lost:  # the handler's own error is what counts
                    log.warning("could not count failed model calls", error=str(lost))
                raise
        metrics = outcome.metrics.model_copy(update={"failed_llm_calls": calls.failed})
        return replace(outcome, calls=calls.calls, metrics=metrics)

    async def _handle_within(self, message: Envelope, limit: HopLimit) -> HopOutcome:
        watch: Watch | None = None
        try:
            async with asyncio.timeout(limit.seconds) as scope:
                with (
                    self.runtime.stops.watching(message.job_id, scope) as watch,
                    call_budget(limit.model_seconds),
                ):
                    return await self.spec.handle(message, self.runtime)
        except TimeoutError as exc:
            if not scope.expired():
                raise
            if watch is not None and watch.stopped:
                raise HopStopped(
                    f"job {message.job_id} finished while {self.spec.name} ran; the hop was stopped"
                ) from exc
            cause = "the job's deadline" if limit.by_deadline else "its time limit"
            raise HopTimeout(
                f"{self.spec.name} ran past {cause} ({limit.seconds:.1f}s; the worker's "
                f"job_timeout is {self.queue.job_timeout:g}s)"
            ) from exc

    async def _receive(self, message: Envelope, received: Event) -> Received:
        """Learn whether the message was already committed by an earlier
        run, its job has finished (cancelled, say) or has no record; record `received` only
        for a message that runs: one round trip."""
        return await receive_once(
            self.runtime.redis,
            self.runtime.keyspace,
            message,
            self.spec.name,
            self.runtime.events.commands(received),
        )

    def _record_missing(self, message: Envelope, payload: Any) -> Command:
        """The dead letter of a message whose job has no record: it is never run, and
        nothing is written for the job."""
        return dead_letter_command(
            self.runtime.keyspace,
            source=f"worker:{self.spec.name}",
            error=f"{JOB_RECORD_MISSING}: job {message.job_id!r} has no record (never "
            f"submitted, expired, or lost); {self.spec.name} did not run the message",
            payload=payload,
            job_id=message.job_id,
            message_id=message.message_id,
            attempt=message.attempt,
        )

    async def _decode(self, payload: Any, attempt: int) -> Envelope | None:
        error: str | None = None
        message: Envelope | None = None
        try:
            message = decode_message(payload) if isinstance(payload, dict) else None
            if message is None:
                error = f"undecodable message: {_payload_fault(payload)}"
        except ValidationError as exc:
            error = f"invalid message: {summarise_validation(exc)}"
        except Exception as exc:  # whatever a payload holds, it must not stop the worker
            error = f"undecodable message: {type(exc).__name__}: {exc}"
        if message is not None and not isinstance(message, self.spec.accepts):
            accepted = ", ".join(cls.model_fields["type"].default for cls in self.spec.accepts)
            error = f"unknown type for worker {self.spec.name}: {message.type!r} (takes {accepted})"
        if error is None:
            return message
        await self._poison(payload, payload, error, attempt)
        return None

    async def unrunnable(self, arq_job: str, raw: bytes | None, error: str, attempt: int) -> None:
        """A queue entry arq cannot run (no payload, out of tries, not a job arq can call):
        dead-lettered like any poison, with the job it names failed. An entry without a
        payload whose message was committed (its arq id is the message id) is what a stale
        run's late retry left behind: nothing was lost, and nothing is recorded."""
        if not raw and await self.runtime.redis.exists(
            self.runtime.keyspace.done(message_of(arq_job))
        ):
            log.info("a committed message's leftover queue entry; dropped", arq_job=arq_job)
            return
        payload: Any = None
        if raw:
            with contextlib.suppress(ValueError, RecursionError):
                job = json.loads(raw)
                arguments = job.get("a") if isinstance(job, dict) else None
                payload = arguments[0] if isinstance(arguments, list) and arguments else None
        failure: FailureStatus = (
            "out_of_tries" if self.retries.exhausted(attempt) else "invalid_request"
        )
        error = f"queue entry {arq_job!r}: {error}"
        await self._poison(raw or "", payload, error, attempt, failure)

    async def _poison(
        self,
        raw: Any,
        payload: Any,
        error: str,
        attempt: int,
        failure: FailureStatus = "invalid_request",
    ) -> None:
        """Dead-letter `raw`, and fail the job its `payload` names if that job is running."""
        job_id = payload.get("job_id", "") if isinstance(payload, dict) else ""
        message_id = payload.get("message_id", "") if isinstance(payload, dict) else ""
        job_id = job_id if isinstance(job_id, str) else ""
        message_id = message_id if isinstance(message_id, str) else ""
        await dead_letter(
            self.runtime.redis,
            self.runtime.keyspace,
            source=f"worker:{self.spec.name}",
            error=error,
            payload=raw,
            job_id=job_id,
            message_id=message_id,
            attempt=attempt,
        )
        log.warning("dead-lettered a poison message", error=error, job_id=job_id)
        if job_id:
            await self._fail_job_directly(job_id, message_id, error, failure)

    async def _fail_job_directly(
        self, job_id: str, message_id: str, error: str, failure: FailureStatus
    ) -> None:
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
            self.runtime.jobs.finished_command(job_id, error=error, failure=failure),
        ]
        # unless it has ended (or has no record): then its end, and its callback, stand
        with contextlib.suppress(JobNotFound):
            await self.runtime.jobs.finish_unless_finished(job_id, commands)

    async def _after_error(
        self,
        message: Envelope,
        payload: Any,
        exc: Exception,
        attempt: int,
        started: float,
        limit: HopLimit,
    ) -> None:
        if isinstance(exc, REDIS_UNAVAILABLE):
            raise exc  # the handler lost Redis: an outage, ridden out (handle_job)
        if await self._lease_lost(message):
            # a stale run (its worker froze past the lease): another run committed the
            # message, so there is nothing to fail, retry or record
            return
        error = f"{type(exc).__name__}: {exc}"
        status = _failure_of(exc, limit)
        if status is not None:
            log.error("handler failed; the job fails", error=error, failure=status)
            keep = status != "deadline_exceeded"
            await self._give_up(message, payload, error, status=status, keep=keep, started=started)
            return
        if self.retries.retries(attempt):
            delay = self.retries.delay(exc, attempt)
            log.warning("handler failed; arq will retry", error=error, attempt=attempt)
            await self._record(message, "retried", error=error, started=started)
            raise Retry(defer=delay) from exc
        log.error("handler failed on its last try", error=error, attempt=attempt)
        await self._give_up(message, payload, error, started=started)

    async def _give_up(
        self,
        message: Envelope,
        payload: Any,
        error: str,
        status: FailureStatus = "out_of_tries",
        *,
        keep: bool = True,
        started: float,
    ) -> None:
        """Fail the job; with `keep`, the message goes to the dead letters to be redriven. The
        dead letter is committed with the failure, so a run that gives up on a message another
        run already committed (its worker was frozen past the lease) writes nothing. The hop's
        event is `failed`, with the time since `started` (perf_counter) as its duration."""
        gave_up = GaveUp()
        if keep:
            gave_up.dead_letter.append(
                dead_letter_command(
                    self.runtime.keyspace,
                    source=f"worker:{self.spec.name}",
                    error=error,
                    payload=payload,
                    job_id=message.job_id,
                    message_id=message.message_id,
                    attempt=message.attempt,
                )
            )
            gave_up.events.append(self._event(message, "dead_lettered", error=error))
        failed = message.derive(
            JobFailed,
            key=ids.FAILED,
            status=status,
            error=f"{self.spec.name} gave up after {message.attempt} tries: {error}"
            if status == "out_of_tries"
            else f"{self.spec.name}: {error}",
        )
        outcome = HopOutcome(messages=[failed])
        await self._commit(message, payload, outcome, started, gave_up=gave_up)

    async def _commit(
        self,
        message: Envelope,
        payload: Any,
        outcome: HopOutcome,
        started: float,
        arq_job: str | None = None,
        *,
        gave_up: GaveUp | None = None,
    ) -> bool:
        """Commit the outcome. One that cannot be stored (not serialisable, over Redis's
        limits: Redis's reply is about the outcome itself) fails the job `invalid_request`
        with the reason instead; a Redis outage (REDIS_UNAVAILABLE: a failover's CLUSTERDOWN
        included) propagates, and arq runs the message again. With `arq_job`, the commit also
        removes that job from this worker's queue (what arq's finish would do in a round trip
        of its own); True if it did. `gave_up` (a dead letter and its event) is committed with the
        outcome, and the hop's event is then `failed`."""
        extra = gave_up or GaveUp()
        try:
            result = await self._commit_outcome(
                message, payload, outcome, started, arq_job, extra, failed=gave_up is not None
            )
        except REDIS_UNAVAILABLE:
            raise  # Redis not answering now says nothing of the outcome: it runs again
        except (ValueError, TypeError, RecursionError, ResponseError) as exc:
            if any(isinstance(m, JobFailed) for m in outcome.messages):
                raise
            error = f"{self.spec.name} could not store its outcome: {type(exc).__name__}: {exc}"
            log.error("outcome could not be stored; the job fails", error=error[:500])
            failed = message.derive(
                JobFailed, key=ids.FAILED, status="invalid_request", error=error[:2000]
            )
            result = await self._commit_outcome(
                message, payload, HopOutcome([failed]), started, arq_job, extra, failed=True
            )
        if result == "duplicate":
            log.info(LEASE_LOST, message_id=message.message_id)
        elif result == "refused":
            log.info("the job finished while this message was handled; its outcome is dropped")
        elif result == "missing":
            log.warning("the job's record is gone; the message is dead-lettered, nothing else")
        return arq_job is not None and result != "duplicate"

    async def _commit_outcome(
        self,
        message: Envelope,
        payload: Any,
        outcome: HopOutcome,
        started: float,
        arq_job: str | None,
        extra: GaveUp,
        *,
        failed: bool = False,
    ) -> CommitResult:
        downstream = [with_trace(m) for m in outcome.messages if m.destination is not None]
        duration_ms = (time.perf_counter() - started) * 1000
        status: EventStatus = (
            "failed" if failed else "continued" if outcome.continued else "completed"
        )
        hop = _hop.get()
        event = self._event(
            message,
            status,
            duration_ms=duration_ms,
            metrics=outcome.metrics,
            wait_ms=hop.received.wait_ms if hop is not None else 0.0,
        )
        arrived = await _unwritten_received()
        commands = [
            *extra.dead_letter,
            # the commit runs only while the job's record exists, and its stream lives as
            # long as the record (made with it): a hop renews neither
            *self.runtime.events.commands(*arrived, *extra.events, event, renew=False),
        ]
        terminal = [m for m in outcome.messages if m.destination is None]
        for final in terminal:
            commands.extend(self._finish_job(final))
        if not terminal:
            stage = next((m.destination for m in outcome.messages), None) or self.spec.name
            commands.append(self.runtime.jobs.running_command(message.job_id, stage))
        if self.runtime.settings.record_calls:
            ttl = self.runtime.settings.job_ttl_s
            commands.extend(
                record_commands(self.runtime.keyspace, outcome.calls, message.job_id, ttl)
            )
        finished: list[Command] = []
        if arq_job is not None:
            # the queue forgets the job with the commit; its in-progress key (the lease) just
            # expires, as nothing can take a job that is no longer queued
            finished = [
                ["DEL", job_key_prefix + arq_job, retry_key_prefix + arq_job],
                [
                    "ZREM",
                    self.runtime.keyspace.queue(self.spec.name, lane_of_arq(arq_job)),
                    arq_job,
                ],
            ]
            commands.extend(finished)

        # built only for a commit that runs them (rarely): a hop spends no CPU on them
        def dropped() -> list[Command]:
            event = self._event(
                message, "dropped", duration_ms=duration_ms, error=_DROPPED_AT_COMMIT
            )
            # a quick hop's `received` is not written here: stamped after the job's end, it
            # would read as if the message arrived then; `dropped` says how long it ran
            return [*self.runtime.events.commands(event), *finished]

        def missing() -> list[Command]:
            return [self._record_missing(message, payload), *finished]

        return await commit_once(
            self.runtime.redis,
            self.runtime.keyspace,
            self.runtime.keyspace.done(message.message_id),
            DONE_TTL_S,
            commands,
            downstream,
            job_id=message.job_id,
            message_ttl_s=self.runtime.settings.job_ttl_s,
            dropped=dropped,
            record="require",
            missing=missing,
        )

    def _finish_job(self, final: Envelope) -> list[Command]:
        if isinstance(final, JobCompleted):
            record = self.runtime.jobs.finished_command(final.job_id, result=final.result)
            status: EventStatus = "completed"
            error = ""
        elif isinstance(final, JobFailed):
            record = self.runtime.jobs.finished_command(
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
        published = self.runtime.jobs.publish_command(final, self.runtime.settings.events_maxlen)
        callback = self.runtime.jobs.callback_command(final.job_id)
        return [record, *self.runtime.events.commands(event), published, callback]

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
    ) -> None:
        duration_ms = (time.perf_counter() - started) * 1000 if started is not None else 0.0
        await self.runtime.events.record(
            *await _unwritten_received(),
            self._event(message, status, duration_ms=duration_ms, error=error),
        )


@dataclass(frozen=True)
class RunningHop:
    received: Event
    arrival: Arrival | None  # None when `received` was written before the handler ran


LEASE_LOST = "lease lost: another worker committed this message while this run was held"
"""The one line (INFO) a run held past its lease logs, whatever its own ending."""


@dataclass
class GaveUp:
    """What a give-up commits besides the failure: the message's dead letter and its event."""

    dead_letter: list[Command] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


async def _unwritten_received() -> list[Event]:
    """The running hop's `received` event if a write ending the hop is to carry it."""
    hop = _hop.get()
    return [] if hop is None or hop.arrival is None else await hop.arrival.unwritten()


TRANSIENT: tuple[type[Exception], ...] = (OSError, Unavailable)
"""A handler's errors that are the outside world failing now, worth another try: the
network or a socket (OSError: refused, reset, timed out), a service postel needs not
answering (Unavailable). A Redis outage is ridden out before this (REDIS_UNAVAILABLE); a
model endpoint's failures are retried inside the model layer, and what escapes it fails the
job `llm_error`."""


def _failure_of(exc: Exception, limit: HopLimit) -> FailureStatus | None:
    """The failure a handler's exception ends the job with; None if it is worth a retry
    (TRANSIENT only). An error postel raises on purpose (PostelError) names what the request
    or a message lacks: retrying cannot change it. Any other exception is a bug in the
    handler (a TypeError, a KeyError, a model answer read without its validation): the job
    fails at once `internal_error`, naming it, and the message is dead-lettered to be
    redriven once the bug is fixed."""
    if limit.by_deadline and (isinstance(exc, HopTimeout) or limit.spent()):
        return "deadline_exceeded"
    if isinstance(exc, HopTimeout):
        return "hop_timeout"
    if isinstance(exc, LLMError):
        return "llm_error"
    if isinstance(exc, TRANSIENT):
        return None
    if isinstance(exc, PostelError):
        return "invalid_request"
    return "internal_error"


def _payload_fault(payload: Any) -> str:
    """Why `payload` is no message: a queue entry that is not a postel job reaches the
    handler as its text, with its fault (infra/store/wire.loads)."""
    if isinstance(payload, UnreadableEntry):
        return f"the queue entry is not a postel job: {payload.fault}"
    kind = {str: "a string", list: "an array", type(None): "null"}.get(type(payload))
    return f"the payload is {kind or 'a ' + type(payload).__name__}, not a JSON object"


def _age_ms(created_at: datetime, now: datetime) -> float:
    return max((now - created_at).total_seconds() * 1000, 0.0)
