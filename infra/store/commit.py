"""Commit once: a message's done marker, its downstream messages and the records of its
handling, atomically.

One Lua script sets `postel:done:<message_id>` if absent and, only then (unless the job has
finished, below):
- puts each downstream message on its queue the way arq's own `enqueue_job` does (the job
  under `arq:job:<id>`, its id in the queue's sorted set), skipping an id
  arq already holds or has a result for — so a message is never forked — and wakes one worker
  of that queue (a token on its wake-up list, infra/runtime/wake.py);
- runs the given record commands (event XADDs, the job record, the results stream).
A handler that runs twice therefore commits once, and a crash before the commit leaves
nothing half-done: the re-run does it all. Nothing downstream can start before its
upstream's commit, in one round trip.

A message whose job has already finished (completed, or failed for any reason: cancelled, a
dead-lettered message) commits nothing: the script sets its done marker and runs only the
`dropped` commands (an event saying the outcome was discarded), enqueues nothing and writes
no record, so a handler that was running when its job was cancelled cannot revive it.

A queued message lives as long as its job's record (POSTEL_JOB_TTL_S, 7 days by default),
not arq's one day: a queue whose workers are all down over a weekend loses nothing, and a
message outlives the record it would update by no more than the time it waited.

One record command is postel's own: `MARK_RUNNING key stage at` sets the job record to
running at `stage` unless the job already finished (a dead-lettered message may have failed
it meanwhile).

A hop commits only while its job record exists (`record="require"`): a message whose record
is gone (expired, deleted, or lost in a Redis failover's replication window) commits
nothing and runs only the `missing` commands (its dead letter, "job record missing"): no
record fields written into a fresh hash without request or expiry, nothing enqueued, no done
marker, so a resubmission under the same id runs the job afresh. A submission
(`record="create"`) writes the record itself; its marker without a record is stale (the
record was lost), so the submission goes ahead and first clears what the lost job left: its
events and the done markers they name.

`receive_once` is the check at the start of a hop, in one round trip: whether the message
was committed already, its job finished or its record is missing; only a message that will
run records `received`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal, cast

from arq.constants import job_key_prefix, result_key_prefix
from arq.jobs import serialize_job
from postel.infra.store import keys
from postel.infra.store.events import Command
from postel.infra.store.wire import ARQ_FUNCTION, dumps
from postel.messages import Envelope
from postel.messages.envelope import utc_now
from redis.asyncio import Redis

CommitResult = Literal["committed", "duplicate", "refused", "missing"]
_RESULTS: dict[int, CommitResult] = {1: "committed", 0: "duplicate", -1: "refused", -2: "missing"}
RecordMode = Literal["require", "create", "any"]
JOB_RECORD_MISSING = "job record missing"
"""The error of a message dead-lettered because its job has no record."""

# KEYS: done marker, job record, job events. ARGV: done ttl, commands, queued jobs, wake
# tokens max, dropped commands, record mode, missing commands, done marker prefix.
_SCRIPT = """
local record = redis.call('EXISTS', KEYS[2]) == 1
if redis.call('EXISTS', KEYS[1]) == 1 then
  if ARGV[6] ~= 'create' or record then
    return 0
  end
  for _, entry in ipairs(redis.call('XRANGE', KEYS[3], '-', '+')) do
    local fields = entry[2]
    for i = 1, #fields, 2 do
      if fields[i] == 'message_id' then
        redis.call('DEL', ARGV[8] .. fields[i + 1])
      end
    end
  end
  redis.call('DEL', KEYS[3])
end
if ARGV[6] == 'require' and not record then
  for _, command in ipairs(cjson.decode(ARGV[7])) do
    redis.call(unpack(command))
  end
  return -2
end
redis.call('SET', KEYS[1], '1', 'EX', ARGV[1])
local job_status = redis.call('HGET', KEYS[2], 'status')
if job_status == 'completed' or job_status == 'failed' then
  for _, command in ipairs(cjson.decode(ARGV[5])) do
    redis.call(unpack(command))
  end
  return -1
end
for _, job in ipairs(cjson.decode(ARGV[3])) do
  local job_key, result_key, queue, job_id, score, ttl, payload, wake = unpack(job)
  if redis.call('EXISTS', job_key, result_key) == 0 then
    redis.call('PSETEX', job_key, ttl, payload)
    redis.call('ZADD', queue, score, job_id)
    redis.call('LPUSH', wake, '1')
    redis.call('LTRIM', wake, 0, ARGV[4] - 1)
  end
