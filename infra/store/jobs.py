"""The job record: status, stage, timestamps, and the result or error, readable by job_id.

A Redis hash under `postel:job:<id>` (on a Redis Cluster every key named here carries the
job's lane tag, `postel:{p3}:job:<id>`: infra/store/keys.py). `status` is queued (submitted,
no worker has taken it), running (from the moment a worker receives its first message),
completed or failed; `failure` is the documented FailureStatus of a failed job. `llm_calls`,
`prompt_tokens` and `completion_tokens` sum the committed hops' model use
(infra/store/events.py adds them); `failed_llm_calls` counts model attempts that failed, in
committed hops and failed ones alike (infra/store/calls.py). Every job id is also in the
sorted set `postel:jobs` (one per lane) by creation time, so a dashboard pages through the
newest jobs without scanning the keyspace.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal, cast

from postel.infra.store.deadletter import summarise_validation
from postel.infra.store.events import Command
from postel.infra.store.keys import Keyspace
from postel.infra.store.scripts import LuaScript
from postel.infra.store.turns import LEAVE_IN_FLIGHT
from postel.messages import Envelope, JobFailed, JobRequest, utc_now
from postel.messages.errors import Misconfigured, NotFound
from postel.messages.job import DEFAULT_PRIORITY, DEFAULT_TENANT, Priority
from postel.messages.limits import MAX_INLINE_RESULT_BYTES
from pydantic import BaseModel, ValidationError
from redis.asyncio import Redis

JobStatus = Literal["queued", "running", "completed", "failed"]


TITLE_CHARS = 120


def title_of(request: JobRequest) -> str:
    """The prompt's first line, cut short: what a list of jobs shows without reading the
    whole request."""
    first = request.prompt.strip().splitlines()[0] if request.prompt.strip() else ""
    return first if len(first) <= TITLE_CHARS else first[: TITLE_CHARS - 1] + "…"


class JobRecord(BaseModel):
    job_id: str
    status: JobStatus
    stage: str
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None = None
    title: str = ""
    request: JobRequest | None = None
    result: Any = None
    error: str | None = None
    request_sha256: str | None = None
    failure: str | None = None
    llm_calls: int = 0
    failed_llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    requeued_from: str | None = None
    """The failed job this one runs again (infra/runtime/requeue.py)."""
    requeued_as: str | None = None
    """The newest job that runs this failed one again."""
    priority: Priority = DEFAULT_PRIORITY
    tenant: str = DEFAULT_TENANT
    not_before: datetime | None = None
    """When a deferred job starts; set only for one submitted to start later."""
    callback_url: str | None = None
    callback_status: str | None = None
    """`delivered` or `dead_lettered` once its completion callback is settled."""
    callback_attempts: int = 0

    @property
    def scheduled(self) -> bool:
        """Deferred and not started yet: queued with its start still ahead."""
        return (
            self.status == "queued" and self.not_before is not None and self.not_before > utc_now()
        )

    @property
    def finished(self) -> bool:
        return self.status in ("completed", "failed")


class JobNotFound(NotFound):
    pass


class MalformedJobRecord(Misconfigured):
    """A job record that cannot be read (written by something other than postel, or a
    fragment of a lost record)."""

    def __init__(self, job_id: str, key: str, reason: str) -> None:
        super().__init__(
            f"job {job_id!r} has a malformed record ({reason}); it cannot be shown. Remove it "
            f"with `DEL {key}` to submit the job again"
        )


# KEYS: the job's record, its lane's callbacks set and their wake-up list. ARGV: the commands
# (JSON), now (ms), the job id, its lane's prefix of jobs in flight. 0: no record; 2 and
# `status:failure`: finished already; 1: the commands ran, the job, ended by them, left its
# tenant's jobs in flight (infra/store/turns.py), and the callback, if the job asked for one,
# is due now.
_FINISH = LuaScript(
    LEAVE_IN_FLIGHT
    + """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then
  return {0, ''}
end
if status == 'completed' or status == 'failed' then
  return {2, status .. ':' .. (redis.call('HGET', KEYS[1], 'failure') or '')}
end
for _, command in ipairs(cjson.decode(ARGV[1])) do
  redis.call(unpack(command))
end
status = redis.call('HGET', KEYS[1], 'status')
if status == 'completed' or status == 'failed' then
  leave_in_flight(KEYS[1], ARGV[4], ARGV[3])
end
if redis.call('HEXISTS', KEYS[1], 'callback_url') == 1 then
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
  redis.call('LPUSH', KEYS[3], '1')
  redis.call('LTRIM', KEYS[3], 0, 0)
