"""Run one job from a command or a script, wherever the system is.

- POSTEL_REDIS_URL set, or a `postel up` listening on the embedded port: submit there;
- otherwise: start the whole system in this process for the job (a private embedded Redis
  in a temporary directory, all five workers, the configured or bundled model), then stop it.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import Settings
from postel.infra.store.events import Event
from postel.infra.store.jobs import JobRecord
from postel.infra.store.redis_server import free_port, port_is_open
from postel.messages import JobRequest

OnEvent = Callable[[Event], Awaitable[None] | None]


@contextlib.asynccontextmanager
async def connected(settings: Settings) -> AsyncIterator[Client]:
    """A client on the running system, or on one started here for as long as it is open."""
    if settings.redis_url or port_is_open(settings.embedded_port):
        async with Client(settings.effective_redis_url, settings) as client:
            yield client
        return
    with tempfile.TemporaryDirectory(prefix="postel-") as state_dir:
        async with (
            LocalSystem(settings, port=free_port(), state_dir=Path(state_dir)) as system,
            Client(system.url, settings) as client,
        ):
            yield client


async def run_job(
    client: Client,
    request: JobRequest,
    *,
    timeout: float,
    on_event: OnEvent | None = None,
    job_id: str | None = None,
) -> JobRecord:
    """Submit, follow the job's events (each passed to `on_event`), return the final record;
    TimeoutError if the job has not finished within `timeout` seconds, following included."""
    new_id = await client.submit_request(request, job_id=job_id)
    async with asyncio.timeout(timeout):
        if on_event is not None:
            async for event in client.follow(new_id):
                shown = on_event(event)
                if shown is not None:
                    await shown
        return await client.wait(new_id, timeout=timeout)
