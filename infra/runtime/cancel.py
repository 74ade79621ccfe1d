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

from postel.infra.store.events import Event, EventLog
from postel.infra.store.jobs import JobStore
from postel.messages import JobFailed, ids
from postel.messages.errors import Refused
from redis.asyncio import Redis


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
    status, failure = await jobs.finish_unless_finished(job_id, commands)
    if status is not None:
        raise JobAlreadyFinished(job_id, status, failure)
