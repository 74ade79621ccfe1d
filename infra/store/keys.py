"""Every Redis key and stream name postel uses, in one place: the `Keyspace`.

Lanes (Redis Cluster). A script must touch keys of one hash slot only, and postel's commit
writes a job's record, its events, the next queue, a wake-up list and the shared streams in
one script. So the keyspace is cut into lanes: a lane is a hash tag, every key of a job
carries its lane's tag, and each lane has its own queues, wake-up lists, event, results and
dead-letter streams, jobs index and tallies (readers merge the lanes). A job's lane is a
stable hash of its id (`Keyspace.lane_of`); the arq job id of its messages carries the tag
too (`Keyspace.arq_id`), so arq's own keys (`arq:job:<id>`...) fall in the same slot.

On one Redis there is one lane, `""`, and every key has the name it always had. On a cluster
there are `CLUSTER_LANES` lanes unless the URL's `?lanes=N` says otherwise, `{p0}`..: a
fixed count, so a job's lane never changes when shards are added or moved.

The layout is a value, never process state: a `Keyspace` is made from a Redis URL
(`keyspace_of`, infra/store/connect.py) and handed to everything that names a key (the
`Runtime`, the `Client`, each store object), so two clients of different layouts work side
by side in one process. A new key is one method here, named for what the key holds.

Every key starts with `postel:`. One deployment owns one Redis database: a second one on the
same server uses another database (the URL's `/db`) or server, not another prefix, since
arq's own keys (`arq:job:<message id>`) carry no prefix of postel's and two deployments
sharing them would see each other's messages.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from functools import cached_property

from postel.messages.ids import job_of

PREFIX = "postel"

CLUSTER_LANES = 16
"""The lanes of a cluster unless its URL says otherwise (`redis+cluster://...?lanes=N`): more
lanes than shards, so every shard holds some, and few enough that a worker's per-lane waits
stay cheap."""

WAKE_TOKENS_MAX = 64
"""A wake-up list keeps at most this many tokens: a burst wakes at most that many workers."""


def split_lane(tagged: str) -> tuple[str, str]:
    """(lane, rest) of an id that starts with its lane's tag (an arq job id, a dead letter's
    id on a cluster); `("", tagged)` for an id without one."""
    if tagged.startswith("{") and "}" in tagged:
        end = tagged.index("}") + 1
        return tagged[:end], tagged[end:]
    return "", tagged


def message_of(arq_job: str) -> str:
    """The message id an arq job id names (`Keyspace.arq_id` undone)."""
    return split_lane(arq_job)[1]


def lane_of_arq(arq_job: str) -> str:
    """The lane of a queued arq job (its tag), `""` on one Redis."""
    return split_lane(arq_job)[0]


def _in(lane: str, name: str) -> str:
    return f"{PREFIX}:{lane}:{name}" if lane else f"{PREFIX}:{name}"


@dataclass(frozen=True)
class Keyspace:
    """The names of postel's keys in one layout: one Redis (`Keyspace()`, one lane) or a
    cluster of `lane_count` lanes."""

    lane_count: int = 1

    def __post_init__(self) -> None:
        if self.lane_count < 1:
            raise ValueError(f"a keyspace has at least one lane, not {self.lane_count}")

    @property
    def clustered(self) -> bool:
        return self.lane_count > 1

    @cached_property
    def _lanes(self) -> tuple[str, ...]:
        if self.lane_count == 1:
            return ("",)
        return tuple(f"{{p{index}}}" for index in range(self.lane_count))

    def lanes(self) -> list[str]:
        """Every lane's tag: `[""]` on one Redis."""
        return list(self._lanes)

    def lane_of(self, job_id: str) -> str:
        """The lane (hash tag) of job `job_id`'s keys."""
        if self.lane_count == 1:
            return ""
        return self._lanes[zlib.crc32(job_id.encode()) % self.lane_count]

    def arq_id(self, message_id: str) -> str:
        """The arq job id of a queued message: its id, after its lane's tag on a cluster."""
        return self.lane_of(job_of(message_id)) + message_id

    # a lane's streams and indexes

    def events(self, lane: str) -> str:
        """A lane's stream of every job's events."""
        return _in(lane, "events")

    def dead_letters(self, lane: str) -> str:
        return _in(lane, "dead")

    def results(self, lane: str) -> str:
        """A lane's stream of finished jobs (Client.wait_all)."""
        return _in(lane, "results")

    def jobs(self, lane: str) -> str:
        """A lane's job ids, scored by creation time in ms: the dashboard's paged,
        newest-first list (entries older than the job TTL are trimmed when a job is
        created)."""
        return _in(lane, "jobs")

    def tally_handled(self, lane: str) -> str:
        """Messages handled per `<instance>/<worker>` (infra/store/events.py)."""
        return _in(lane, "tally:handled")

    def tally_last(self, lane: str) -> str:
        """When each `<instance>/<worker>` last handled a message."""
        return _in(lane, "tally:last")

    def callbacks(self, lane: str) -> str:
        """A lane's finished jobs whose completion callback is due, scored by when its next
        attempt is (infra/runtime/callbacks.py)."""
        return _in(lane, "callbacks")

    def callbacks_wake(self, lane: str) -> str:
        """A token per callback made due, waking a sender (infra/runtime/callbacks.py)."""
        return _in(lane, "wake:callbacks")

    def queue(self, worker: str, lane: str = "") -> str:
        return _in(lane, f"q:{worker}")

    def turns(self, worker: str, lane: str = "") -> str:
        """The worker kind's ready messages per `<class>|<tenant>` in its queue, each at
        most the tenant window (infra/store/turns.py)."""
        return _in(lane, f"turns:{worker}")

    def held_turns(self, worker: str, lane: str = "") -> str:
        """The `<class>|<tenant>`s whose messages wait in a held list (infra/store/turns.py)."""
        return _in(lane, f"held:{worker}")

    def held_prefix(self, worker: str, lane: str = "") -> str:
        """What a held list's key is, less its `<class>|<tenant>` (the take script builds
        it)."""
        return _in(lane, f"held:{worker}:")

    def held(self, worker: str, lane: str, turn: str) -> str:
        """The messages of one `<class>|<tenant>` waiting, in order, for a turn in the
        worker kind's queue (infra/store/turns.py)."""
        return self.held_prefix(worker, lane) + turn

    def running_prefix(self, worker: str, lane: str = "") -> str:
        """What the key of a tenant's running messages in the worker kind's queue is, less
        the tenant (the take script builds it; infra/store/turns.py, the cap in flight)."""
        return _in(lane, f"running:{worker}:")

    def in_flight_prefix(self, lane: str = "") -> str:
        """What the key of a tenant's jobs in flight in `lane` is, less the tenant (the
        scripts build it from the record's or the message's tenant)."""
        return _in(lane, "inflight:")

    def in_flight(self, lane: str, tenant: str) -> str:
        """The ids of a tenant's jobs in flight in `lane`: taken once and not yet ended, in
        every stage (infra/store/turns.py, fair share)."""
        return self.in_flight_prefix(lane) + tenant

    def wake(self, worker: str, lane: str = "") -> str:
        """The worker kind's wake-up list: one token per queued message
        (infra/runtime/wake.py)."""
        return _in(lane, f"wake:{worker}")

    # keys of the whole deployment, in no lane

    @property
    def ingress(self) -> str:
        """One stream on a cluster too (its commands touch it alone): producers need not
        know lanes."""
        return f"{PREFIX}:ingress"

    @property
    def ingress_group(self) -> str:
        return f"{PREFIX}-ingress"

    @property
    def graphs(self) -> str:
        """The names of the registered graphs (infra/store/graphs.py)."""
        return f"{PREFIX}:graphs"

    def graph(self, name: str) -> str:
        return f"{self.graphs}:{name}"

    def graph_chunk(self, name: str, version: int, index: int) -> str:
        """Chunk `index` of a graph version's store (infra/store/graph_store.py); no lane:
        on a cluster a big store's chunks spread over the shards."""
        return f"{self.graph(name)}:{version}:{index}"

    @property
    def workers(self) -> str:
        """The instances that announced a presence (infra/runtime/presence.py)."""
        return f"{PREFIX}:workers"

    def worker(self, instance: str) -> str:
        """A live worker process's presence (infra/runtime/presence.py)."""
        return f"{self.workers}:{instance}"

    def _route(self, route: str) -> str:
        # one script reads both keys of a route: on a cluster they share the route's own tag
        return f"{PREFIX}:route:{{{route}}}" if self.clustered else f"{PREFIX}:route:{route}"

    def route_budget(self, route: str) -> str:
        """A model route's shared buckets and pause (infra/store/budgets.py)."""
        return f"{self._route(route)}:budget"

    def route_slots(self, route: str) -> str:
        """A model route's concurrent calls, each with its lease (infra/store/budgets.py)."""
        return f"{self._route(route)}:slots"

    # a job's keys, in its lane

    def job(self, job_id: str) -> str:
        return self.job_prefix(self.lane_of(job_id)) + job_id

    def job_prefix(self, lane: str) -> str:
        """What a job record's key is in `lane`, less the job id (the take script reads
        records)."""
        return _in(lane, "job:")

    def submission(self, job_id: str) -> str:
        """Set with the job's record and first message, atomically; a second submission of
        the same id sees it."""
        return _in(self.lane_of(job_id), f"submitted:{job_id}")

    def job_events(self, job_id: str) -> str:
        return _in(self.lane_of(job_id), f"events:{job_id}")

    def job_calls(self, job_id: str) -> str:
        """The job's model calls, in commit order (infra/store/calls.py); expires with the
        record."""
        return _in(self.lane_of(job_id), f"calls:{job_id}")

    def done(self, message_id: str) -> str:
        """Set once a message's handling has been committed; a re-run sees it and stops."""
        return self.done_prefix(self.lane_of(job_of(message_id))) + message_id

    def done_prefix(self, lane: str) -> str:
        """What a done marker's key is in `lane`, less the message id (scripts build
        markers)."""
        return _in(lane, "done:")

    def _job_scoped(self, job_id: str, *parts: str) -> str:
        return ":".join((self.job(job_id), *parts))

    def loop_anchor(self, job_id: str, task_id: str) -> str:
        """The generator's anchor message for a task: what every continuation resumes
        from."""
        return self._job_scoped(job_id, "gen", task_id, "anchor")

    def loop_state(self, job_id: str, task_id: str, repair: int) -> str:
        """The AI loop's accumulated document for one (task, repair)."""
        return self._job_scoped(job_id, "gen", task_id, str(repair), "state")

    def gasl_state(self, job_id: str, task_index: int, round_: int) -> str:
        """The GASL state a task's round left (the next round starts from it)."""
        return self._job_scoped(job_id, "gasl", str(task_index), "state", str(round_))

    def gasl_rounds(self, job_id: str) -> str:
        """Every GASL round's plan and records for a job (export and replay read them)."""
        return self._job_scoped(job_id, "gasl", "rounds")
