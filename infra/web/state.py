"""What every request handler of the web server shares: the Redis pool, the names of its
keys and the stores."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from arq.connections import ArqRedis
from fastapi import Request
from postel.infra.runtime.settings import Settings
from postel.infra.store.events import EventLog
from postel.infra.store.job_stores import job_stores
from postel.infra.store.jobs import JobStore
from postel.infra.store.keys import Keyspace


@dataclass
class WebState:
    pool: ArqRedis
    keyspace: Keyspace
    settings: Settings
    events: EventLog
    jobs: JobStore
    token_required: bool = False
    streams_open: int = 0
    """Live event streams being served; at most settings.web_max_streams."""
    # set when the server stops, so open event streams end instead of holding it up
    stopping: asyncio.Event = field(default_factory=asyncio.Event)

    @classmethod
    def create(
        cls, pool: ArqRedis, keyspace: Keyspace, settings: Settings, *, token_required: bool
    ) -> WebState:
        events, jobs = job_stores(pool, keyspace, settings)
        return cls(
            pool=pool,
            keyspace=keyspace,
            settings=settings,
            events=events,
            jobs=jobs,
            token_required=token_required,
        )


def web_state(request: Request) -> WebState:
    state: WebState = request.app.state.web
    return state
