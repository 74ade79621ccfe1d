"""The dead-letter stream: messages postel could not handle, kept with the error and the raw
payload so nothing is lost and an operator can send them back (infra/runtime/redrive.py).

Each entry of `postel:dead` (one stream per lane on a cluster, infra/store/keys.py) has the
fields source (`worker:<name>` or `ingress`), error, raw (the payload as received), job_id,
message_id, attempt (the hop's tries) and at; a letter also says how many times the model
was tried within its last try (`model_attempts`), read from its error, and whether a redrive
can work (`redrive_blocker`: why not, in words). Listing reads the stream newest first in
pages; a filter by worker or error text reads at most SCAN_LIMIT entries per page, so a page
costs the same however long the stream is. The stream is bounded by count and by size: it
keeps the newest DEAD_LETTER_MAXLEN entries, and a payload over DEAD_LETTER_RAW_BYTES keeps
only its first EXCERPT_CHARS characters, with its size and sha256 noted (`raw_bytes`,
`raw_sha256`), so at most about DEAD_LETTER_MAXLEN x DEAD_LETTER_RAW_BYTES of payloads are
kept. Such a letter cannot be redriven (its `redrive_blocker` says so); the sha256 matches
it to the producer's copy."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from typing import Any

from postel.infra.store.connect import REDIS_UNAVAILABLE
from postel.infra.store.keys import Keyspace, split_lane
from postel.infra.store.lanes import id_order, length
from postel.messages import Envelope, JobRequest, decode_message, utc_now
from postel.messages.errors import NotFound, Refused
from postel.messages.limits import check_json_text
from pydantic import BaseModel, Field, ValidationError, computed_field
from redis.asyncio import Redis
from redis.exceptions import ResponseError

DEAD_LETTER_MAXLEN = 10_000
DEAD_LETTER_RAW_BYTES = 64 * 1024
"""A payload up to this many bytes (UTF-8) is kept whole; a larger one as an excerpt."""
EXCERPT_CHARS = 4096
SCAN_LIMIT = 5_000
_MODEL_ATTEMPTS = re.compile(r"failed after (\d+) attempt\(s\)")


CALLBACK_SOURCE = "callback"
"""The source of a completion callback given up on (infra/runtime/callbacks.py)."""


class DeadLetter(BaseModel):
    id: str
    source: str
    error: str
    raw: str
    job_id: str = ""
    message_id: str = ""
    attempt: int = 0
    at: datetime | None = None
    raw_bytes: int = Field(default=0, description="the payload's size when `raw` is cut")
    raw_sha256: str = Field(default="", description="the payload's sha256 when `raw` is cut")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def model_attempts(self) -> int:
        """How many times the model was tried within the last try, when the error says so
        (a model call retries inside one hop: "failed after 5 attempt(s)"); else 0."""
        found = _MODEL_ATTEMPTS.search(self.error)
        return int(found[1]) if found else 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def redrive_blocker(self) -> str | None:
        """Why a redrive cannot work whatever its job's state (the payload does not decode,
        its type has no queue, its source is unknown), in words; None when it may."""
        try:
            if self.source == "ingress":
                request_of(self)
            elif self.source.startswith("worker:"):
                message_of(self)
            elif self.source == CALLBACK_SOURCE:
                if not self.job_id:
                    return "a callback's dead letter names no job"
            else:
                return f"unknown source {self.source!r}"
        except Unusable as exc:
            return str(exc)
        return None

    @property
    def worker(self) -> str:
        """The worker kind that gave up on it, or `ingress`."""
        return self.source.removeprefix("worker:")

    @classmethod
    def from_entry(
        cls, entry_id: bytes | str, fields: dict[Any, Any], lane: str = ""
    ) -> DeadLetter:
        """On a cluster the letter's id starts with its lane's tag (`{p3}1700000000000-0`):
        the id alone finds the letter's stream."""
        data = {_text(k): _text(v) for k, v in fields.items()}
        return cls.model_validate({**data, "id": lane + _text(entry_id)})


class Unusable(Refused, ValueError):
    """A dead letter's payload cannot be sent back; the message says why, in words."""


def not_json(exc: json.JSONDecodeError) -> str:
    """A JSON syntax error, worded the one way every dead letter and refusal words it."""
    return f"not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"