end
for _, command in ipairs(cjson.decode(ARGV[2])) do
  if command[1] == 'MARK_RUNNING' then
    local status = redis.call('HGET', command[2], 'status')
    if status ~= 'completed' and status ~= 'failed' then
      redis.call('HSET', command[2], 'status', 'running', 'stage', command[3],
                 'updated_at', command[4])
    end
  else
    redis.call(unpack(command))
  end
end
return 1
"""


@dataclass(frozen=True)
class QueuedJob:
    """A downstream message as arq stores it."""

    message: Envelope
    lives_s: int

    def fields(self) -> list[str | int]:
        assert self.message.destination is not None
        job_id = keys.arq_id(self.message.message_id)
        lane = keys.lane_of(self.message.job_id)
        # A message is created when it is sent: its hop's wait (the `received` event's
        # wait_ms) measures the bus, not the work its sender did after building it.
        sent = self.message.model_copy(update={"created_at": utc_now()})
        now = int(sent.created_at.timestamp() * 1000)
        payload = serialize_job(
            ARQ_FUNCTION, (sent.model_dump(mode="json"),), {}, None, now, serializer=dumps
        )
        return [
            job_key_prefix + job_id,
            result_key_prefix + job_id,
            keys.queue(self.message.destination, lane),
            job_id,
            now,
            self.lives_s * 1000,
            payload.decode(),
            keys.wake(self.message.destination, lane),
        ]


async def commit_once(
    redis: Redis,
    done_key: str,
    ttl_s: int,
    commands: list[Command],
    downstream: list[Envelope] | None = None,
    *,
    job_id: str,
    message_ttl_s: int,
    dropped: list[Command] | None = None,
    record: RecordMode = "any",
    missing: list[Command] | None = None,
) -> CommitResult:
    """`committed` by this call; `duplicate` if the message was already committed; `refused`
    if job `job_id` had finished (only `dropped` ran); `missing` if `record` is "require"
    and the job has no record (only `missing` ran). Downstream messages stay queued for up to
    `message_ttl_s`, their job record's lifetime."""
    script = redis.register_script(_SCRIPT)
    recorded, if_refused = json.dumps(commands), json.dumps(dropped or [])
    # last, as each downstream message is stamped sent as it is serialised
    jobs = [QueuedJob(message, message_ttl_s).fields() for message in downstream or []]
    args = [
        ttl_s,
        recorded,
        json.dumps(jobs),
        keys.WAKE_TOKENS_MAX,
        if_refused,
        record,
        json.dumps(missing or []),
        keys.done(""),
    ]
    result = await script(keys=[done_key, keys.job(job_id), keys.job_events(job_id)], args=args)
    return _RESULTS[int(result)]


Received = Literal["new", "handled", "job_finished", "missing"]

# KEYS: done marker, job record, lease (if any). ARGV: lease ms, `received` commands.
_RECEIVE = """
if KEYS[3] then
  redis.call('PEXPIRE', KEYS[3], ARGV[1])
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 'handled'
end
local status = redis.call('HGET', KEYS[2], 'status')
if not status then
  return 'missing'
end
if status == 'completed' or status == 'failed' then
  return 'job_finished'
end
if status == 'queued' then
  redis.call('HSET', KEYS[2], 'status', 'running')
end
for _, command in ipairs(cjson.decode(ARGV[2])) do
  redis.call(unpack(command))
end
return 'new'
"""


async def receive_once(
    redis: Redis,
    done_key: str,
    job_id: str,
    received: list[Command],
    lease_key: str | None,
    lease_ms: int,
) -> Received:
    """Renew the lease and learn whether the message must run: `handled` (an earlier run
    committed it), `job_finished`, `missing` (no job record), or `new`, and only then
    record `received`. A queued job becomes running here: its first hop runs from now,
    not from when it commits."""
    script = redis.register_script(_RECEIVE)
    reply = await script(
        # no placeholder for a missing lease: on a cluster every key must be in the job's slot
        keys=[done_key, keys.job(job_id), *([lease_key] if lease_key else [])],
        args=[lease_ms, json.dumps(received)],
    )
    return cast(Received, reply.decode() if isinstance(reply, bytes) else str(reply))
