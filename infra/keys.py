"""Every Redis key and stream name postel uses, in one place."""

from __future__ import annotations

PREFIX = "postel"

EVENTS = f"{PREFIX}:events"
DEAD_LETTER = f"{PREFIX}:dead"
INGRESS = f"{PREFIX}:ingress"
INGRESS_GROUP = f"{PREFIX}-ingress"
RESULTS = f"{PREFIX}:results"
GRAPHS = f"{PREFIX}:graphs"

JOBS = f"{PREFIX}:jobs"
"""Every job id, scored by its creation time in ms: the dashboard's paged, newest-first list
(entries older than the job TTL are trimmed when a job is created)."""

WORKERS = f"{PREFIX}:workers"
"""The instances that announced a presence (infra/presence.py)."""

TALLY_HANDLED = f"{PREFIX}:tally:handled"
"""Messages handled per `<instance>/<worker>` (infra/events.py)."""

TALLY_LAST = f"{PREFIX}:tally:last"
"""When each `<instance>/<worker>` last handled a message."""


def queue(worker: str) -> str:
    return f"{PREFIX}:q:{worker}"


def wake(worker: str) -> str:
    """The worker kind's wake-up list: one token per queued message (infra/wake.py)."""
    return f"{PREFIX}:wake:{worker}"


def job(job_id: str) -> str:
    return f"{PREFIX}:job:{job_id}"


def submission(job_id: str) -> str:
    """Set with the job's record and first message, atomically; a second submission of the
    same id sees it."""
    return f"{PREFIX}:submitted:{job_id}"


def job_events(job_id: str) -> str:
    return f"{PREFIX}:events:{job_id}"


def job_calls(job_id: str) -> str:
    """The job's model calls, in commit order (infra/calls.py); expires with the record."""
    return f"{PREFIX}:calls:{job_id}"


def route_budget(route: str) -> str:
    """A model route's shared buckets and pause (infra/budgets.py)."""
    return f"{PREFIX}:route:{route}:budget"


def route_slots(route: str) -> str:
    """A model route's concurrent calls, each with its lease (infra/budgets.py)."""
    return f"{PREFIX}:route:{route}:slots"


def done(message_id: str) -> str:
    """Set once a message's handling has been committed; a re-run sees it and stops."""
    return f"{PREFIX}:done:{message_id}"


def job_scoped(job_id: str, *parts: str) -> str:
    """Per-job state of a service (loop documents, GASL state), under the job's prefix."""
    return ":".join((PREFIX, "job", job_id, *parts))


def worker(instance: str) -> str:
    """A live worker process's presence (infra/presence.py)."""
    return f"{PREFIX}:workers:{instance}"


def graph(name: str) -> str:
    return f"{GRAPHS}:{name}"
