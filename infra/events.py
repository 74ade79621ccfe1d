"""The event log: one stream entry per hop transition, in a capped global stream and a
per-job stream.

Entries are flat string fields with stable names, one type per field, numbers purely
numeric, so dashboards render them as columns:

  job_id, message_id, type, worker, stage, status, attempt, duration_ms, error,
  iteration, round, llm_calls, prompt_tokens, completion_tokens

`status` is one of: submitted, received, completed, continued, retried, failed,
dead_lettered. Numeric fields that do not apply are 0.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import BaseModel, Field
from redis.asyncio import Redis

from infra import keys

EventStatus = Literal[
    "submitted", "received", "completed", "continued", "retried", "failed", "dead_lettered"
]


class Event(BaseModel):
    job_id: str
    message_id: str
    type: str
    worker: str
    stage: str
    status: EventStatus
    attempt: int = 1
    duration_ms: float = 0.0
    wait_ms: float = 0.0
    error: str = ""
    iteration: int = 0
    round: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
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


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class EventLog:
    def __init__(self, redis: Redis, maxlen: int, job_maxlen: int, job_ttl_s: int) -> None:
        self.redis = redis
        self.maxlen = maxlen
        self.job_maxlen = job_maxlen
        self.job_ttl_s = job_ttl_s

    def add_to(self, pipe: Any, event: Event) -> None:
        """Queue the two XADDs on a pipeline or transaction the caller executes."""
        fields = event.fields()
        pipe.xadd(keys.EVENTS, fields, maxlen=self.maxlen, approximate=True)
        job_stream = keys.job_events(event.job_id)
        pipe.xadd(job_stream, fields, maxlen=self.job_maxlen, approximate=True)
        pipe.expire(job_stream, self.job_ttl_s)

    async def record(self, event: Event) -> None:
        async with self.redis.pipeline(transaction=False) as pipe:
            self.add_to(pipe, event)
            await pipe.execute()

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
