"""Submitting a job: the job record, the first message on the intent queue and the
`submitted` event, written in one atomic step (the commit script of infra/store/commit.py).

Submission is idempotent by job id. The same id with the same request is a no-op that
returns the existing job (a producer may retry after a crash or a timeout without running
the job twice); the same id with a different request raises JobConflict. A crash at any
point leaves either nothing (the retry submits) or the whole job (the retry is a no-op).
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from arq.connections import ArqRedis
from postel.infra.runtime.tracing import submit_span, with_trace
from postel.infra.store.commit import commit_once
from postel.infra.store.events import Event, EventLog
from postel.infra.store.jobs import JobStore
from postel.messages import (
    CarriesJob,
    Envelope,
    JobRequest,
    JobSubmitted,
    ids,
    new_job_id,
    utc_now,
)
from postel.messages.errors import Conflict, GraphNotFound, InvalidInput
from postel.messages.job import DEFAULT_PRIORITY, DEFAULT_TENANT, Priority
from postel.services.validation import check_desired_type

INGRESS_ID_PREFIX = "ingress-"
"""Ids of ingress entries that name no job_id; reserved, so no producer can take one."""


def ingress_job_id(entry_id: str) -> str:
    """The job id of an ingress entry that names none: `ingress-` and the entry id with its
    `-` written `_` (`1700000000000-0` -> `ingress-1700000000000_0`)."""
    return f"{INGRESS_ID_PREFIX}{entry_id.replace('-', '_')}"


class ReservedJobId(InvalidInput):
    """A job id in the range ingress ids are made from; any other id is free to use."""


class JobConflict(Conflict, ValueError):
    """The job id is taken by a job with a different request."""


class Submission:
    """A job's first message and everything written with it."""

    def __init__(self, first: Envelope) -> None:
        if not isinstance(first, JobSubmitted | CarriesJob):
            raise TypeError(f"{first.type} carries no job request to record")
        self.first = first
        self.request: JobRequest = first.request

    @property
    def fingerprint(self) -> str:
        return request_fingerprint(self.request)


def request_fingerprint(request: JobRequest) -> str:
    """What makes two submissions of one job id the same job."""
    return hashlib.sha256(request.model_dump_json().encode()).hexdigest()


async def submit_job(
    pool: ArqRedis,
    events: EventLog,
    jobs: JobStore,
    request: JobRequest,
    job_id: str | None = None,
    *,
    source: str = "client",
    priority: Priority | None = None,
    tenant: str | None = None,
) -> str:
    """Submit a job and return its id (see the module's note on idempotence). A job about a
    graph that is not registered is refused (GraphNotFound), and a desired type holding a
    malformed or unsupported JSON Schema (UnsupportedSchemaError), before anything is written
    or any model is called.

    `priority` and `tenant` are the way in's defaults (an ingress producer's, the API's):
    the request's own options win, and `normal` and `default` are the last resort. A job
    with `not_before` or `delay_s` is accepted now and falls due then."""
    check_desired_type(request.desired_type)
    if job_id is not None and job_id.startswith(INGRESS_ID_PREFIX) and source != "ingress":
        raise ReservedJobId(f"job ids starting with {INGRESS_ID_PREFIX!r} are reserved for ingress")
    graphs = jobs.keyspace.graphs
    if request.graph is not None and not await pool.sismember(graphs, request.graph):
        known = sorted(name.decode() for name in await pool.smembers(graphs))
        raise GraphNotFound(request.graph, known)
    job_id = job_id or new_job_id()
    options = request.options
    now = utc_now()
    starts = options.not_before or (
        now + timedelta(seconds=options.delay_s) if options.delay_s else None
    )
    deadline_s = options.deadline_s
    with submit_span(job_id):
        message = JobSubmitted(
            job_id=job_id,
            message_id=ids.message_id(job_id, ids.SUBMITTED),
            request=request,
            priority=options.priority or priority or DEFAULT_PRIORITY,
            tenant=options.tenant or tenant or DEFAULT_TENANT,
            # a deferred job's deadline counts from when it starts
            deadline=max(now, starts or now) + timedelta(seconds=deadline_s)
            if deadline_s
            else None,
        )
        await start_job(pool, events, jobs, with_trace(message), source=source, not_before=starts)
    return job_id


async def start_job(
    pool: ArqRedis,
    events: EventLog,
    jobs: JobStore,
    first: Envelope,
    *,
    source: str,
    not_before: datetime | None = None,
) -> bool:
    """Write the job record, enqueue the job's first message (usually job.submitted; a
    benchmark may start a job at a later stage) and record `submitted`, atomically; the
    message falls due at `not_before` if given. True if this call created the job, False if
    the same job was already there."""
    submission = Submission(first)
    event = Event(
        job_id=first.job_id,
        message_id=first.message_id,
        type=first.type,
        worker=source,
        stage="submit",
        status="submitted",
    )
    commands = [
        *jobs.created_commands(
            first.job_id,
            submission.request,
            submission.fingerprint,
            priority=first.priority,
            tenant=first.tenant,
            not_before=not_before,
        ),
        *events.commands(event),
    ]
    created = await commit_once(
        pool,
        jobs.keyspace,
        jobs.keyspace.submission(first.job_id),
        jobs.ttl_s,
        commands,
        [first],
        job_id=first.job_id,
        message_ttl_s=jobs.ttl_s,
        record="create",
        due_ms=int(not_before.timestamp() * 1000) if not_before is not None else None,
    )
    if created == "committed":
        return True
    if await jobs.fingerprint(first.job_id) != submission.fingerprint:
        raise JobConflict(
            f"job {first.job_id!r} already exists with a different request; choose another job id"
        )
    return False
