"""The event log: one stream entry per hop transition, in a capped global stream and a
per-job stream.

Entries are flat string fields with stable names, one type per field, numbers purely
numeric, so dashboards render them as columns:

  job_id, message_id, type, worker, instance, stage, status, attempt, duration_ms, wait_ms,
  error, iteration, round, llm_calls, prompt_tokens, completion_tokens, finish_reason,
  sections, elements

`status` is one of: submitted, received, completed, continued, retried, failed,
dead_lettered. `instance` names the process (host:pid) that handled the message, so a
dashboard shows how replicas share a queue. `wait_ms` is how long the message waited
between being created and being received (the hop latency); `duration_ms` is how long its
handling took. The generator's events carry the AI loop's figures per iteration
(iteration, finish_reason, sections and elements delivered so far); the planner's carry the
HDT round. Numeric fields that do not apply are 0; `error` is empty unless something
failed.
"""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator
from typing import Any, Literal

from postel.infra import keys
from postel.services.llm.metered import Meter
from pydantic import BaseModel, Field
from redis.asyncio import Redis

INSTANCE = f"{socket.gethostname()}:{os.getpid()}"

EventStatus = Literal[
    "submitted", "received", "completed", "continued", "retried", "failed", "dead_lettered"
]


class Metrics(BaseModel):
    """The figures a handler reports for its hop; each is an event field of the same name."""

    iteration: int = 0
    round: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = ""
    sections: int = 0
    elements: int = 0

    @classmethod
    def of_calls(cls, meter: Meter, **figures: Any) -> Metrics:
        return cls(
            llm_calls=meter.calls,
            prompt_tokens=meter.prompt_tokens,
            completion_tokens=meter.completion_tokens,
            **figures,
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
        data = self.model_dump(exclude={"id"})
        data["duration_ms"] = f"{self.duration_ms:.3f}"
        data["wait_ms"] = f"{self.wait_ms:.3f}"
        return {name: str(value) for name, value in data.items()}

    @classmethod
    def from_entry(cls, entry_id: bytes | str, fields: dict[Any, Any]) -> Event:
        decoded = {_text(k): _text(v) for k, v in fields.items()}
        return cls.model_validate({**decoded, "id": _text(entry_id)})


Command = list[str]


async def run_commands(redis: Redis, commands: list[Command]) -> None:
    async with redis.pipeline(transaction=False) as pipe:
        for command in commands:
            pipe.execute_command(*command)
        await pipe.execute()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class EventLog:
    def __init__(self, redis: Redis, maxlen: int, job_maxlen: int, job_ttl_s: int) -> None:
        self.redis = redis
        self.maxlen = maxlen
        self.job_maxlen = job_maxlen
        self.job_ttl_s = job_ttl_s

    def commands(self, event: Event) -> list[Command]:
        """The Redis commands that record `event`: the caller runs them in a pipeline or
        inside the commit script, so an event lands together with what it reports."""
        flat = [item for pair in event.fields().items() for item in pair]
        job_stream = keys.job_events(event.job_id)
        return [
            ["XADD", keys.EVENTS, "MAXLEN", "~", str(self.maxlen), "*", *flat],
            ["XADD", job_stream, "MAXLEN", "~", str(self.job_maxlen), "*", *flat],
            ["EXPIRE", job_stream, str(self.job_ttl_s)],
        ]

    async def record(self, event: Event) -> None:
        await run_commands(self.redis, self.commands(event))

    async def read(self, job_id: str, after: str = "-") -> list[Event]:
        start = after if after == "-" else f"({after}"
        entries = await self.redis.xrange(keys.job_events(job_id), min=start)
        return [Event.from_entry(entry_id, fields) for entry_id, fields in entries]

    async def follow(self, job_id: str, block_ms: int = 1000) -> AsyncIterator[Event]:
        """Every event of the job, past and future, until the caller stops iterating."""
        last = "0-0"
        stream = keys.job_events(job_id)
        while True:
            batches = await self.redis.xread({stream: last}, block=block_ms, count=100)
            for _stream, entries in batches:
                for entry_id, fields in entries:
                    last = _text(entry_id)
                    yield Event.from_entry(entry_id, fields)
