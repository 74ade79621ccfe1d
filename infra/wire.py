"""JSON on the wire for arq: no pickle, ever (an untrusted payload must never run code).

arq stores each job as one serialized dict {t, f, a, k, et}; postel's handler takes a single
argument, the message as a JSON-compatible dict.
"""

from __future__ import annotations

import json
import time
from typing import Any

from arq.connections import ArqRedis, RedisSettings, create_pool


def dumps(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def loads(raw: bytes) -> dict[str, Any]:
    """Decode an arq job. A job that is not postel's JSON still reaches the handler, as its
    raw text, so the handler dead-letters it instead of arq dropping it into a log line."""
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if isinstance(value, dict) and {"f", "a", "k"} <= value.keys():
        return value
    return {
        "t": 1,
        "f": "handle",
        "a": [raw.decode(errors="replace")],
        "k": {},
        "et": int(time.time() * 1000),
    }


async def connect_arq(url: str) -> ArqRedis:
    """An arq pool speaking JSON, for enqueuing and for the workers."""
    settings = RedisSettings.from_dsn(url)
    # Fail fast with a clear error rather than arq's five one-second retries.
    settings.conn_retries = 1
    settings.conn_retry_delay = 0
    return await create_pool(
        settings,
        job_serializer=dumps,
        job_deserializer=loads,
        default_queue_name="postel:q:intent",
    )
