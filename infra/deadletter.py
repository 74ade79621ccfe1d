"""The dead-letter stream: messages postel could not handle, kept with the error and the raw
payload so nothing is lost and an operator can re-submit them. The stream keeps the newest
DEAD_LETTER_MAXLEN entries; a payload over the payload limit keeps only an excerpt."""

from __future__ import annotations

import json
from typing import Any

from postel.infra import keys
from postel.messages import utc_now
from postel.messages.limits import MAX_PAYLOAD_BYTES
from pydantic import ValidationError
from redis.asyncio import Redis

DEAD_LETTER_MAXLEN = 10_000
EXCERPT_CHARS = 4096


def raw_text(payload: Any) -> str:
    """The payload as text: whole when it is within the payload limit (so it can be
    redriven), else a marked excerpt of its head (it was refused for its size anyway)."""
    if isinstance(payload, bytes):
        text = payload.decode(errors="replace")
    elif isinstance(payload, str):
        text = payload
    else:
        try:
            text = json.dumps(payload, ensure_ascii=False, default=str)
        except (ValueError, RecursionError):
            text = repr(payload)[: EXCERPT_CHARS + 1]
    if len(text) > MAX_PAYLOAD_BYTES:
        return f"{text[:EXCERPT_CHARS]}... [cut: {len(text)} characters in all]"
    return text


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


def summarise_validation(exc: ValidationError) -> str:
    """The first few errors of a validation, each with the field it names."""
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error["loc"]) or "message"
        parts.append(f"{where}: {error['msg']}")
    more = f" (+{exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
    return "; ".join(parts) + more
