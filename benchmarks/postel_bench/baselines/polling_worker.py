"""Baseline: a postel worker as it ran before push wake-ups, on arq's own Worker polling its
queue every `POLL_S` (5 ms).

Reproduces how a worker process took messages before infra/runtime/wake.py: the same
`Actor` (the relay stage's, postel/testing/relay.py) handles each job, with the same queue,
timeouts, tries and wire format, but arq's `Worker` finds work by polling Redis instead of
blocking on the queue's wake-up list. `postel bench bus` runs it as the side `postel_poll`
("postel, poll 5 ms (before)"), so push wake-ups are measured against polling in the same
run: hop latency, hops/s, and the Redis commands and CPU an idle worker costs.
"""

from __future__ import annotations

from arq import Worker
from arq.connections import RedisSettings
from arq.worker import func
from postel.infra.runtime.actor import Actor, Runtime
from postel.infra.runtime.runner import KEEP_RESULT_S
from postel.infra.runtime.settings import Settings
from postel.infra.store.keys import Keyspace
from postel.infra.store.wire import ARQ_FUNCTION, connect_arq, dumps, loads

from postel.testing.relay import RELAY_WORKERS

POLL_S = 0.005


async def polling_relay_worker(name: str, url: str, settings: Settings) -> Worker:
    """The relay stage `name` on arq's Worker, polling every `POLL_S`."""
    spec = next(s for s in RELAY_WORKERS if s.name == name)
    runtime = Runtime.create(await connect_arq(url), Keyspace(), settings)
    queue = settings.queue(name)
    actor = Actor(spec, runtime)
    return Worker(
        functions=[
            func(
                actor.handle_job,
                name=ARQ_FUNCTION,
                timeout=queue.job_timeout,
                max_tries=actor.retries.arq_tries,
            )
        ],
        queue_name=runtime.keyspace.queue(name),
        redis_settings=RedisSettings.from_dsn(url),
        poll_delay=POLL_S,
        job_timeout=queue.job_timeout,
        max_tries=actor.retries.arq_tries,
        max_jobs=settings.concurrency,
        keep_result=KEEP_RESULT_S,
        handle_signals=False,
        job_serializer=dumps,
        job_deserializer=loads,
        log_results=False,
    )