end
return {1, ''}
"""
)


class JobStore:
    def __init__(self, redis: Redis, keyspace: Keyspace, ttl_s: int) -> None:
        self.redis = redis
        self.keyspace = keyspace
        self.ttl_s = ttl_s

    def created_commands(
        self,
        job_id: str,
        request: JobRequest,
        fingerprint: str,
        *,
        priority: str = DEFAULT_PRIORITY,
        tenant: str = DEFAULT_TENANT,
        not_before: datetime | None = None,
    ) -> list[Command]:
        """The commands that write a new record whole, with its expiry, and index it by
        creation time (run inside the submission's commit, so a record is never half-written).
        A deferred job's record says when it starts (`not_before`): it is scheduled."""
        now = utc_now()
        created_ms = int(now.timestamp() * 1000)
        key = self.keyspace.job(job_id)
        index = self.keyspace.jobs(self.keyspace.lane_of(job_id))
        fields = {
            "job_id": job_id,
            "status": "queued",
            "stage": "intent",
            "created_at": now.isoformat(),
            "updated_at": now.isoformat(),
            "request": request.model_dump_json(),
            "request_sha256": fingerprint,
            "title": title_of(request),
            "priority": priority,
            "tenant": tenant,
        }
        if not_before is not None and not_before > now:
            fields["not_before"] = not_before.isoformat()
        if request.options.callback_url is not None:
            # read by the scripts that finish a job (CALLBACK_IF_ASKED, infra/store/commit.py)
            fields["callback_url"] = request.options.callback_url
        return [
            ["HSET", key, *(item for pair in fields.items() for item in pair)],
            ["EXPIRE", key, str(self.ttl_s)],
            ["ZADD", index, str(created_ms), job_id],
            ["ZREMRANGEBYSCORE", index, "-inf", f"({created_ms - self.ttl_s * 1000}"],
        ]

    async def fingerprint(self, job_id: str) -> str | None:
        value = await self.redis.hget(self.keyspace.job(job_id), "request_sha256")
        return value.decode() if isinstance(value, bytes) else value

    def running_command(self, job_id: str, stage: str) -> list[str]:
        """For the commit script: running at `stage`, unless the job already finished."""
        return ["MARK_RUNNING", self.keyspace.job(job_id), stage, utc_now().isoformat()]

    def callback_command(self, job_id: str) -> list[str]:
        """For the commit script: make the job's completion callback due now if its request
        asked for one (infra/runtime/callbacks.py)."""
        lane = self.keyspace.lane_of(job_id)
        return [
            "CALLBACK_IF_ASKED",
            self.keyspace.job(job_id),
            self.keyspace.callbacks(lane),
            self.keyspace.callbacks_wake(lane),
            job_id,
            str(int(utc_now().timestamp() * 1000)),
        ]

    def finished_command(
        self,
        job_id: str,
        *,
        result: Any = None,
        error: str | None = None,
        failure: str | None = None,
    ) -> list[str]:
        now = utc_now().isoformat()
        fields: dict[str, str] = {
            "status": "failed" if failure else "completed",
            "stage": "done",
            "updated_at": now,
            "finished_at": now,
            "result": json.dumps(result),
        }
        if error is not None:
            fields["error"] = error
        if failure is not None:
            fields["failure"] = failure
        return [
            "HSET",
            self.keyspace.job(job_id),
            *(item for pair in fields.items() for item in pair),
        ]

    async def finish_unless_finished(
        self, job_id: str, commands: list[Command]
    ) -> tuple[JobStatus | None, str]:
        """Run `commands` (the record's end, its events) and make the job's completion
        callback due if it asked for one, in one script, unless the job has finished already
        or has no record: the way a job ends outside a hop's commit (a cancel, a poison
        message). Returns (None, '') when it ended the job, else the status it found
        ('queued' standing for no record) and, if it had one, its failure."""
        lane = self.keyspace.lane_of(job_id)
        outcome, detail = await _FINISH(
            self.redis,
            [
                self.keyspace.job(job_id),
                self.keyspace.callbacks(lane),
                self.keyspace.callbacks_wake(lane),
            ],
            [
                json.dumps(commands),
                int(utc_now().timestamp() * 1000),
                job_id,
                self.keyspace.in_flight_prefix(lane),
            ],
        )
        if outcome == 1:
            return None, ""
        if outcome == 0:
            raise JobNotFound(f"no such job {job_id!r}")
        status, _, failure = (detail.decode() if isinstance(detail, bytes) else detail).partition(
            ":"
        )
        return cast(JobStatus, status), failure

    async def get(self, job_id: str) -> JobRecord:
        key = self.keyspace.job(job_id)
        raw = await self.redis.hgetall(key)
        if not raw or b"status" not in raw:
            raise JobNotFound(f"no such job {job_id!r}")
        try:
            data = {k.decode(): v.decode() for k, v in raw.items()}
            data["request"] = (
                JobRequest.model_validate_json(data["request"]) if "request" in data else None
            )
            data["result"] = json.loads(data["result"]) if "result" in data else None
            return JobRecord.model_validate(data)
        except ValidationError as exc:
            raise MalformedJobRecord(job_id, key, summarise_validation(exc)) from exc
        except (ValueError, RecursionError) as exc:
            raise MalformedJobRecord(job_id, key, f"{type(exc).__name__}: {exc}") from exc

    def publish_command(self, final: Envelope, maxlen: int) -> Command:
        """Publish a job's terminal message on the results stream (Client.wait_all reads it). A
        message over MAX_INLINE_RESULT_BYTES is not copied there: the result is stored once, in
        the job record, and the entry says `in: record`."""
        body = final.model_dump_json()
        inline = ["message", body] if len(body) <= MAX_INLINE_RESULT_BYTES else ["in", "record"]
        return [
            "XADD",
            self.keyspace.results(self.keyspace.lane_of(final.job_id)),
            "MAXLEN",
            "~",
            str(maxlen),
            "*",
            "job_id",
            final.job_id,
            "status",
            "failed" if isinstance(final, JobFailed) else "completed",
            *inline,
        ]
