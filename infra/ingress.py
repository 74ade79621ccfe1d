"""Ingress for other systems: any language XADDs one field `job` (the JSON job request) to
the stream `postel:ingress`; an optional field `job_id` chooses the id.

A consumer group reads the stream. Valid entries are submitted, invalid ones are
dead-lettered with the validation error; both are acknowledged. An entry whose consumer died
before acknowledging it is claimed by another consumer after `claim_idle_ms`, and since its
job id is derived from the entry id (`ingress-<entry id>`) when none is given, submitting it
again cannot run the job twice.
"""

from __future__ import annotations

import asyncio
import json
import socket
import uuid
from typing import Any

import structlog
from postel.infra import keys
from postel.infra.actor import Runtime
from postel.infra.deadletter import dead_letter
from postel.infra.outage import REDIS_UNAVAILABLE, RideOut
from postel.infra.submit import JobExists, UnknownGraph, submit_job
from postel.messages import JobRequest
from pydantic import ValidationError
from redis.exceptions import ResponseError

log = structlog.get_logger(__name__)


def _text(value: bytes | str) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


class IngressConsumer:
    def __init__(self, runtime: Runtime, claim_idle_ms: int = 30_000, block_ms: int = 500) -> None:
        self.runtime = runtime
        self.redis = runtime.redis
        self.name = f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
        self.claim_idle_ms = claim_idle_ms
        self.block_ms = block_ms

    async def ensure_group(self) -> None:
        try:
            await self.redis.xgroup_create(keys.INGRESS, keys.INGRESS_GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def run(self) -> None:
        """Consume until cancelled, riding out Redis outages like the workers do; after one,
        the group is ensured again (a Redis restarted without its data has lost it)."""
        reconnect = RideOut("ingress consumer", self.runtime.settings.redis_give_up_s)
        grouped = False
        while True:
            try:
                if not grouped:
                    await self.ensure_group()
                    grouped = True
                    log.info("ingress consumer ready", stream=keys.INGRESS, consumer=self.name)
                await self.run_once()
            except REDIS_UNAVAILABLE as exc:
                grouped = False
                await reconnect.failed(exc)
            else:
                reconnect.succeeded()

    async def run_once(self) -> int:
        """Handle one batch (claimed stale entries first); returns how many were handled."""
        claimed = await self.redis.xautoclaim(
            keys.INGRESS, keys.INGRESS_GROUP, self.name, self.claim_idle_ms, "0-0", count=50
        )
        entries: list[tuple[Any, dict[Any, Any]]] = list(claimed[1]) if claimed else []
        if not entries:
            batches = await self.redis.xreadgroup(
                keys.INGRESS_GROUP, self.name, {keys.INGRESS: ">"}, count=50, block=self.block_ms
            )
            for _stream, batch in batches or []:
                entries.extend(batch)
        for entry_id, fields in entries:
            await self.handle(_text(entry_id), fields or {})
        return len(entries)

    async def handle(self, entry_id: str, fields: dict[Any, Any]) -> None:
        data = {_text(k): _text(v) for k, v in fields.items()}
        job_id = data.get("job_id") or f"ingress-{entry_id.replace('-', '_')}"
        try:
            request = self._parse(data)
            await submit_job(
                self.runtime.pool,
                self.runtime.events,
                self.runtime.jobs,
                request,
                job_id,
                source="ingress",
            )
            log.info("ingress job submitted", job_id=job_id, entry=entry_id)
        except JobExists:
            log.info("ingress entry already submitted", job_id=job_id, entry=entry_id)
        except (ValueError, ValidationError, UnknownGraph) as exc:
            await dead_letter(
                self.redis,
                source="ingress",
                error=f"invalid ingress entry {entry_id}: {exc}",
                payload=data,
                job_id=data.get("job_id", ""),
            )
            log.warning("ingress entry dead-lettered", entry=entry_id, error=str(exc))
        await self.redis.xack(keys.INGRESS, keys.INGRESS_GROUP, entry_id)

    @staticmethod
    def _parse(data: dict[str, str]) -> JobRequest:
        if "job" not in data:
            raise ValueError(f"missing field `job` (fields present: {', '.join(data) or 'none'})")
        try:
            body = json.loads(data["job"])
        except json.JSONDecodeError as exc:
            raise ValueError(f"field `job` is not JSON: {exc}") from exc
        return JobRequest.model_validate(body)


# A blocking read returns as soon as an entry arrives; its block only paces the reclaim of
# entries whose consumer died (after claim_idle_ms), so an idle consumer sends two commands
# per block instead of two per half second.
IDLE_BLOCK_MS = 5_000


async def run_ingress(runtime: Runtime) -> None:
    consumer = IngressConsumer(runtime, block_ms=IDLE_BLOCK_MS)
    try:
        await consumer.run()
    except asyncio.CancelledError:
        log.info("ingress consumer stopped", consumer=consumer.name)
        raise
