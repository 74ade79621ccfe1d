"""Requeue: run a failed job's request again as a new job (`postel` API and dashboard).

The clone is submitted as any job is (`submit_job`), under a new id, and the two records
point at each other: the new one's `requeued_from` names the failed job, the failed one's
`requeued_as` its requeue. Only a failed job (cancelled included) is requeued: a running
one would run twice, a completed one has its answer.

One live requeue at a time: while the job `requeued_as` names is queued or running, another
requeue is refused (RequeueRefused, naming it). The failed record is claimed before the
clone is submitted, by a compare-and-set on its `requeued_as` (one key, so one slot on a
cluster): of two requeues at once, one claims it and the other is refused. A claim whose
submission fails is given back.

A caller's idempotency key (the API's `Idempotency-Key` header, the page's form) is kept
with the claim: the same key again answers the same requeue, live or finished, and
submits nothing.
"""

from __future__ import annotations

from arq.connections import ArqRedis
from postel.infra.runtime.submit import submit_job
from postel.infra.store.events import EventLog
from postel.infra.store.jobs import JobNotFound, JobRecord, JobStore
from postel.messages import new_job_id
from postel.messages.errors import Refused
from pydantic import BaseModel

REQUEUE_KEY = "requeue_key"
"""The field of a failed job's record holding the idempotency key of its requeue."""
IDEMPOTENCY_KEY_CHARS = 200

# KEYS: the failed job's record. ARGV: the requeue it names now ('' for none), the one it
# is to name ('' to name none), the idempotency key of that one ('' for none). Returns 1, or
# the requeue it names and that one's key when it was not the one expected.
_CLAIM = """
local current = redis.call('HGET', KEYS[1], 'requeued_as') or ''
if current ~= ARGV[1] then
  return {current, redis.call('HGET', KEYS[1], 'requeue_key') or ''}
end
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], 'requeued_as', 'requeue_key')
else
  redis.call('HSET', KEYS[1], 'requeued_as', ARGV[2], 'requeue_key', ARGV[3])
end
return 1
"""


class RequeueRefused(Refused):
    """The job is not one to requeue; the message says why."""


class RequeueLive(RequeueRefused):
    """The job has a requeue that is queued or running."""

    def __init__(self, job_id: str, requeue: str) -> None:
        self.requeue = requeue
        super().__init__(f"job {job_id} has a live requeue already: job {requeue}")


class Requeued(BaseModel):
    job_id: str
    requeued_from: str
    url: str


def _requeued(new_id: str, job_id: str) -> Requeued:
    return Requeued(job_id=new_id, requeued_from=job_id, url=f"/jobs/{new_id}")


async def live_requeue(jobs: JobStore, record: JobRecord) -> str | None:
    """The job's requeue while it is queued or running (the check `requeue_job` makes, and
    the job's page, which offers Requeue only without one); None otherwise."""
    if record.requeued_as is None:
        return None
    try:
        return None if (await jobs.get(record.requeued_as)).finished else record.requeued_as
    except JobNotFound:  # expired, or a claim whose submission failed
        return None


async def requeue_job(
    pool: ArqRedis,
    events: EventLog,
    jobs: JobStore,
    job_id: str,
    *,
    by: str,
    idempotency_key: str | None = None,
) -> Requeued:
    """Submit the failed job's request again (JobNotFound, RequeueRefused, GraphNotFound);
    with the key of an earlier requeue of this job, that requeue."""
    record = await jobs.get(job_id)
    key = jobs.keyspace.job(job_id)
    if idempotency_key and record.requeued_as:
        kept = await pool.hget(key, REQUEUE_KEY)
        if kept is not None and kept.decode() == idempotency_key:
            return _requeued(record.requeued_as, job_id)
    if record.status != "failed":
        raise RequeueRefused(f"job {job_id} is {record.status}; only a failed job is requeued")
    if record.request is None:
        raise RequeueRefused(f"job {job_id} has no request to run again")
    live = await live_requeue(jobs, record)
    if live is not None:
        raise RequeueLive(job_id, live)
    earlier = record.requeued_as
    new_id = new_job_id()
    claim = pool.register_script(_CLAIM)
    claimed = await claim(keys=[key], args=[earlier or "", new_id, idempotency_key or ""])
    if claimed != 1:  # another requeue claimed it meanwhile: this one's, or a live one
        other, other_key = (value.decode() for value in claimed)
        if idempotency_key and other_key == idempotency_key:
            return _requeued(other, job_id)
        if not other:
            raise RequeueRefused(f"job {job_id} changed meanwhile; try again")
        raise RequeueLive(job_id, other)
    try:
        await submit_job(pool, events, jobs, record.request, new_id, source=by)
    except BaseException:
        await claim(keys=[key], args=[new_id, earlier or "", ""])
        raise
    await pool.hset(jobs.keyspace.job(new_id), "requeued_from", job_id)
    return _requeued(new_id, job_id)
