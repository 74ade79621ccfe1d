"""Submitting a job: the job record, the first message on the intent queue, one event."""

from __future__ import annotations

from datetime import timedelta

from arq.connections import ArqRedis
from postel.infra import keys
from postel.infra.actor import enqueue
from postel.infra.events import Event, EventLog
from postel.infra.jobs import JobStore
from postel.messages import CarriesJob, Envelope, JobRequest, JobSubmitted, new_job_id, utc_now


class JobExists(ValueError):
    pass


class UnknownGraph(LookupError):
    pass


async def submit_job(
    pool: ArqRedis,
    events: EventLog,
    jobs: JobStore,
    request: JobRequest,
    job_id: str | None = None,
    *,
    source: str = "client",
) -> str:
    """Submit a job and return its id. A caller-chosen id makes submission idempotent: the
    same id twice raises JobExists instead of running the job twice. A job about a graph
    that is not registered is refused (UnknownGraph) before anything is written."""
    if request.graph is not None and not await pool.sismember(keys.GRAPHS, request.graph):
        known = sorted(name.decode() for name in await pool.smembers(keys.GRAPHS))
        raise UnknownGraph(
            f"no graph named {request.graph!r} (known: {', '.join(known) or 'none'}); "
            "add it with `postel graph add NAME FILE`"
        )
    job_id = job_id or new_job_id()
    deadline_s = request.options.deadline_s
    message = JobSubmitted(
        job_id=job_id,
        message_id=f"{job_id}:submitted",
        request=request,
        deadline=utc_now() + timedelta(seconds=deadline_s) if deadline_s else None,
    )
    await start_job(pool, events, jobs, message, source=source)
    return message.job_id


async def start_job(
    pool: ArqRedis, events: EventLog, jobs: JobStore, first: Envelope, *, source: str
) -> None:
    """Create the job record and enqueue the job's first message (usually job.submitted;
    a benchmark may start a job at a later stage)."""
    if not isinstance(first, JobSubmitted | CarriesJob):
        raise TypeError(f"{first.type} carries no job request to record")
    if not await jobs.create(first.job_id, first.request):
        raise JobExists(f"job {first.job_id!r} already exists")
    await enqueue(pool, first)
    await events.record(
        Event(
            job_id=first.job_id,
            message_id=first.message_id,
            type=first.type,
            worker=source,
            stage="submit",
            status="submitted",
        )
    )
