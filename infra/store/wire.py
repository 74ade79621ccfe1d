"""JSON on the wire for arq: no pickle, ever (an untrusted payload must never run code).

arq stores each job as one serialized dict {t, f, a, k, et}; postel's handler takes a single
argument, the message as a JSON-compatible dict.
"""

from __future__ import annotations

import json
import time
from typing import Any, cast

from arq.connections import ArqRedis, create_pool
from postel.infra.store.access import PROBE_TAG, check_access, check_cluster_access
from postel.infra.store.connect import (
    REDIS_UNAVAILABLE,
    arq_settings,
    cluster_of,
    is_cluster,
    primary_client,
    redis_client,
    with_outage_errors,
)
from postel.infra.store.keys import Keyspace
from postel.messages.limits import MAX_MESSAGE_BYTES, check_json_text

ARQ_FUNCTION = "handle"
"""The one function name every postel job is enqueued under."""


def dumps(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def loads(raw: bytes) -> dict[str, Any]:
    """Decode an arq job. Anything that is not exactly postel's job shape (over the size or
    depth limit, not JSON, a wrong field type, another function, keyword arguments, which the
    handler takes none of) still reaches the handler, as its raw text, so the handler
    dead-letters it: arq itself would drop such a job with a log line, or fail on it outside
    any handler and stop the worker."""
    try:
        check_json_text(raw, what="queued message", max_bytes=MAX_MESSAGE_BYTES)
        value = json.loads(raw)
    except (ValueError, RecursionError):
        value = None
    if _is_postel_job(value):
        return value
    return {
        "t": 1,
        "f": ARQ_FUNCTION,
        "a": [raw.decode(errors="replace")],
        "k": {},
        "et": int(time.time() * 1000),
    }


def _is_postel_job(value: Any) -> bool:
    def whole(number: Any) -> bool:
        return isinstance(number, int) and not isinstance(number, bool)

    return (
        isinstance(value, dict)
        and value.get("f") == ARQ_FUNCTION
        and isinstance(value.get("a"), list)
        and len(value["a"]) == 1
        and value.get("k") == {}
        and whole(value.get("et"))
        and (value.get("t") is None or whole(value["t"]))
    )


async def connect_arq(url: str) -> ArqRedis:
    """An arq pool speaking JSON, for enqueuing and for the workers, once Redis has let
    this user run every command postel needs (infra/store/access.py). On a cluster, the
    cluster client (`redis_client`): postel enqueues with its commit script, never with arq's
    `enqueue_job`, and each worker's arq queue connects to its lane's primary itself."""
    if is_cluster(url):
        await _check_a_seed(url)
        probed = await primary_client(url, PROBE_TAG)
        try:
            await check_access(probed, cluster=True)
        finally:
            await probed.aclose()
        return cast(ArqRedis, redis_client(url))
    settings = arq_settings(url)
    # Fail fast with a clear error rather than arq's five one-second retries.
    settings.conn_retries = 1
    settings.conn_retry_delay = 0
    pool = await create_pool(
        settings,
        job_serializer=dumps,
        job_deserializer=loads,
        default_queue_name=Keyspace().queue("intent"),
    )
    try:
        # a user short of a permission is told now, not by a NOPERM in the middle of a job
        await check_access(pool)
    except BaseException:
        await pool.aclose()
        raise
    return cast(ArqRedis, await with_outage_errors(pool))


async def _check_a_seed(url: str) -> None:
    """The cluster commands asked of the first seed that answers (infra/store/access.py);
    with none answering, the cluster client's own connect says so."""
    for seed in cluster_of(url).seeds:
        client = seed.client()
        try:
            await check_cluster_access(client)
            return
        except REDIS_UNAVAILABLE:
            continue
        finally:
            await client.aclose()
