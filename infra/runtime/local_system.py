"""The whole system in one process: an embedded Redis and all five workers.

Used by `postel up`, by `postel reason`/`postel demo` when no Redis is configured, and by
the tests. `async with LocalSystem(settings) as system:` gives `system.url`.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import structlog
from postel.infra.runtime.actor import WorkerSpec
from postel.infra.runtime.runner import run_workers
from postel.infra.runtime.settings import WORKER_NAMES, Settings
from postel.infra.store.redis_server import EmbeddedRedis

log = structlog.get_logger(__name__)


class LocalSystem:
    def __init__(
        self,
        settings: Settings,
        *,
        port: int | None = None,
        state_dir: Path | None = None,
        specs: list[WorkerSpec] | None = None,
        redis_url: str | None = None,
        resources: dict[str, Any] | None = None,
    ) -> None:
        """With `redis_url`, run the workers against that Redis instead of an embedded one."""
        self.settings = settings
        self.redis = (
            None
            if redis_url
            else EmbeddedRedis(port or settings.embedded_port, state_dir or settings.state_dir)
        )
        self._url = redis_url
        self.specs = specs
        self.resources = resources
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        if self.redis is not None:
            return self.redis.url
        assert self._url is not None
        return self._url

    async def start(self) -> None:
        if self.redis is not None:
            await self.redis.start()
        ready = asyncio.Event()
        self._task = asyncio.create_task(
            run_workers(
                list(WORKER_NAMES),
                self.settings,
                self.url,
                ingress=True,
                stop=self._stop,
                ready=ready,
                specs=self.specs,
                resources=self.resources,
            )
        )
        ready_wait = asyncio.create_task(ready.wait())
        await asyncio.wait([ready_wait, self._task], return_when=asyncio.FIRST_COMPLETED)
        if self._task.done():
            ready_wait.cancel()
            await self.stop()  # raises the workers' start-up error, after cleaning up

    async def stop(self) -> None:
        """Stop the workers, then the embedded Redis, even when the workers failed."""
        self._stop.set()
        task, self._task = self._task, None
        try:
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        finally:
            if self.redis is not None:
                await self.redis.stop()

    async def wait(self) -> None:
        """Until the workers stop (a worker crashed) or the caller is cancelled."""
        assert self._task is not None
        await self._task

    async def __aenter__(self) -> LocalSystem:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
