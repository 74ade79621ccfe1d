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


class UnreadableEntry(str):
    """A queue entry that is not a postel job, as its text, with what is wrong with it."""

    fault: str

    def __new__(cls, text: str, fault: str) -> UnreadableEntry:
        made = super().__new__(cls, text)
        made.fault = fault
        return made


def loads(raw: bytes) -> dict[str, Any]:
    """Decode an arq job. Anything that is not exactly postel's job shape (over the size or
    depth limit, not JSON, a wrong field type, another function, keyword arguments, which the
    handler takes none of) still reaches the handler, as an UnreadableEntry naming its fault,
    so the handler dead-letters it: arq itself would drop such a job with a log line, or fail
    on it outside any handler and stop the worker."""
    value, fault = _read_entry(raw)
    if fault is None:
        return cast(dict[str, Any], value)
    return {
        "t": 1,
        "f": ARQ_FUNCTION,
        "a": [UnreadableEntry(raw.decode(errors="replace"), fault)],
        "k": {},
        "et": int(time.time() * 1000),
    }


def _read_entry(raw: bytes) -> tuple[Any, str | None]:
    """The entry's JSON value and, when it is not a postel job, what is wrong with it."""
    try:
        check_json_text(raw, what="queued message", max_bytes=MAX_MESSAGE_BYTES)
        value = json.loads(raw)
    except RecursionError:
        return None, "JSON nested too deep to read"
    except ValueError as exc:  # the limits' LimitExceeded, JSON's JSONDecodeError
        return None, f"not readable JSON: {exc}"
    return value, _job_fault(value)


def _job_fault(value: Any) -> str | None:
    def whole(number: Any) -> bool:
        return isinstance(number, int) and not isinstance(number, bool)

    if not isinstance(value, dict):
        return f"JSON {type(value).__name__}, not an arq job object"
    arguments, keywords = value.get("a"), value.get("k")
    if value.get("f") != ARQ_FUNCTION:
        return f"it calls function {value.get('f')!r}; postel's jobs call {ARQ_FUNCTION!r}"
    if keywords != {}:
        named = ", ".join(map(str, keywords)) if isinstance(keywords, dict) else repr(keywords)
        return f"it passes keyword arguments ({named}); the handler takes one message, no keywords"
    if not isinstance(arguments, list) or len(arguments) != 1:
        count = len(arguments) if isinstance(arguments, list) else repr(arguments)
        return f"it passes {count} arguments; the handler takes one message"
    if not whole(value.get("et")) or not (value.get("t") is None or whole(value["t"])):
        return "its enqueue time (et) or try (t) is not a whole number"
    return None


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
