"""The Python client: submit a job, follow its events, await its result, cancel it.

    async with Client() as client:
        job_id = await client.submit("get the total price", type="float", text=invoice)
        price = await client.result(job_id, timeout=60)

Without a URL it connects where `postel up` listens (POSTEL_REDIS_URL, or the embedded
server's fixed loopback port).

Waiting and following ride out a Redis outage (a restart, a Sentinel failover) within their
own timeout: they retry with backoff (infra/store/outage.py) and resume after the last
event they read, so nothing is missed and nothing is seen twice. Without a timeout
(`follow`) they give up after POSTEL_REDIS_GIVE_UP_S, if set.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from arq.connections import ArqRedis
from postel.infra.runtime.cancel import cancel_job
from postel.infra.runtime.settings import Settings
from postel.infra.runtime.submit import submit_job
from postel.infra.runtime.tracing import configure_from_environment
from postel.infra.store import lanes
from postel.infra.store.connect import REDIS_UNAVAILABLE, keyspace_of
from postel.infra.store.events import Event, EventLog
from postel.infra.store.job_stores import job_stores
from postel.infra.store.jobs import JobNotFound, JobRecord, JobStore
from postel.infra.store.outage import RideOut
from postel.infra.store.wire import connect_arq
from postel.messages import (
    TERMINAL_TYPES,
    AmbientContext,
    CodeSiteContext,
    JobOptions,
    JobRequest,
    TypeSpec,
)
from postel.messages.errors import Failed


class JobFailedError(Failed, RuntimeError):
    """The job ended in failure; `status` is its documented FailureStatus."""

    def __init__(self, job_id: str, status: str, error: str, partial: Any = None) -> None:
        super().__init__(f"job {job_id} failed ({status}): {error}")
        self.job_id = job_id
        self.status = status
        self.error = error
        self.partial = partial


class Client:
    def __init__(self, url: str | None = None, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.url = url or self.settings.effective_redis_url
        self.keyspace = keyspace_of(self.url)
        """The names of postel's keys where the client connects."""
        self._pool: ArqRedis | None = None

    async def connect(self) -> Client:
        configure_from_environment()  # a submission starts the job's trace
        if self._pool is None:
            self._pool = await connect_arq(self.url)
        return self

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None

    async def __aenter__(self) -> Client:
        return await self.connect()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def pool(self) -> ArqRedis:
        if self._pool is None:
            raise RuntimeError("Client is not connected: use `async with Client()` or connect()")
        return self._pool

    @property
    def events(self) -> EventLog:
        return job_stores(self.pool, self.keyspace, self.settings).events

    @property
    def jobs(self) -> JobStore:
        return job_stores(self.pool, self.keyspace, self.settings).jobs

    async def submit(
        self,
        prompt: str,
        *,
        type: str | TypeSpec | dict[str, Any] = "str",
        graph: str | None = None,
        code_site: CodeSiteContext | None = None,
        ambient: AmbientContext | None = None,
        options: JobOptions | None = None,
        job_id: str | None = None,
        **arguments: Any,
    ) -> str:
        request = JobRequest(
            prompt=prompt,
            desired_type=TypeSpec.model_validate(type) if not isinstance(type, TypeSpec) else type,
            arguments=arguments,
            graph=graph,
            code_site=code_site,
            ambient=ambient or AmbientContext(),
            options=options or JobOptions(),
        )
        return await self.submit_request(request, job_id=job_id)

    async def submit_request(self, request: JobRequest, job_id: str | None = None) -> str:
        return await submit_job(self.pool, self.events, self.jobs, request, job_id)

    async def status(self, job_id: str) -> JobRecord:
        return await self.jobs.get(job_id)

    async def cancel(self, job_id: str, reason: str = "", *, by: str = "client") -> JobRecord:
        """Cancel a queued or running job and return its record (failed, `cancelled`).
        JobNotFound for an unknown job; JobAlreadyFinished if it had finished."""
        await cancel_job(self.pool, self.events, job_id, by=by, reason=reason)
        return await self.status(job_id)

    async def follow(self, job_id: str) -> AsyncIterator[Event]:
        """The job's events as they happen, ending after its terminal event. A terminal
        event of a job since reopened (a dead letter redriven) does not end it: the job's
        record is read at each terminal event and must say finished."""
        give_up_s = self.settings.redis_give_up_s
        async for event in self.events.follow(job_id, give_up_s=give_up_s):
            yield event
            if event.type in TERMINAL_TYPES and (await self._status(job_id, give_up_s)).finished:
                return

    async def _status(self, job_id: str, give_up_s: float | None) -> JobRecord:
        """The job's record, read again through an outage."""
        reconnect = RideOut(f"reading job {job_id}", give_up_s)
        while True:
            try:
                return await self.status(job_id)
            except REDIS_UNAVAILABLE as exc:
                await reconnect.failed(exc)

    async def wait(self, job_id: str, timeout: float = 60.0) -> JobRecord:
        """The finished job record; TimeoutError if it is still running after `timeout`.

        A job not yet submitted (an ingress entry not yet consumed) is waited for too."""
        async with asyncio.timeout(timeout):
            with contextlib.suppress(JobNotFound):
                record = await self._status(job_id, None)
                if record.finished:
                    return record
            async for _event in self.follow(job_id):
                pass
            return await self._status(job_id, None)

    async def wait_all(self, job_ids: list[str], timeout: float = 60.0) -> dict[str, JobRecord]:
        """Wait for many jobs at once by reading the results streams (one per lane), not one
        stream each."""
        pending = set(job_ids)
        records: dict[str, JobRecord] = {}
        reconnect = RideOut("waiting for jobs", None)
        async with asyncio.timeout(timeout):
            cursor = await lanes.newest(self.pool, self.keyspace, self.keyspace.results)
            for job_id in job_ids:
                record = await self._status(job_id, None)
                if record.finished:
                    records[job_id] = record
                    pending.discard(job_id)
            while pending:
                try:
                    entries = await lanes.read_after(
                        self.pool, self.keyspace.results, cursor, count=500, block_ms=1000
                    )
                except REDIS_UNAVAILABLE as exc:
                    await reconnect.failed(exc)
                    continue
                reconnect.succeeded()
                for entry in entries:
                    job_id = entry.fields[b"job_id"].decode()
                    if job_id in pending:
                        records[job_id] = await self._status(job_id, None)
                        pending.discard(job_id)
        return records

    async def result(self, job_id: str, timeout: float = 60.0) -> Any:
        """The validated result; raises JobFailedError if the job failed."""
        record = await self.wait(job_id, timeout)
        if record.status == "failed":
            raise JobFailedError(
                job_id, record.failure or "failed", record.error or "", record.result
            )
        return record.result
