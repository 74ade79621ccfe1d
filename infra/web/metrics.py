"""Prometheus metrics of the whole system, read from Redis when scraped.

Every process of a fleet writes each hop to the stream `postel:events` and keeps its queues,
presence and dead letters in Redis, so one reader sees the whole system: `postel web` (and
`postel up`) serve `/metrics`, and a lone `postel worker --metrics-port P` serves the same on
its own port. At each scrape the reader
- follows `postel:events` from where its last scrape stopped and counts what it finds into
  counters and histograms: hops by stage and status, hop wait (the bus) and duration (the
  handler) by stage, jobs submitted and finished by status, model calls, tokens and time
  waited for the shared budget by stage (a stage's model route is its worker kind's,
  POSTEL_<WORKER>__LLM_*);
- reads the gauges as they are now: queue depth and the age of the oldest waiting message per
  queue, live worker processes by kind, dead letters, ingress entries pending.
Counters start from what the events stream still holds (POSTEL_EVENTS_MAXLEN entries) when
the reader starts, and then only grow: a restarted reader counts the retained history again,
which Prometheus sees as a counter reset.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from postel.infra.runtime.presence import live_workers
from postel.infra.runtime.settings import WORKER_NAMES
from postel.infra.store.events import HANDLED, Event
from postel.infra.store.keys import Keyspace
from postel.infra.store.lanes import LaneCursor, read_after
from postel.infra.web.system_view import TurnView, queues_view
from postel.messages import TERMINAL_TYPES
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from redis.asyncio import Redis
from starlette.responses import Response

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
EVENTS_PER_READ = 5_000
"""Entries read from the events stream per round trip while catching up."""

_WAIT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5, 30)
_DURATION_BUCKETS = (0.005, 0.025, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class _Gauges(Collector):
    """The gauges of the last refresh."""

    def __init__(self) -> None:
        self.families: list[GaugeMetricFamily] = []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield from self.families


class SystemMetrics:
    """The metrics of the system whose Redis is `redis` (its keys named by `keyspace`);
    `await refresh()`, then `render()`."""

    def __init__(self, redis: Redis, keyspace: Keyspace) -> None:
        self.redis = redis
        self.keyspace = keyspace
        self._reading = asyncio.Lock()
        self.registry = CollectorRegistry()
        self._after: LaneCursor | None = None  # once connected: the lanes are known then
        self._gauges = _Gauges()
        self.registry.register(self._gauges)
        self.hops = Counter(
            "postel_hops",
            "Hop transitions by stage and status",
            ["stage", "status"],
            registry=self.registry,
        )
        self.hop_wait = Histogram(
            "postel_hop_wait_seconds",
            "From the commit that sent a message to its handler starting (handled hops)",
            ["stage"],
            buckets=_WAIT_BUCKETS,
            registry=self.registry,
        )
        self.hop_duration = Histogram(
            "postel_hop_duration_seconds",
            "A handler's run, from receiving the message to committing its outcome",
            ["stage"],
            buckets=_DURATION_BUCKETS,
            registry=self.registry,
        )
        self.jobs = Counter(
            "postel_jobs",
            "Jobs submitted, completed and failed",
            ["status"],
            registry=self.registry,
        )
        self.model_calls = Counter(
            "postel_model_calls",
            "Model calls by stage (its worker kind's route)",
            ["stage"],
            registry=self.registry,
        )
        self.budget_wait = Counter(
            "postel_model_budget_wait_seconds",
            "Time model calls waited for their route's shared budget, by stage",
            ["stage"],
            registry=self.registry,
        )
        self.model_tokens = Counter(
            "postel_model_tokens",
            "Model tokens by stage and kind (prompt, completion)",
            ["stage", "kind"],
            registry=self.registry,
        )

    async def refresh(self) -> None:
        # two scrapes at once must not count the same entries twice
        async with self._reading:
            await self._read_events()
            self._gauges.families = await self._read_gauges()

    async def _read_events(self) -> None:
        if self._after is None:
            self._after = LaneCursor.parse("0-0", self.keyspace)
        while True:
            entries = await read_after(
                self.redis, self.keyspace.events, self._after, EVENTS_PER_READ
            )
            for entry in entries:
                self._count(Event.from_entry(entry.id, entry.fields))
            if len(entries) < EVENTS_PER_READ:
                break

    def _count(self, event: Event) -> None:
        self.hops.labels(event.worker, event.status).inc()
        if event.status == "submitted":
            self.jobs.labels("submitted").inc()
        elif event.type in TERMINAL_TYPES:
            self.jobs.labels(event.status).inc()
        elif event.status in HANDLED:
            # a handled hop's event carries its wait: a quick hop's `received` is not in the
            # lane's stream (infra/store/events.py)
            self.hop_wait.labels(event.worker).observe(event.wait_ms / 1000)
            self.hop_duration.labels(event.worker).observe(event.duration_ms / 1000)
            if event.budget_wait_ms:
                self.budget_wait.labels(event.worker).inc(event.budget_wait_ms / 1000)
            if event.llm_calls:
                self.model_calls.labels(event.worker).inc(event.llm_calls)
                self.model_tokens.labels(event.worker, "prompt").inc(event.prompt_tokens)
                self.model_tokens.labels(event.worker, "completion").inc(event.completion_tokens)

    async def _read_gauges(self) -> list[GaugeMetricFamily]:
        queues = await queues_view(self.redis, self.keyspace)
        depth = GaugeMetricFamily("postel_queue_depth", "Messages waiting", labels=["queue"])
        oldest = GaugeMetricFamily(
            "postel_queue_oldest_age_seconds",
            "Age of the oldest waiting message (0 when the queue is empty)",
            labels=["queue"],
        )
        for queue in queues.queues:
            depth.add_metric([queue.worker], queue.depth)
            oldest.add_metric([queue.worker], queue.oldest_wait_s or 0.0)
        by_turn = _by_turn(queues.turns)
        class_depth = GaugeMetricFamily(
            "postel_queue_class_depth",
            "Messages waiting per class and tenant (the busiest METRIC_TENANTS tenants; the "
            'rest as "other")',
            labels=["queue", "priority", "tenant"],
        )
        class_oldest = GaugeMetricFamily(
            "postel_queue_class_oldest_age_seconds",
            "Age of the oldest waiting message per class and tenant",
            labels=["queue", "priority", "tenant"],
        )
        for labels, (waiting, age) in by_turn.items():
            class_depth.add_metric(list(labels), waiting)
            class_oldest.add_metric(list(labels), age)
        live = GaugeMetricFamily(
            "postel_workers_live", "Live worker processes serving each kind", labels=["kind"]
        )
        processes = await live_workers(self.redis, self.keyspace)
        for kind in WORKER_NAMES:
            live.add_metric([kind], sum(kind in p.workers for p in processes))
        simple: list[tuple[str, str, Any]] = [
            ("postel_dead_letters", "Dead letters waiting (postel dead list)", queues.dead_letters),
            (
                "postel_ingress_pending",
                "Ingress entries read, not yet acknowledged",
                queues.ingress_pending,
            ),
            ("postel_jobs_known", "Job records kept (within the job TTL)", queues.jobs),
        ]
        return [
            depth,
            oldest,
            class_depth,
            class_oldest,
            live,
            *(GaugeMetricFamily(name, text, value=value) for name, text, value in simple),
        ]

    def render(self) -> bytes:
        return generate_latest(self.registry)

    async def scrape(self) -> Response:
        """What `/metrics` answers: the metrics refreshed now, in Prometheus' text format."""
        await self.refresh()
        return Response(self.render(), media_type=CONTENT_TYPE)


METRIC_TENANTS = 10
"""The tenants /metrics names, the busiest by messages waiting; the rest are "other", so a
deployment of many tenants keeps a bounded set of series."""
OTHER_TENANT = "other"


def _by_turn(turns: list[TurnView]) -> dict[tuple[str, str, str], tuple[int, float]]:
    """(queue, class, tenant) -> (messages waiting, oldest age), tenants beyond the busiest
    METRIC_TENANTS folded into "other"."""
    waiting: dict[str, int] = {}
    for turn in turns:
        waiting[turn.tenant] = waiting.get(turn.tenant, 0) + turn.depth
    named = set(sorted(waiting, key=lambda tenant: (-waiting[tenant], tenant))[:METRIC_TENANTS])
    rows: dict[tuple[str, str, str], tuple[int, float]] = {}
    for turn in turns:
        tenant = turn.tenant if turn.tenant in named else OTHER_TENANT
        key = (turn.worker, turn.priority, tenant)
        count, age = rows.get(key, (0, 0.0))
        rows[key] = (count + turn.depth, max(age, turn.oldest_wait_s or 0.0))
    return rows
