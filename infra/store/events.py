"""The event log: one stream entry per hop transition, in a capped global stream and a
per-job stream.

Entries are flat string fields with stable names, one type per field, numbers purely
numeric, so dashboards render them as columns:

  job_id, message_id, type, worker, instance, stage, status, attempt, duration_ms, wait_ms,
  error, iteration, round, repair, llm_calls, failed_llm_calls, prompt_tokens,
  completion_tokens,
  finish_reason, sections, elements, decision, rationale, commands

The hop's own fields (job_id to wait_ms) are in every entry; `error` and the figures after it
only where set: a field left out is at its default, 0 or empty, and reads back so
(`Event.from_entry`). Most hops set none of them, and every word of an entry is written twice
(two streams) and again to the append-only file: a full entry cost Redis twice what the short
one does.

`status` is one of: submitted, received, completed, continued, retried, failed,
dead_lettered, dropped (a message of a finished job: not handled, or its outcome discarded),
redriven (a dead letter sent back to its queue), discarded (a dead letter dropped for good).
`instance` names the process (host:pid) that handled the message, so a dashboard shows how
replicas share a queue. `wait_ms` is how long the message waited between being sent (the
commit that queued it) and a worker starting to run it (the hop latency), on its `received`
event and again on its `completed`/`continued` one; `duration_ms` is how long its handling
took from there, decoding it included, so the two do not overlap.

Both streams have every event but one kind: a `received` event written together with the
outcome of its hop (a quick hop's, infra/runtime/arrival.py) goes to the job's stream only.
The lane's stream, which live views, charts and metrics follow, has that hop's outcome, which
carries its wait; a hop still running after the window has its `received` in both. The
figures from `iteration` to `commands` are what the hop's service reported (services/step.py
says what each means) with its model calls' counts; those that do not apply are 0 or empty,
and `error` is empty unless something failed.

`failed_llm_calls` counts the hop's model attempts that got no usable answer (retried 5xx,
429s, timeouts), which `llm_calls` (answered calls) leaves out.

Recording a handled message (`completed`, `continued`) also adds the hop's model calls and
tokens to the job record's sums and counts it for the process that handled it
(`postel:tally:handled`, `postel:tally:last`, per lane on a cluster: what the dashboard's
workers page shows). A hop does not renew the tallies' lifetime: every worker process does,
once a minute (`renew_tallies`, from its presence beat, the first 5 s after it starts), so
they live POSTEL_JOB_TTL_S past the last process. A process that dies before its first beat,
with none ever started after it, leaves the tallies it made without a lifetime: two small
hashes per lane.
"""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator
from typing import Any, Literal

from postel.infra.store.connect import REDIS_UNAVAILABLE
from postel.infra.store.keys import Keyspace
from postel.infra.store.outage import RideOut
from postel.messages import utc_now
from postel.services.llm.metered import Meter
from postel.services.step import HopFigures
from pydantic import BaseModel, Field
from redis.asyncio import Redis

INSTANCE = f"{socket.gethostname()}:{os.getpid()}"

EventStatus = Literal[
    "submitted",
    "received",
    "completed",
    "continued",
    "retried",
    "failed",
    "dead_lettered",
    "dropped",
    "redriven",
    "discarded",
    "callback_sent",
    "callback_failed",
    "callback_dead_lettered",
]
HANDLED: frozenset[str] = frozenset({"completed", "continued"})


class Metrics(HopFigures):
    """A hop's figures with its model calls' counts; each is an event field of the same name."""

    llm_calls: int = 0
    failed_llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    budget_wait_ms: float = 0.0

    @classmethod
    def of(cls, figures: HopFigures, meter: Meter | None = None) -> Metrics:
        """A service's figures with the counts of the model calls `meter` saw."""
        reported = figures.model_dump(include=set(HopFigures.model_fields))
        if meter is None:
            return cls(**reported)
        return cls(
            llm_calls=meter.calls,
            prompt_tokens=meter.prompt_tokens,
            completion_tokens=meter.completion_tokens,
            budget_wait_ms=round(meter.budget_wait_ms, 3),
            **reported,
        )


class _Hop(BaseModel):
    job_id: str
    message_id: str
    type: str
    worker: str
    instance: str = INSTANCE
    stage: str
    status: EventStatus
    attempt: int = 1
    duration_ms: float = 0.0
    wait_ms: float = 0.0
    error: str = ""


