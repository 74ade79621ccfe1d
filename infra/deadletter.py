"""The dead-letter stream: messages postel could not handle, kept with the error and the raw
payload so nothing is lost and an operator can re-submit them."""

from __future__ import annotations

import json
from typing import Any

from postel.infra import keys
from postel.messages import utc_now
from redis.asyncio import Redis

DEAD_LETTER_MAXLEN = 100_000


def raw_text(payload: Any) -> str:
    if isinstance(payload, bytes):
        return payload.decode(errors="replace")
    if isinstance(payload, str):
        return payload
    return json.dumps(payload, ensure_ascii=False, default=str)


async def dead_letter(
    redis: Redis,
    *,
    source: str,
    error: str,
    payload: Any,
    job_id: str = "",
    message_id: str = "",
    attempt: int = 0,
) -> str:
    fields = {
        "source": source,
        "error": error,
        "raw": raw_text(payload),
        "job_id": job_id,
        "message_id": message_id,
        "attempt": str(attempt),
        "at": utc_now().isoformat(),
    }
    entry_id = await redis.xadd(
        keys.DEAD_LETTER, fields, maxlen=DEAD_LETTER_MAXLEN, approximate=True
    )
    return entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