def _readable(exc: Exception) -> str:
    """Why a payload cannot be used, in words: where JSON breaks, or which fields a message
    lacks (pydantic's own text carries a link and the whole input)."""
    if isinstance(exc, json.JSONDecodeError):
        return f"it is {not_json(exc)}"
    if isinstance(exc, ValidationError):
        return f"it is not a valid message: {summarise_validation(exc)}"
    return str(exc)


def _whole(letter: DeadLetter) -> None:
    if letter.raw_sha256:
        raise Unusable(
            f"its payload was cut when dead-lettered ({letter.raw_bytes} bytes, sha256 "
            f"{letter.raw_sha256}); send it again from the producer's copy"
        )


def message_of(letter: DeadLetter) -> Envelope:
    """A worker's dead letter as the message it held (Unusable if it was cut, still is not
    one, or is of a type no queue takes)."""
    _whole(letter)
    try:
        check_json_text(letter.raw)
        payload: Any = json.loads(letter.raw)
        if not isinstance(payload, dict):
            raise ValueError("it is JSON but not an object")
        message = decode_message(payload)
    except (ValueError, ValidationError) as exc:
        raise Unusable(f"the payload still cannot be decoded: {_readable(exc)}") from exc
    if message.destination is None:
        raise Unusable(f"{message.type} is terminal: there is no queue for it")
    return message


def request_of(letter: DeadLetter) -> tuple[dict[str, Any], JobRequest]:
    """A refused ingress entry's fields and its job request (Unusable if it was cut or is
    still invalid)."""
    _whole(letter)
    try:
        check_json_text(letter.raw)
        fields = json.loads(letter.raw)
        if not isinstance(fields, dict) or not isinstance(fields.get("job"), str):
            raise ValueError("the entry has no field `job` holding the job request")
        check_json_text(fields["job"], what="field `job`")
        request = JobRequest.model_validate(json.loads(fields["job"]))
    except json.JSONDecodeError as exc:
        raise Unusable(f"the entry is still invalid: field `job` is {not_json(exc)}") from exc
    except (ValueError, ValidationError) as exc:
        raise Unusable(f"the entry is still invalid: {_readable(exc)}") from exc
    return fields, request


class DeadPage(BaseModel):
    """Dead letters newest first; `next` is the cursor of the following page (None at the
    end), `total` the stream's length."""

    items: list[DeadLetter]
    next: str | None
    total: int


class DeadLetterNotFound(NotFound):
    def __init__(self, entry_id: str) -> None:
        super().__init__(f"no dead letter {entry_id!r} (already redriven, or trimmed)")


def _text(value: bytes | str) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def raw_fields(payload: Any) -> dict[str, str]:
    """The payload as the entry's `raw`: whole when within DEAD_LETTER_RAW_BYTES (so it can
    be redriven), else a marked excerpt of its head with `raw_bytes` and `raw_sha256`."""
    if isinstance(payload, bytes):
        text = payload.decode(errors="replace")
    elif isinstance(payload, str):
        text = payload
    else:
        try:
            text = json.dumps(payload, ensure_ascii=False, default=str)
        except (ValueError, RecursionError):
            text = repr(payload)[: EXCERPT_CHARS + 1]
    if len(text) <= DEAD_LETTER_RAW_BYTES // 4:  # 4 bytes per character at most
        return {"raw": text}
    data = text.encode(errors="replace")
    if len(data) <= DEAD_LETTER_RAW_BYTES:
        return {"raw": text}
    digest = hashlib.sha256(data).hexdigest()
    return {
        "raw": f"{text[:EXCERPT_CHARS]}... [cut: {len(data)} bytes in all, sha256 {digest}]",
        "raw_bytes": str(len(data)),
        "raw_sha256": digest,
    }


def dead_letter_command(
    keyspace: Keyspace,
    *,
    source: str,
    error: str,
    payload: Any,
    job_id: str = "",
    message_id: str = "",
    attempt: int = 0,
) -> list[str]:
    """The XADD that records a dead letter, for a caller that commits it with other writes
    (a worker's give-up is committed only if no other run committed the message)."""
    fields = {
        "source": source,
        "error": error,
        **raw_fields(payload),
        "job_id": job_id,
        "message_id": message_id,
        "attempt": str(attempt),
        "at": utc_now().isoformat(),
    }
    flat = [item for pair in fields.items() for item in pair]
    stream = keyspace.dead_letters(keyspace.lane_of(job_id))
    return ["XADD", stream, "MAXLEN", "~", str(DEAD_LETTER_MAXLEN), "*", *flat]