class Event(Metrics, _Hop):
    """One entry: the hop's fields first, then its figures (pydantic orders fields from the
    last base to the first)."""

    id: str | None = Field(default=None, description="the stream entry id, when read back")

    def fields(self) -> dict[str, str]:
        """The stream entry: the hop's own fields, then `error` and each figure if set."""
        data = self.model_dump(exclude={"id"})
        data["duration_ms"] = f"{self.duration_ms:.3f}"
        data["wait_ms"] = f"{self.wait_ms:.3f}"
        return {
            name: str(value)
            for name, value in data.items()
            if name in _ALWAYS_WRITTEN or value != _DEFAULTS[name]
        }

    @classmethod
    def from_entry(cls, entry_id: bytes | str, fields: dict[Any, Any]) -> Event:
        # inline rather than _text per field: a job's page reads up to 2,000 entries
        decoded = {
            (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in fields.items()
        }
        decoded["id"] = _text(entry_id)
        return cls.model_validate(decoded)


_ALWAYS_WRITTEN = frozenset(_Hop.model_fields) - {"error"}
_DEFAULTS = {name: field.default for name, field in Event.model_fields.items()}

Command = list[str]


async def run_commands(redis: Redis, commands: list[Command]) -> None:
    async with redis.pipeline(transaction=False) as pipe:
        for command in commands:
            pipe.execute_command(*command)
        await pipe.execute()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class EventLog:
    def __init__(
        self, redis: Redis, keyspace: Keyspace, maxlen: int, job_maxlen: int, job_ttl_s: int
    ) -> None:
        self.redis = redis
        self.keyspace = keyspace
        self.maxlen = maxlen
        self.job_maxlen = job_maxlen
        self.job_ttl_s = job_ttl_s

    def commands(self, *events: Event, renew: bool = True) -> list[Command]:
        """The Redis commands that record `events`, in order: the caller runs them in a
        pipeline or inside the commit script, so an event lands together with what it
        reports. With `renew`, each job's stream has its lifetime renewed once, after its
        last entry; a hop's commit, which writes only while its job's record exists, leaves
        it: the stream was made with the record, at submission, with the same lifetime. A
        `received` event with another event of its message is for the job's stream only
        (module docstring)."""
        commands: list[Command] = []
        streams: dict[str, None] = {}
        concluded = {event.message_id for event in events if event.status != "received"}
        for event in events:
            flat = [item for pair in event.fields().items() for item in pair]
            job_stream = self.keyspace.job_events(event.job_id)
            streams[job_stream] = None
            if not (event.status == "received" and event.message_id in concluded):
                commands.append(self._lane_entry(self.keyspace.lane_of(event.job_id), flat))
            commands.append(["XADD", job_stream, "MAXLEN", "~", str(self.job_maxlen), "*", *flat])
            if event.status in HANDLED:
                commands.extend(self._tallies(event))
        if renew:
            commands.extend(["EXPIRE", stream, str(self.job_ttl_s)] for stream in streams)
        return commands

    def jobless_commands(self, event: Event, lane: str) -> list[Command]:
        """The command that records `event`, which belongs to no job (a dead letter that
        never named one), in `lane`'s events stream only."""
        return [self._lane_entry(lane, [item for pair in event.fields().items() for item in pair])]

    def _lane_entry(self, lane: str, flat: list[str]) -> Command:
        return ["XADD", self.keyspace.events(lane), "MAXLEN", "~", str(self.maxlen), "*", *flat]

    def _tallies(self, event: Event) -> list[Command]:
        handler = f"{event.instance}/{event.worker}"
        lane = self.keyspace.lane_of(event.job_id)
        handled, last = self.keyspace.tally_handled(lane), self.keyspace.tally_last(lane)
        tallies = [
            ["HINCRBY", handled, handler, "1"],
            ["HSET", last, handler, utc_now().isoformat()],
        ]
        job = self.keyspace.job(event.job_id)
        for name in ("llm_calls", "failed_llm_calls", "prompt_tokens", "completion_tokens"):
            if value := getattr(event, name):
                tallies.append(["HINCRBY", job, name, str(value)])
        return tallies

    async def record(self, *events: Event) -> None:
        await run_commands(self.redis, self.commands(*events))

    async def renew_tallies(self) -> None:
        """Every lane's handled tallies live POSTEL_JOB_TTL_S from now (module docstring)."""
        ttl = str(self.job_ttl_s)
        await run_commands(
            self.redis,
            [
                ["EXPIRE", tally, ttl]
                for lane in self.keyspace.lanes()
                for tally in (self.keyspace.tally_handled(lane), self.keyspace.tally_last(lane))
            ],
        )

    async def read(self, job_id: str, after: str = "-") -> list[Event]:
        start = after if after == "-" else f"({after}"
        entries = await self.redis.xrange(self.keyspace.job_events(job_id), min=start)
        return [Event.from_entry(entry_id, fields) for entry_id, fields in entries]

    async def follow(
        self, job_id: str, block_ms: int = 1000, give_up_s: float | None = None
    ) -> AsyncIterator[Event]:
        """Every event of the job, past and future, until the caller stops iterating. An
        outage (a restart, a failover) is ridden out, giving up after `give_up_s` if set;
        reading resumes after the last event yielded, so none is missed or repeated."""
        last = "0-0"
        stream = self.keyspace.job_events(job_id)
        reconnect = RideOut(f"following job {job_id}", give_up_s)
        while True:
            try:
                batches = await self.redis.xread({stream: last}, block=block_ms, count=100)
            except REDIS_UNAVAILABLE as exc:
                await reconnect.failed(exc)
                continue
            reconnect.succeeded()
            for _stream, entries in batches:
                for entry_id, fields in entries:
                    last = _text(entry_id)
                    yield Event.from_entry(entry_id, fields)
