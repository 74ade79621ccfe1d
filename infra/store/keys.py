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
"""The instances that announced a presence (infra/runtime/presence.py)."""

TALLY_HANDLED = f"{PREFIX}:tally:handled"
"""Messages handled per `<instance>/<worker>` (infra/store/events.py)."""

TALLY_LAST = f"{PREFIX}:tally:last"
"""When each `<instance>/<worker>` last handled a message."""


def queue(worker: str) -> str:
    return f"{PREFIX}:q:{worker}"


def wake(worker: str) -> str:
    """The worker kind's wake-up list: one token per queued message (infra/runtime/wake.py)."""
    return f"{PREFIX}:wake:{worker}"


WAKE_TOKENS_MAX = 64
"""A wake-up list keeps at most this many tokens: a burst wakes at most that many workers."""


def job(job_id: str) -> str:
    return f"{PREFIX}:job:{job_id}"


def submission(job_id: str) -> str:
    """Set with the job's record and first message, atomically; a second submission of the
    same id sees it."""
    return f"{PREFIX}:submitted:{job_id}"


def job_events(job_id: str) -> str:
    return f"{PREFIX}:events:{job_id}"


def job_calls(job_id: str) -> str:
    """The job's model calls, in commit order (infra/store/calls.py); expires with the record."""
    return f"{PREFIX}:calls:{job_id}"


def route_budget(route: str) -> str:
    """A model route's shared buckets and pause (infra/store/budgets.py)."""
    return f"{PREFIX}:route:{route}:budget"


def route_slots(route: str) -> str:
    """A model route's concurrent calls, each with its lease (infra/store/budgets.py)."""
    return f"{PREFIX}:route:{route}:slots"


def done(message_id: str) -> str:
    """Set once a message's handling has been committed; a re-run sees it and stops."""
    return f"{PREFIX}:done:{message_id}"


def _job_scoped(job_id: str, *parts: str) -> str:
    return ":".join((PREFIX, "job", job_id, *parts))


def loop_anchor(job_id: str, task_id: str) -> str:
    """The generator's anchor message for a task: what every continuation resumes from."""
    return _job_scoped(job_id, "gen", task_id, "anchor")


def loop_state(job_id: str, task_id: str, repair: int) -> str:
    """The AI loop's accumulated document for one (task, repair)."""
    return _job_scoped(job_id, "gen", task_id, str(repair), "state")


def gasl_state(job_id: str, task_index: int, round_: int) -> str:
    """The GASL state a task's round left (the next round starts from it)."""
    return _job_scoped(job_id, "gasl", str(task_index), "state", str(round_))


def gasl_rounds(job_id: str) -> str:
    """Every GASL round's plan and records for a job (export and replay read them)."""
    return _job_scoped(job_id, "gasl", "rounds")


def worker(instance: str) -> str:
    """A live worker process's presence (infra/runtime/presence.py)."""
    return f"{PREFIX}:workers:{instance}"


def graph(name: str) -> str:
    return f"{GRAPHS}:{name}"
