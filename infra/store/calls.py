"""Every model call a job makes, recorded with the job: what was asked and what came back.

A hop's calls are written by the hop's commit (one RPUSH per call onto `postel:calls:<job>`,
inside the commit script), so they land exactly when the hop's outcome does: a handler that
ran twice because its worker died records the calls of the run that committed, once; a hop
that failed records none. The list expires with the job record. What is recorded is the
request as the model received it (messages, JSON Schema, max_tokens, temperature, stop, model)
and the answer (text, finish reason, usage, model); credentials are never part of a request.
A prompt or answer over MAX_RECORDED_CALL_BYTES is cut and marked `truncated`.

A model attempt that failed has no answer to record; it is counted instead, in the job
record's `failed_llm_calls`: by the hop's commit when the hop went on to succeed, else at
once by `count_failed_calls` (a hop that failed commits nothing), so a job whose every call
failed does not show zero calls.

Recording is on unless POSTEL_RECORD_CALLS=false. `postel calls JOB` shows them,
`postel export` writes them out and `postel replay` serves them back (infra/client/replay.py).
"""

from __future__ import annotations

from postel.infra.store.events import Command
from postel.infra.store.keys import Keyspace
from postel.messages.limits import MAX_RECORDED_CALL_BYTES
from postel.services.llm.call_log import LoggedCall
from postel.services.llm.models import ChatMessage, LLMRequest, LLMResponse
from pydantic import BaseModel, Field
from redis.asyncio import Redis


class RecordedCall(BaseModel):
    """One model call of a job: the hop (stage, message id), its ordinal in the hop, the
    request and the answer."""

    stage: str
    message_id: str
    ordinal: int = Field(ge=0, description="the call's place among its hop's calls, from 0")
    request: LLMRequest
    response: LLMResponse
    truncated: bool = Field(
        default=False, description="the prompt or answer was cut to MAX_RECORDED_CALL_BYTES"
    )
    capability: str = Field(default="", description="the prompt style of the model asked")

    @classmethod
    def of(cls, call: LoggedCall) -> RecordedCall:
        request, response, truncated = call.request, call.response, False
        prompt_chars = sum(len(message.content) for message in request.messages)
        if _may_exceed(prompt_chars) and _size(request.prompt_text()) > MAX_RECORDED_CALL_BYTES:
            request = request.model_copy(update={"messages": _cut_messages(request.messages)})
            truncated = True
        if _may_exceed(len(response.text)) and _size(response.text) > MAX_RECORDED_CALL_BYTES:
            response = response.model_copy(update={"text": _cut(response.text)})
            truncated = True
        return cls(
            stage=call.stage,
            message_id=call.message_id,
            ordinal=call.ordinal,
            request=request,
            response=response,
            truncated=truncated,
            capability=call.capability,
        )


def record_commands(
    keyspace: Keyspace, calls: list[LoggedCall], job_id: str, ttl_s: int
) -> list[Command]:
    """The commands that record a hop's calls, for its commit."""
    if not calls:
        return []
    key = keyspace.job_calls(job_id)
    return [
        *(["RPUSH", key, RecordedCall.of(call).model_dump_json()] for call in calls),
        ["EXPIRE", key, str(ttl_s)],
    ]


_COUNT_FAILED = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('HINCRBY', KEYS[1], 'failed_llm_calls', ARGV[1])
end
return 0
"""


async def count_failed_calls(redis: Redis, keyspace: Keyspace, job_id: str, count: int) -> None:
    """Add a failed hop's failed model attempts to its job record (if the record is still
    there: a count never recreates an expired record without its expiry)."""
    if count > 0:
        await redis.eval(_COUNT_FAILED, 1, keyspace.job(job_id), str(count))


async def read_calls(redis: Redis, keyspace: Keyspace, job_id: str) -> list[RecordedCall]:
    raw = await redis.lrange(keyspace.job_calls(job_id), 0, -1)
    return [RecordedCall.model_validate_json(entry) for entry in raw]


async def last_calls(
    redis: Redis, keyspace: Keyspace, job_id: str, count: int
) -> tuple[int, list[RecordedCall]]:
    """How many calls the job made, and the last `count` of them (one round trip)."""
    key = keyspace.job_calls(job_id)
    async with redis.pipeline(transaction=False) as pipe:
        pipe.llen(key)
        pipe.lrange(key, -count, -1)
        total, raw = await pipe.execute()
    return int(total), [RecordedCall.model_validate_json(entry) for entry in raw]


def _may_exceed(chars: int) -> bool:
    """A text of `chars` characters may be over the limit (UTF-8 takes at most 4 bytes each);
    most are far under it and are not encoded to be measured."""
    return chars * 4 > MAX_RECORDED_CALL_BYTES


def _size(text: str) -> int:
    return len(text.encode("utf-8", "replace"))


def _cut(text: str) -> str:
    return text.encode("utf-8", "replace")[:MAX_RECORDED_CALL_BYTES].decode("utf-8", "ignore")


def _cut_messages(messages: list[ChatMessage]) -> list[ChatMessage]:
    """The messages, each cut to an equal share of the limit."""
    share = MAX_RECORDED_CALL_BYTES // max(len(messages), 1)
    return [
        ChatMessage(
            role=message.role,
            content=message.content.encode("utf-8", "replace")[:share].decode("utf-8", "ignore"),
        )
        for message in messages
    ]