async def dead_letter(
    redis: Redis,
    keyspace: Keyspace,
    *,
    source: str,
    error: str,
    payload: Any,
    job_id: str = "",
    message_id: str = "",
    attempt: int = 0,
) -> str:
    command = dead_letter_command(
        keyspace,
        source=source,
        error=error,
        payload=payload,
        job_id=job_id,
        message_id=message_id,
        attempt=attempt,
    )
    entry_id = await redis.execute_command(*command)
    return entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)


def summarise_validation(exc: ValidationError) -> str:
    """The first few errors of a validation, each with the field it names."""
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error["loc"])
        said = f"not JSON ({error['ctx']['error']})" if error["type"] == "json_invalid" else None
        said = said or error["msg"]
        parts.append(f"{where}: {said}" if where else said)
    more = f" (+{exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
    return "; ".join(parts) + more


def matches(letter: DeadLetter, worker: str | None, error: str | None) -> bool:
    """The filter of `postel dead` and the dashboard: worker kind (or `ingress`), and text
    the error contains (case-insensitive)."""
    if worker and letter.worker != worker:
        return False
    return not error or error.lower() in letter.error.lower()


def letter_stream(keyspace: Keyspace, letter_id: str) -> tuple[str, str]:
    """(the stream, the entry id) of dead letter `letter_id`; DeadLetterNotFound if its lane
    is not one of `keyspace`'s."""
    lane, entry_id = split_lane(letter_id)
    if lane not in keyspace.lanes():
        raise DeadLetterNotFound(letter_id)
    return keyspace.dead_letters(lane), entry_id


async def get_dead(redis: Redis, keyspace: Keyspace, letter_id: str) -> DeadLetter:
    stream, entry_id = letter_stream(keyspace, letter_id)
    try:
        entries = await redis.xrange(stream, min=entry_id, max=entry_id)
    except REDIS_UNAVAILABLE:
        raise
    except ResponseError as exc:  # not a stream id (`<ms>-<seq>`)
        raise DeadLetterNotFound(letter_id) from exc
    if not entries:
        raise DeadLetterNotFound(letter_id)
    return DeadLetter.from_entry(*entries[0], lane=split_lane(letter_id)[0])


def _order(letter_id: str) -> tuple[tuple[int, int], str]:
    """Newest first is this order reversed: by entry id, then lane (two shards may give
    entries the same id, as each stream's sequence starts at 0 every millisecond)."""
    lane, entry_id = split_lane(letter_id)
    return id_order(entry_id), lane


async def _older(
    redis: Redis, keyspace: Keyspace, before: str | None, count: int
) -> list[DeadLetter]:
    """Up to `count` letters of every lane older than letter `before` (None: the newest),
    newest first."""
    lanes = keyspace.lanes()
    top = split_lane(before)[1] if before else "+"
    async with redis.pipeline(transaction=False) as pipe:
        for lane in lanes:
            # inclusive: another lane may hold a letter with the cursor's very id
            pipe.xrevrange(keyspace.dead_letters(lane), max=top, min="-", count=count + 1)
        answers = await pipe.execute()
    letters = [
        DeadLetter.from_entry(entry_id, fields, lane=lane)
        for lane, answer in zip(lanes, answers, strict=True)
        for entry_id, fields in answer
    ]
    if before is not None:
        letters = [letter for letter in letters if _order(letter.id) < _order(before)]
    letters.sort(key=lambda letter: _order(letter.id), reverse=True)
    return letters[:count]


async def list_dead(
    redis: Redis,
    keyspace: Keyspace,
    *,
    before: str | None = None,
    limit: int = 50,
    worker: str | None = None,
    error: str | None = None,
) -> DeadPage:
    """One page of dead letters, newest first, older than the cursor `before`."""
    found: list[DeadLetter] = []
    scanned = 0
    cursor = before
    exhausted = False
    size = 200 if worker or error else limit
    while len(found) < limit and scanned < SCAN_LIMIT:
        batch = await _older(redis, keyspace, cursor, size)
        if not batch:
            exhausted = True
            break
        for letter in batch:
            scanned += 1
            cursor = letter.id
            if matches(letter, worker, error):
                found.append(letter)
                if len(found) == limit:
                    break
        if len(batch) < size and len(found) < limit:
            exhausted = True
            break
    total = await length(redis, keyspace, keyspace.dead_letters)
    following = None if exhausted else cursor
    return DeadPage(items=found, next=following, total=total)
