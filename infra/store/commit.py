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
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from arq.constants import job_key_prefix, result_key_prefix
from arq.jobs import serialize_job
from postel.infra.store import keys
from postel.infra.store.events import Command
from postel.infra.store.wire import ARQ_FUNCTION, dumps
from postel.messages import Envelope
from postel.messages.envelope import utc_now
from redis.asyncio import Redis

CommitResult = Literal["committed", "duplicate", "refused"]
_RESULTS: dict[int, CommitResult] = {1: "committed", 0: "duplicate", -1: "refused"}

_SCRIPT = """
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1]) then
  return 0
end
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
        job_id = self.message.message_id
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
            keys.queue(self.message.destination),
            job_id,
            now,
            self.lives_s * 1000,
            payload.decode(),
            keys.wake(self.message.destination),
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
) -> CommitResult:
    """`committed` by this call; `duplicate` if the message was already committed; `refused`
    if job `job_id` had finished (only `dropped` ran). Downstream messages stay queued for
    up to `message_ttl_s`, their job record's lifetime."""
    script = redis.register_script(_SCRIPT)
    recorded, if_refused = json.dumps(commands), json.dumps(dropped or [])
    # last, as each downstream message is stamped sent as it is serialised
    jobs = [QueuedJob(message, message_ttl_s).fields() for message in downstream or []]
    args = [ttl_s, recorded, json.dumps(jobs), keys.WAKE_TOKENS_MAX, if_refused]
    result = await script(keys=[done_key, keys.job(job_id)], args=args)
    return _RESULTS[int(result)]
