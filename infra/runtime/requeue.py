"""Requeue: run a failed job's request again as a new job (`postel` API and dashboard).

The clone is submitted as any job is (`submit_job`), under a new id, and the two records
point at each other: the new one's `requeued_from` names the failed job, the failed one's
`requeued_as` the newest clone. Only a failed job (cancelled included) is requeued: a running
one would run twice, a completed one has its answer.
"""

from __future__ import annotations

from arq.connections import ArqRedis
from postel.infra.runtime.submit import submit_job
from postel.infra.store.events import EventLog
from postel.infra.store.jobs import JobStore
from postel.messages.errors import Refused
from pydantic import BaseModel


class RequeueRefused(Refused):
    """The job is not one to requeue; the message says why."""


class Requeued(BaseModel):
    job_id: str
    requeued_from: str
    url: str


async def requeue_job(
    pool: ArqRedis, events: EventLog, jobs: JobStore, job_id: str, *, by: str
) -> Requeued:
    """Submit the failed job's request again (JobNotFound, RequeueRefused)."""
    record = await jobs.get(job_id)
    if record.status != "failed":
        raise RequeueRefused(f"job {job_id} is {record.status}; only a failed job is requeued")
    if record.request is None:
        raise RequeueRefused(f"job {job_id} has no request to run again")
    new_id = await submit_job(pool, events, jobs, record.request, source=by)
    # two records, each written whole by its own command (no MULTI: on a cluster the two
    # jobs are in different lanes)
    async with pool.pipeline(transaction=False) as pipe:
        pipe.hset(jobs.keyspace.job(new_id), "requeued_from", job_id)
        pipe.hset(jobs.keyspace.job(job_id), "requeued_as", new_id)
        await pipe.execute()
    return Requeued(job_id=new_id, requeued_from=job_id, url=f"/jobs/{new_id}")
