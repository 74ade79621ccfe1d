"""Cancelling a job: its record becomes `failed` with failure `cancelled`, in one Lua script
that first checks the job has not finished, together with the terminal `job.failed` event
and the results-stream entry (so followers and waiters see the end at once), and its
completion callback made due if it asked for one (infra/runtime/callbacks.py).

From then on no message of the job is handled: a message taken from a queue is dropped
(`dropped` event), and a handler that was running has its commit refused
(infra/store/commit.py). Cancelling a finished job (completed, failed or already cancelled)
raises JobAlreadyFinished; the CLI exits with 6, the HTTP API answers 409.
"""

from __future__ import annotations

import json

from postel.infra.store.events import Event, EventLog
from postel.infra.store.jobs import JobNotFound, JobStore
from postel.messages import JobFailed, ids, utc_now
from postel.messages.errors import Refused
from redis.asyncio import Redis

_SCRIPT = """
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
if redis.call('HEXISTS', KEYS[1], 'callback_url') == 1 then
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
  redis.call('LPUSH', KEYS[3], '1')
  redis.call('LTRIM', KEYS[3], 0, 0)
end
return {1, ''}
"""


class JobAlreadyFinished(Refused):
    """The job has finished (completed, failed or cancelled): there is nothing to cancel."""

    def __init__(self, job_id: str, status: str, failure: str) -> None:
        self.job_id = job_id
        self.status = status
        self.failure = failure
        how = f"{status} ({failure})" if failure else status
        super().__init__(f"job {job_id} has already finished: {how}; nothing to cancel")


async def cancel_job(
    redis: Redis, events: EventLog, job_id: str, *, by: str, reason: str = ""
) -> None:
    """Cancel a queued or running job; `by` names who asked (cli, web, client)."""
    error = f"cancelled by {by}" + (f": {reason}" if reason else "")
    final = JobFailed(
        job_id=job_id,
        message_id=ids.message_id(job_id, ids.CANCELLED),
        status="cancelled",
        error=error,
    )
    event = Event(
        job_id=job_id,
        message_id=final.message_id,
        type=final.type,
        worker=by,
        stage="done",
        status="failed",
        error=error,
    )
    jobs = JobStore(redis, events.keyspace, events.job_ttl_s)
    commands = [
        jobs.finished_command(job_id, error=error, failure="cancelled"),
        *events.commands(event),
        jobs.publish_command(final, events.maxlen),
    ]
    script = redis.register_script(_SCRIPT)
    keyspace = events.keyspace
    lane = keyspace.lane_of(job_id)
    outcome, detail = await script(
        keys=[keyspace.job(job_id), keyspace.callbacks(lane), keyspace.callbacks_wake(lane)],
        args=[json.dumps(commands), int(utc_now().timestamp() * 1000), job_id],
    )
    if outcome == 0:
        raise JobNotFound(f"no such job {job_id!r}")
    if outcome == 2:
        status, _, failure = (detail.decode() if isinstance(detail, bytes) else detail).partition(
            ":"
        )
        raise JobAlreadyFinished(job_id, status, failure)
