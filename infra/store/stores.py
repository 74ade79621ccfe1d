"""Per-job state of the services, kept in Redis under the job's prefix and expiring with it.

- the generator's loop: its anchor message and one LoopState per (task, repair);
- the GASL state document of each HDT round (one copy per round, so a re-run round starts
  from the state its first run started from), with the variables its plan assigned, which
  the planner reads for an answer by reference;
- each HDT round's full execution records (rows and provenance included), which the events
  only summarise: the dashboard's job page and `postel demo` show them.
"""

from __future__ import annotations

import json
from typing import Any

from postel.infra.store.keys import Keyspace
from postel.messages import ExecutionRecord, GaslPlan, GaslPlanExecuted, GenerationRequested
from postel.services.generation.loop import LoopState
from postel.services.planner.reference import RoundReader
from pydantic import BaseModel, Field
from redis.asyncio import Redis


class GaslRound(BaseModel):
    """One executed HDT round as the job keeps it."""

    task_index: int
    round: int
    plan: GaslPlan
    records: list[ExecutionRecord]
    error: str | None = None
    base_round: int | None = Field(
        default=None, description="the round whose state it started from (None: the one before)"
    )


class RedisLoopStore:
    """`services.generation.stage.LoopStore` on Redis."""

    def __init__(self, redis: Redis, keyspace: Keyspace, ttl_s: int) -> None:
        self.redis = redis
        self.keyspace = keyspace
        self.ttl_s = ttl_s

    async def get_anchor(self, job_id: str, task_id: str) -> GenerationRequested | None:
        raw = await self.redis.get(self.keyspace.loop_anchor(job_id, task_id))
        return GenerationRequested.model_validate_json(raw) if raw else None

    async def put_anchor(self, anchor: GenerationRequested) -> None:
        key = self.keyspace.loop_anchor(anchor.job_id, anchor.task_id)
        await self.redis.set(key, anchor.model_dump_json(), ex=self.ttl_s)

    async def get_state(self, job_id: str, task_id: str, repair: int) -> LoopState | None:
        raw = await self.redis.get(self.keyspace.loop_state(job_id, task_id, repair))
        return LoopState.model_validate_json(raw) if raw else None

    async def put_state(self, job_id: str, task_id: str, repair: int, state: LoopState) -> None:
        key = self.keyspace.loop_state(job_id, task_id, repair)
        await self.redis.set(key, state.model_dump_json(), ex=self.ttl_s)


class GaslStateStore:
    def __init__(self, redis: Redis, keyspace: Keyspace, ttl_s: int) -> None:
        self.redis = redis
        self.keyspace = keyspace
        self.ttl_s = ttl_s

    async def state_after(self, job_id: str, task_index: int, round_: int) -> dict[str, Any] | None:
        """The state a round left (None for round -1, the empty state)."""
        if round_ < 0:
            return None
        raw = await self.redis.get(self.keyspace.gasl_state(job_id, task_index, round_))
        return json.loads(raw) if raw else None

    def reader(self, job_id: str) -> RoundReader:
        """One job's `state_after`, as the planner reads a round's state and variables for an
        answer by reference (`COMPLETE: ${var}`)."""

        async def read(task_index: int, round_: int) -> dict[str, Any] | None:
            return await self.state_after(job_id, task_index, round_)

        return read

    async def after_round(
        self, job_id: str, task_index: int, round_: int, state: dict[str, Any]
    ) -> None:
        await self.redis.set(
            self.keyspace.gasl_state(job_id, task_index, round_), json.dumps(state), ex=self.ttl_s
        )

    async def record_round(self, executed: GaslPlanExecuted) -> None:
        """Keep the round's records; a re-run round writes the same entry again."""
        entry = GaslRound(
            task_index=executed.progress.task_index,
            round=executed.round,
            plan=executed.plan,
            records=executed.records,
            error=executed.error,
            base_round=executed.base_round,
        )
        key = self.keyspace.gasl_rounds(executed.job_id)
        field = f"{entry.task_index}:{entry.round}"
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(key, field, entry.model_dump_json())
            pipe.expire(key, self.ttl_s)
            await pipe.execute()

    async def rounds(self, job_id: str) -> list[GaslRound]:
        """The job's executed rounds, by task then round."""
        raw = await self.redis.hvals(self.keyspace.gasl_rounds(job_id))
        found = [GaslRound.model_validate_json(value) for value in raw]
        return sorted(found, key=lambda r: (r.task_index, r.round))
