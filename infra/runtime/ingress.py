"""Ingress for other systems: any language XADDs one field `job` (the JSON job request) to
the stream `postel:ingress`; an optional field `job_id` chooses the id, and an optional
field `producer` names who sent it: the producer's jobs that name no class or tenant get the
producer's (POSTEL_PRODUCERS; the tenant is the producer's name unless configured).

A consumer group reads the stream. Valid entries are submitted, invalid ones are
dead-lettered with the error (over a size or depth limit, not JSON, an invalid request, an
unknown graph, a job id already taken by a different request); both are acknowledged, and
nothing an entry holds can stop the consumer. Acknowledged entries beyond INGRESS_KEEP are
trimmed, and one over INGRESS_KEEP_ENTRY_BYTES is deleted as soon as it is handled. After an
outage (a failover included) a consumer first reads again the entries it had read but not
acknowledged (pending on it, in the new primary too, as the group is replicated), so they are
submitted as soon as Redis is back, not after `claim_idle_ms`. An entry whose consumer died
before acknowledging it is claimed by another consumer after `claim_idle_ms`, and since its
job id is derived from the entry id (`ingress_job_id`) when none is given, submitting it
again cannot run the job twice.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import uuid
from typing import Any

import structlog
from postel.infra.runtime.actor import Runtime
from postel.infra.runtime.settings import ProducerDefaults
from postel.infra.runtime.submit import JobConflict, ingress_job_id, submit_job
from postel.infra.store.connect import REDIS_UNAVAILABLE
from postel.infra.store.deadletter import dead_letter, not_json, summarise_validation
from postel.infra.store.graphs import GraphNotFound
from postel.infra.store.outage import RideOut
from postel.messages import JobRequest
from postel.messages.job import TENANT_PATTERN
from postel.messages.limits import check_json_text
from pydantic import ValidationError
from redis.exceptions import RedisError, ResponseError

log = structlog.get_logger(__name__)

INGRESS_KEEP = 10_000
"""Acknowledged entries kept for inspection; older ones are trimmed."""
INGRESS_KEEP_ENTRY_BYTES = 16 * 1024
"""A handled entry larger than this is deleted at once (its request is in the job record, or
an excerpt in its dead letter), so the kept entries hold at most about
INGRESS_KEEP x INGRESS_KEEP_ENTRY_BYTES."""
TRIM_EVERY = 100


def _text(value: bytes | str) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


class IngressConsumer:
    def __init__(
        self,
        runtime: Runtime,
        claim_idle_ms: int = 30_000,
        block_ms: int = 500,
        keep: int = INGRESS_KEEP,
        trim_every: int = TRIM_EVERY,
    ) -> None:
        self.runtime = runtime
        self.keep = keep
        self.trim_every = trim_every
        self._acks = 0
        self.redis = runtime.redis
        self.keyspace = runtime.keyspace
        self.name = f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
        self.claim_idle_ms = claim_idle_ms
        self.block_ms = block_ms
        # set by an outage: the next batches are this consumer's own pending entries
        self._own_pending = False

    async def ensure_group(self) -> None:
        try:
            await self.redis.xgroup_create(
                self.keyspace.ingress, self.keyspace.ingress_group, id="0", mkstream=True
            )
        except REDIS_UNAVAILABLE:
            raise
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
                    log.info(
                        "ingress consumer ready", stream=self.keyspace.ingress, consumer=self.name
                    )
                await self.run_once()
            except REDIS_UNAVAILABLE as exc:
                grouped = False
                self._own_pending = True
                await reconnect.failed(exc)
            else:
                reconnect.succeeded()

    async def run_once(self, count: int = 50) -> int:
        """Handle one batch (claimed stale entries first); returns how many were handled. A
        stream or group deleted under the consumer is created again."""
        try:
            entries = await self._next_batch(count)
        except REDIS_UNAVAILABLE:
            raise
        except ResponseError as exc:
            # NOGROUP: read after the deletion; UNBLOCKED: Redis 7 ends a blocked read when
            # its stream is deleted
            if not str(exc).startswith(("NOGROUP", "UNBLOCKED")):
                raise
            log.warning("ingress stream or group vanished; creating it again")
            await self.ensure_group()
            return 0
        for entry_id, fields in entries:
            await self.handle(_text(entry_id), fields or {})
        return len(entries)

    async def _next_batch(self, count: int) -> list[tuple[Any, dict[Any, Any]]]:
        if self._own_pending:
            own = await self.redis.xreadgroup(
                self.keyspace.ingress_group, self.name, {self.keyspace.ingress: "0"}, count=count
            )
            pending = [entry for _stream, batch in own or [] for entry in batch]
            if pending:
                return pending
            self._own_pending = False
        claimed = await self.redis.xautoclaim(
            self.keyspace.ingress,
            self.keyspace.ingress_group,
            self.name,
            self.claim_idle_ms,
            "0-0",
            count=count,
        )
        entries: list[tuple[Any, dict[Any, Any]]] = list(claimed[1]) if claimed else []
        if not entries:
            batches = await self.redis.xreadgroup(
                self.keyspace.ingress_group,
                self.name,
                {self.keyspace.ingress: ">"},
                count=count,
                block=self.block_ms,
            )
            for _stream, batch in batches or []:
                entries.extend(batch)
        return entries

    async def handle(self, entry_id: str, fields: dict[Any, Any]) -> None:
        """Submit one entry, or dead-letter it with the reason; then acknowledge it. Nothing
        an entry holds can stop the consumer: any error but a Redis one (the entry stays
        pending and is claimed again) dead-letters the entry."""
        data = {_text(k): _text(v) for k, v in fields.items()}
        job_id = data.get("job_id") or ingress_job_id(entry_id)
        error: str | None = None
        try:
            request = self._parse(data)
            producer = data.get("producer")
            defaults = self.producer_defaults(producer)
            await submit_job(
                self.runtime.pool,
                self.runtime.events,
                self.runtime.jobs,
                request,
                job_id,
                source="ingress",
                priority=defaults.priority,
                tenant=defaults.tenant,
            )
            log.info("ingress job submitted", job_id=job_id, entry=entry_id)
        except RedisError:
            raise
        except JobConflict as exc:
            error = f"conflicting ingress entry {entry_id}: {exc}"
        except ValidationError as exc:
            error = f"invalid ingress entry {entry_id}: {summarise_validation(exc)}"
        except (ValueError, GraphNotFound) as exc:
            error = f"invalid ingress entry {entry_id}: {exc}"
        except Exception as exc:
            log.exception("ingress entry could not be handled", entry=entry_id)
            error = f"ingress entry {entry_id} could not be handled: {type(exc).__name__}: {exc}"
        if error is not None:
            await dead_letter(
                self.redis,
                self.keyspace,
                source="ingress",
                error=error,
                payload=data,
                job_id=data.get("job_id", ""),
            )
            log.warning("ingress entry dead-lettered", entry=entry_id, error=error)
        await self.redis.xack(self.keyspace.ingress, self.keyspace.ingress_group, entry_id)
        if sum(len(k) + len(v) for k, v in fields.items()) > INGRESS_KEEP_ENTRY_BYTES:
            await self.redis.xdel(self.keyspace.ingress, entry_id)
        await self._trim()

    async def _trim(self) -> None:
        """Keep at most about `keep` acknowledged entries: trim below the oldest entry not yet
        acknowledged (or not yet delivered), once the stream is over its cap."""
        self._acks += 1
        if self._acks % self.trim_every:
            return
        if await self.redis.xlen(self.keyspace.ingress) <= self.keep:
            return
        pending = await self.redis.xpending(self.keyspace.ingress, self.keyspace.ingress_group)
        oldest_pending = pending.get("min") if pending and pending.get("pending") else None
        groups = await self.redis.xinfo_groups(self.keyspace.ingress)
        delivered = next(
            (
                g["last-delivered-id"]
                for g in groups
                if _text(g["name"]) == self.keyspace.ingress_group
            ),
            None,
        )
        if delivered is None:
            return
        boundary = _text(oldest_pending) if oldest_pending else _after(_text(delivered))
        await self.redis.xtrim(self.keyspace.ingress, minid=boundary, approximate=False)

    def producer_defaults(self, producer: str | None) -> ProducerDefaults:
        """The class and tenant of a producer's jobs that name none: as configured
        (POSTEL_PRODUCERS), the tenant otherwise its name (when that is a tenant's name)."""
        if not producer:
            return ProducerDefaults()
        configured = self.runtime.settings.producers.get(producer, ProducerDefaults())
        tenant = configured.tenant
        if tenant is None and re.match(TENANT_PATTERN, producer):
            tenant = producer
        return ProducerDefaults(priority=configured.priority, tenant=tenant)

    @staticmethod
    def _parse(data: dict[str, str]) -> JobRequest:
        if "job" not in data:
            raise ValueError(f"missing field `job` (fields present: {', '.join(data) or 'none'})")
        check_json_text(data["job"], what="field `job`")
        try:
            body = json.loads(data["job"])
        except json.JSONDecodeError as exc:
            raise ValueError(f"field `job` is {not_json(exc)}") from exc
        return JobRequest.model_validate(body)


def _after(entry_id: str) -> str:
    """The smallest stream id greater than `entry_id`."""
    ms, seq = entry_id.split("-")
    return f"{ms}-{int(seq) + 1}"


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
