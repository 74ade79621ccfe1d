"""The two stores every job-facing process opens from its settings, built in one place: the
event log (system and per-job streams) and the job records."""

from __future__ import annotations

from typing import NamedTuple, Protocol

from postel.infra.store.events import EventLog
from postel.infra.store.jobs import JobStore
from postel.infra.store.keys import Keyspace
from redis.asyncio import Redis


class StoreLimits(Protocol):
    """The settings the stores read (infra.runtime.settings.Settings has them)."""

    @property
    def events_maxlen(self) -> int: ...
    @property
    def job_events_maxlen(self) -> int: ...
    @property
    def job_ttl_s(self) -> int: ...


class JobStores(NamedTuple):
    events: EventLog
    jobs: JobStore


def job_stores(redis: Redis, keyspace: Keyspace, limits: StoreLimits) -> JobStores:
    """The event log and the job store over `redis`, naming keys by `keyspace`, sized and
    aged by `limits`."""
    return JobStores(
        events=EventLog(
            redis, keyspace, limits.events_maxlen, limits.job_events_maxlen, limits.job_ttl_s
        ),
        jobs=JobStore(redis, keyspace, limits.job_ttl_s),
    )
