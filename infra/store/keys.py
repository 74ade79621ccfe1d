"""Every Redis key and stream name postel uses, in one place.

Lanes (Redis Cluster). A script must touch keys of one hash slot only, and postel's commit
writes a job's record, its events, the next queue, a wake-up list and the shared streams in
one script. So the keyspace is cut into lanes: a lane is a hash tag, every key of a job
carries its lane's tag, and each lane has its own queues, wake-up lists, event, results and
dead-letter streams, jobs index and tallies (readers merge the lanes). A job's lane is a
stable hash of its id (`lane_of`); the arq job id of its messages carries the tag too
(`arq_id`), so arq's own keys (`arq:job:<id>`...) fall in the same slot.

On one Redis there is one lane, `""`, and every key has the name it always had. On a cluster
there are `CLUSTER_LANES` lanes unless the URL's `?lanes=N` says otherwise, `{p0}`..: a
fixed count, so a job's lane never changes when shards are added or moved. The process's
layout is set once, by connecting (infra/store/connect.py): `use_lanes`.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from postel.messages.ids import job_of

PREFIX = "postel"

CLUSTER_LANES = 16
"""The lanes of a cluster unless its URL says otherwise (`redis+cluster://...?lanes=N`): more
lanes than shards, so every shard holds some, and few enough that a worker's per-lane waits
stay cheap."""


@dataclass
class _Layout:
    lanes: int = 1


_layout = _Layout()


def use_lanes(count: int) -> None:
    """One lane (one Redis) or `count` (a cluster) for every key this process names."""
    if count < 1:
        raise ValueError(f"a keyspace has at least one lane, not {count}")
    _layout.lanes = count


def lanes() -> list[str]:
    """Every lane's tag: `[""]` on one Redis."""
    if _layout.lanes == 1:
        return [""]
    return [f"{{p{index}}}" for index in range(_layout.lanes)]


def lane_of(job_id: str) -> str:
    """The lane (hash tag) of job `job_id`'s keys."""
    if _layout.lanes == 1:
        return ""
    return f"{{p{zlib.crc32(job_id.encode()) % _layout.lanes}}}"


def arq_id(message_id: str) -> str:
    """The arq job id of a queued message: its id, after its lane's tag on a cluster."""
    return lane_of(job_of(message_id)) + message_id


def split_lane(tagged: str) -> tuple[str, str]:
    """(lane, rest) of an id that starts with its lane's tag (an arq job id, a dead letter's
    id on a cluster); `("", tagged)` for an id without one."""
    if tagged.startswith("{") and "}" in tagged:
        end = tagged.index("}") + 1
        return tagged[:end], tagged[end:]
    return "", tagged


def message_of(arq_job: str) -> str:
    """The message id an arq job id names (`arq_id` undone)."""
    return split_lane(arq_job)[1]


def lane_of_arq(arq_job: str) -> str:
    """The lane of a queued arq job (its tag), `""` on one Redis."""
    return split_lane(arq_job)[0]


def _in(lane: str, name: str) -> str:
    return f"{PREFIX}:{lane}:{name}" if lane else f"{PREFIX}:{name}"


def events(lane: str) -> str:
    """A lane's stream of every job's events."""
    return _in(lane, "events")


def dead_letters(lane: str) -> str:
    return _in(lane, "dead")


def results(lane: str) -> str:
    """A lane's stream of finished jobs (Client.wait_all)."""
    return _in(lane, "results")


def jobs(lane: str) -> str:
    """A lane's job ids, scored by creation time in ms: the dashboard's paged, newest-first
    list (entries older than the job TTL are trimmed when a job is created)."""
    return _in(lane, "jobs")


def tally_handled(lane: str) -> str:
    """Messages handled per `<instance>/<worker>` (infra/store/events.py)."""
    return _in(lane, "tally:handled")


def tally_last(lane: str) -> str:
    """When each `<instance>/<worker>` last handled a message."""
    return _in(lane, "tally:last")


EVENTS = events("")
DEAD_LETTER = dead_letters("")
RESULTS = results("")
JOBS = jobs("")
TALLY_HANDLED = tally_handled("")
TALLY_LAST = tally_last("")

INGRESS = f"{PREFIX}:ingress"
"""One stream on a cluster too (its commands touch it alone): producers need not know lanes."""
INGRESS_GROUP = f"{PREFIX}-ingress"
GRAPHS = f"{PREFIX}:graphs"

WORKERS = f"{PREFIX}:workers"
"""The instances that announced a presence (infra/runtime/presence.py)."""


def queue(worker: str, lane: str = "") -> str:
    return _in(lane, f"q:{worker}")


def wake(worker: str, lane: str = "") -> str:
    """The worker kind's wake-up list: one token per queued message (infra/runtime/wake.py)."""
    return _in(lane, f"wake:{worker}")


WAKE_TOKENS_MAX = 64
"""A wake-up list keeps at most this many tokens: a burst wakes at most that many workers."""


def job(job_id: str) -> str:
    return job_prefix(lane_of(job_id)) + job_id


def job_prefix(lane: str) -> str:
    """What a job record's key is in `lane`, less the job id (the take script reads records)."""
    return _in(lane, "job:")


def submission(job_id: str) -> str:
    """Set with the job's record and first message, atomically; a second submission of the
    same id sees it."""
    return _in(lane_of(job_id), f"submitted:{job_id}")


def job_events(job_id: str) -> str:
    return _in(lane_of(job_id), f"events:{job_id}")


def job_calls(job_id: str) -> str:
    """The job's model calls, in commit order (infra/store/calls.py); expires with the record."""
    return _in(lane_of(job_id), f"calls:{job_id}")


def _route(route: str) -> str:
    # one script reads both keys of a route: on a cluster they share the route's own tag
    return f"{PREFIX}:route:{{{route}}}" if _layout.lanes > 1 else f"{PREFIX}:route:{route}"


def route_budget(route: str) -> str:
    """A model route's shared buckets and pause (infra/store/budgets.py)."""
    return f"{_route(route)}:budget"


def route_slots(route: str) -> str:
    """A model route's concurrent calls, each with its lease (infra/store/budgets.py)."""
    return f"{_route(route)}:slots"


def done(message_id: str) -> str:
    """Set once a message's handling has been committed; a re-run sees it and stops."""
    return done_prefix(lane_of(job_of(message_id))) + message_id


def done_prefix(lane: str) -> str:
    """What a done marker's key is in `lane`, less the message id (scripts build markers)."""
    return _in(lane, "done:")


def _job_scoped(job_id: str, *parts: str) -> str:
    return ":".join((job(job_id), *parts))


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
