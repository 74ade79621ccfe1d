"""Running workers: arq Workers woken by pushes (infra/runtime/wake.py) for one or more worker kinds
in this process.

`postel up` runs all five (and the ingress consumer) next to an embedded Redis;
`postel worker NAME` runs one kind against POSTEL_REDIS_URL. Each arq Worker gets its own
connection pool (arq closes it on shutdown); handlers share one Runtime.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
from typing import Any

import structlog
from arq.connections import ArqRedis
from arq.worker import func
from postel.infra.runtime.actor import Actor, Runtime, WorkerSpec
from postel.infra.runtime.callbacks import CallbackSender
from postel.infra.runtime.ingress import run_ingress
from postel.infra.runtime.presence import announce, announcement, keep_announcing, withdraw
from postel.infra.runtime.settings import WORKER_NAMES, Settings
from postel.infra.runtime.tracing import configure_from_environment
from postel.infra.runtime.wake import PushWorker
from postel.infra.store.connect import (
    REDIS_UNAVAILABLE,
    arq_settings,
    keyspace_of,
    lane_settings,
)
from postel.infra.store.outage import RideOut
from postel.infra.store.wire import ARQ_FUNCTION, connect_arq, dumps, loads
from postel.services.urls import shown_url

log = structlog.get_logger(__name__)

KEEP_RESULT_S = 0
"""arq keeps no results: a result would hold a copy of the whole message for its lifetime, and
postel records every outcome itself (events, the job record, the results stream
`Keyspace.results`)."""


def load_worker(name: str) -> WorkerSpec:
    """The spec a `workers/<name>.py` module exports as WORKER, looked up by name."""
    if name not in WORKER_NAMES:
        raise ValueError(f"unknown worker {name!r}; expected one of {', '.join(WORKER_NAMES)}")
    spec: WorkerSpec = importlib.import_module(f"postel.workers.{name}").WORKER
    return spec


def build_arq_worker(
    spec: WorkerSpec, runtime: Runtime, url: str, concurrency: int, lane: str = ""
) -> PushWorker:
    """The arq worker of `spec` for one lane's queue (the only lane, `""`, on one Redis; on
    a cluster it connects to the lane's primary, wherever that is now)."""
    queue = runtime.settings.queue(spec.name)
    actor = Actor(spec, runtime)
    tries = actor.retries.arq_tries
    settings = runtime.settings
    return PushWorker(
        functions=[
            func(actor.handle_job, name=ARQ_FUNCTION, timeout=queue.job_timeout, max_tries=tries)
        ],
        queue_name=runtime.keyspace.queue(spec.name, lane),
        keyspace=runtime.keyspace,
        kind=spec.name,
        wake_key=runtime.keyspace.wake(spec.name, lane),
        fallback_poll_s=settings.fallback_poll_s,
        lease_s=settings.lease_s,
        give_up_s=settings.redis_give_up_s,
        unrunnable=actor.unrunnable,
        redis_settings=None if lane else arq_settings(url),
        locate=functools.partial(lane_settings, url, lane) if lane else None,
        lane=lane,
        tenant_cap=settings.tenant_max_in_flight,
        tenant_caps=settings.tenant_max_in_flight_by,
        job_timeout=queue.job_timeout,
        max_tries=tries,
        max_jobs=concurrency,
        keep_result=KEEP_RESULT_S,
        handle_signals=False,
        job_serializer=dumps,
        job_deserializer=loads,
        log_results=False,
    )


async def run_workers(
    names: list[str],
    settings: Settings,
    url: str,
    *,
    concurrency: int | None = None,
    ingress: bool = False,
    stop: asyncio.Event | None = None,
    ready: asyncio.Event | None = None,
    specs: list[WorkerSpec] | None = None,
    resources: dict[str, Any] | None = None,
) -> None:
    """Run until `stop` is set (or forever); then stop the workers and let running jobs end.

    `resources` pre-seeds the per-process objects workers would otherwise build in their
    setup (an embedding process passes its model; tests pass a scripted one). A Redis that
    cannot be reached at start is waited for like an outage (infra/store/outage.py)."""
    configure_from_environment()
    pool = await _connect(url, settings.redis_give_up_s)
    runtime = Runtime.create(pool, keyspace_of(url), settings)
    runtime.resources.update(resources or {})
    chosen = specs if specs is not None else [load_worker(name) for name in names]
    for spec in chosen:
        if spec.setup is not None:
            await spec.setup(runtime)
    # one arq worker per kind and lane: a BLPOP waits on one wake-up list, and on a cluster
    # each lane's list is in its own slot
    workers = [
        build_arq_worker(spec, runtime, url, concurrency or settings.concurrency, lane)
        for spec in chosen
        for lane in runtime.keyspace.lanes()
    ]
    tasks = [asyncio.create_task(worker.async_run()) for worker in workers]
    if ingress:
        tasks.append(asyncio.create_task(run_ingress(runtime)))
        # the processes that take jobs in also send the callbacks of the jobs that end
        for lane in runtime.keyspace.lanes():
            tasks.append(asyncio.create_task(CallbackSender(runtime, lane).run()))
    presence = announcement([spec.name for spec in chosen], ingress)
    await announce(pool, runtime.keyspace, presence)
    tasks.append(
        asyncio.create_task(
            keep_announcing(pool, runtime.keyspace, presence, runtime.events.renew_tallies)
        )
    )
    if ready is not None:
        ready.set()
    log.info(
        "workers running", workers=[s.name for s in chosen], url=shown_url(url), ingress=ingress
    )
    waiter = asyncio.create_task((stop or asyncio.Event()).wait())
    try:
        done, _ = await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if task is not waiter and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
    finally:
        waiter.cancel()
        for task in tasks:
            task.cancel()
        for worker in workers:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await worker.close()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await withdraw(pool, runtime.keyspace, presence)
        # a model several workers route to is listed under each of their names: close it once
        for resource in {id(r): r for r in runtime.resources.values()}.values():
            closer = getattr(resource, "aclose", None)
            if closer is not None:
                with contextlib.suppress(Exception):
                    await closer()
        await pool.aclose()
        log.info("workers stopped", workers=[s.name for s in chosen])


async def _connect(url: str, give_up_s: float | None) -> ArqRedis:
    reconnect = RideOut("connect", give_up_s)
    while True:
        try:
            return await connect_arq(url)
        except REDIS_UNAVAILABLE as exc:
            await reconnect.failed(exc)
