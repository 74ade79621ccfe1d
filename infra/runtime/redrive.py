"""Redrive: send a dead letter back as a new attempt (`postel dead redrive`, the API, the
dashboard).

A message a worker gave up on (source `worker:<name>`) is decoded from its raw payload and
put back on the queue of its type (so a message that reached the wrong queue goes to the
right one) as a new message:

- id `<original id>:redrive<n>` (n counts redrives of that message): the original id is
  spent, since postel's done marker and arq's job and result keys still hold it, and a
  reused id would be dropped as a duplicate; the new id is refused too if either holds it;
- causation_id the dead message's id, attempt 1 (its tries start again), created now, the
  job's deadline unchanged;
- its job, failed by the dead letter, is reopened: running at the message's stage, the
  failure cleared. A job that completed, was cancelled, or is still running is not
  reopened (a second message would fork it): the dead letter stays.

Enqueueing, reopening the job, the `redriven` event and deleting the dead letter happen in
one Lua script, so a crash leaves either the dead letter or the redriven message, never
neither, never both.

A completion callback given up on (source `callback`) is made due again, its attempts
counted afresh (infra/runtime/callbacks.py).

An ingress entry that was refused (source `ingress`) is submitted again as a job, with its
own `job_id` or `redriven-<dead letter id>`; the dead letter is deleted after the
submission, and a redrive that crashed in between finds the job submitted and only deletes
it. A payload that still cannot be decoded (or a request still invalid) stays dead and the
redrive raises RedriveRefused with the reason, in words. `stays_dead` is the check a redrive
makes before it acts: the letter's own `redrive_blocker` (infra/store/deadletter.py: the
payload does not decode), then its job (a worker's message reopens only a failed job, not a
cancelled one) and its graph (registered); the dashboard asks the same, and offers Redrive
only where it says None.

Discard drops a dead letter for good (`postel dead discard`, the API, the dashboard), one or
all a filter matches, each recorded as a `discarded` event in the global stream (and the
job's, when it names one).
"""

from __future__ import annotations

import json
from typing import Any

from arq.connections import ArqRedis
from postel.infra.runtime.submit import JobConflict, submit_job
from postel.infra.store.commit import RUN_FLAT, QueuedJob, flat
from postel.infra.store.deadletter import (
    CALLBACK_SOURCE,
    DeadLetter,
    DeadLetterNotFound,
    Unusable,
    get_dead,
    letter_stream,
    list_dead,
    message_of,
    request_of,
    summarise_validation,
)
from postel.infra.store.events import Event, EventLog
from postel.infra.store.graphs import GraphNotFound
from postel.infra.store.jobs import JobStore
from postel.infra.store.keys import WAKE_TOKENS_MAX, Keyspace, split_lane
from postel.infra.store.scripts import LuaScript
from postel.messages import Envelope, JobRequest, decode_message, ids, utc_now
from postel.messages.errors import Refused
from pydantic import BaseModel, ValidationError

_ID_ATTEMPTS = 5

# KEYS: the letter's stream. ARGV: its entry id, then the `discarded` event's commands flat.
_DISCARD = LuaScript(
    RUN_FLAT
    + """
local removed = redis.call('XDEL', KEYS[1], ARGV[1])
if removed == 1 then
  run_flat(2, #ARGV)
end
return removed
"""
)

# The redrive of a worker's letter. KEYS: the letter's stream, the job record, the message's
# arq job key, result key and done marker, its queue and wake-up list. ARGV: the entry id, the
# payload, score, lifetime (ms), stage, now, arq job id, the `redriven` event's commands
# (JSON), the wake tokens' max, the lane's prefix of jobs in flight and the job id: the
# reopened job is in flight again from here (infra/store/turns.py), as its end removed it.
_SCRIPT = """
if #redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1]) == 0 then
  return {0, 'gone'}
end
local status = redis.call('HGET', KEYS[2], 'status')
local failure = redis.call('HGET', KEYS[2], 'failure')
if status ~= 'failed' or failure == 'cancelled' then
  return {2, status or '', failure or ''}
end
if redis.call('EXISTS', KEYS[3], KEYS[4], KEYS[5]) > 0 then
  return {3, 'taken'}
end
redis.call('PSETEX', KEYS[3], ARGV[4], ARGV[2])
redis.call('ZADD', KEYS[6], ARGV[3], ARGV[7])
redis.call('LPUSH', KEYS[7], '1')
redis.call('LTRIM', KEYS[7], 0, ARGV[9] - 1)
redis.call('HSET', KEYS[2], 'status', 'running', 'stage', ARGV[5], 'updated_at', ARGV[6])
local tenant = redis.call('HGET', KEYS[2], 'tenant')
if tenant then
  redis.call('SADD', ARGV[10] .. tenant, ARGV[11])
end
redis.call('HDEL', KEYS[2], 'finished_at', 'error', 'failure', 'result')
redis.call('XDEL', KEYS[1], ARGV[1])
for _, command in ipairs(cjson.decode(ARGV[8])) do
  redis.call(unpack(command))
end
return {1, ''}
"""


class Redriven(BaseModel):
    """A dead letter sent back: the job it belongs to, the new message's id and its queue."""

    dead_letter: str
    job_id: str
    message_id: str
    worker: str


class RedriveRefused(Refused):
    """The dead letter stays dead; the message says why."""

    def __init__(self, entry_id: str, reason: str) -> None:
        self.entry_id = entry_id
        self.reason = reason
        super().__init__(f"dead letter {entry_id} stays dead: {reason}")


class RedriveReport(BaseModel):
    redriven: list[Redriven]
    refused: dict[str, str]


def _job_refusal(status: str | None, failure: str | None) -> str | None:
    """Why a worker's dead letter cannot reopen its job, in words; None when it can."""
    if status is None:
        return "its job record is gone (expired, or never created)"
    if status != "failed":
        return f"its job is {status}; only a failed job is reopened"
    if failure == "cancelled":
        return "its job was cancelled"
    return None


def _text(value: bytes | str | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


async def _graph_refusal(pool: ArqRedis, keyspace: Keyspace, graph: str | None) -> str | None:
    if graph is None or await pool.sismember(keyspace.graphs, graph):
        return None
    known = sorted(name.decode() for name in await pool.smembers(keyspace.graphs))
    return str(GraphNotFound(graph, known))


async def stays_dead(pool: ArqRedis, keyspace: Keyspace, letter: DeadLetter) -> str | None:
    """Why a redrive of `letter` cannot work now, in words; None when it may. `redrive`
    checks this first, and the dashboard offers Redrive only where it is None."""
    if letter.redrive_blocker is not None:
        return letter.redrive_blocker
    if letter.source == "ingress":
        _fields, request = request_of(letter)
        return await _graph_refusal(pool, keyspace, request.graph)
    if letter.source == CALLBACK_SOURCE:
        return None  # a callback's redrive checks its job's record itself
    message = message_of(letter)
    status, failure, request = await pool.hmget(
        keyspace.job(message.job_id), ["status", "failure", "request"]
    )
    refusal = _job_refusal(_text(status), _text(failure))
    if refusal is not None or request is None:
        return refusal
    try:
        graph = JobRequest.model_validate_json(request).graph
    except ValidationError:
        return None  # the redrive's own reading of the job decides
    return await _graph_refusal(pool, keyspace, graph)


async def redrive(pool: ArqRedis, events: EventLog, entry_id: str, *, by: str) -> Redriven:
    """Redrive one dead letter (DeadLetterNotFound, RedriveRefused)."""
    letter = await get_dead(pool, events.keyspace, entry_id)
    refusal = await stays_dead(pool, events.keyspace, letter)
    if refusal is not None:
        raise RedriveRefused(letter.id, refusal)
    if letter.source == "ingress":
        return await _resubmit(pool, events, letter, by)
    if letter.source.startswith("worker:"):
        return await _requeue(pool, events, letter, by)
    if letter.source == CALLBACK_SOURCE:
        return await _call_back_again(pool, events, letter, by)
    raise RedriveRefused(letter.id, f"unknown source {letter.source!r}")


async def redrive_matching(
    pool: ArqRedis,
    events: EventLog,
    *,
    by: str,
    worker: str | None = None,
    error: str | None = None,
) -> RedriveReport:
    """Redrive every dead letter of `worker` (or `ingress`) whose error contains `error`
    (all of them without a filter); the ones refused stay, with their reasons."""
    report = RedriveReport(redriven=[], refused={})
    before: str | None = None
    while True:
        page = await list_dead(
            pool, events.keyspace, before=before, limit=200, worker=worker, error=error
        )
        for letter in page.items:
            try:
                report.redriven.append(await redrive(pool, events, letter.id, by=by))
            except RedriveRefused as refused:
                report.refused[letter.id] = refused.reason
        if page.next is None:
            return report
        before = page.next


def _decoded(letter: DeadLetter) -> Envelope:
    try:
        return message_of(letter)
    except Unusable as exc:
        raise RedriveRefused(letter.id, str(exc)) from exc


def _request(letter: DeadLetter) -> tuple[dict[str, Any], JobRequest]:
    try:
        return request_of(letter)
    except Unusable as exc:
        raise RedriveRefused(letter.id, str(exc)) from exc


class Discarded(BaseModel):
    """Dead letters dropped for good, each recorded as a `discarded` event."""

    discarded: list[str]


async def discard(pool: ArqRedis, events: EventLog, entry_id: str, *, by: str) -> Discarded:
    """Drop one dead letter for good (DeadLetterNotFound if it is not there), recording a
    `discarded` event, with its job's events when it names one, in the same round trip."""
    letter = await get_dead(pool, events.keyspace, entry_id)
    event = Event(
        job_id=letter.job_id or "-",
        message_id=letter.message_id or "-",
        type="dead_letter",
        worker=by,
        stage=letter.worker,
        status="discarded",
        rationale=f"dead letter {letter.id}: {letter.error}",
    )
    stream, entry = letter_stream(events.keyspace, letter.id)
    if letter.job_id:
        commands = events.commands(event)
    else:  # no job to file it under: the letter's lane's stream only
        commands = events.jobless_commands(event, split_lane(letter.id)[0])
    # one script, not MULTI (a cluster client has none): the letter's stream and the
    # event's streams are in the letter's lane
    removed = await _DISCARD(pool, [stream], [entry, *flat(commands)])
    if not removed:
        raise DeadLetterNotFound(entry_id)
    return Discarded(discarded=[letter.id])


async def discard_matching(
    pool: ArqRedis,
    events: EventLog,
    *,
    by: str,
    worker: str | None = None,
    error: str | None = None,
) -> Discarded:
    """Discard every dead letter of `worker` (or `ingress`) whose error contains `error`."""
    done = Discarded(discarded=[])
    while True:
        page = await list_dead(pool, events.keyspace, limit=200, worker=worker, error=error)
        for letter in page.items:
            try:
                done.discarded.extend((await discard(pool, events, letter.id, by=by)).discarded)
            except DeadLetterNotFound:
                continue  # redriven or discarded meanwhile
        if not page.items:
            return done


def _next_id(message_id: str, skip: int) -> str:
    base, n = ids.redrive_of(message_id)
    return ids.redrive(base, n + 1 + skip)


async def _requeue(pool: ArqRedis, events: EventLog, letter: DeadLetter, by: str) -> Redriven:
    dead = _decoded(letter)
    script = pool.register_script(_SCRIPT)
    for skip in range(_ID_ATTEMPTS):
        data = dead.model_dump(mode="json")
        data.update(
            message_id=_next_id(dead.message_id, skip),
            causation_id=dead.message_id,
            attempt=1,
            created_at=utc_now().isoformat(),
        )
        try:
            message = decode_message(data)
        except ValidationError as exc:
            reason = f"cannot build the new message: {summarise_validation(exc)}"
            raise RedriveRefused(letter.id, reason) from exc
        assert message.destination is not None  # _decoded refused terminal types
        # a redriven message enters its queue at once, taking no turn of its tenant's
        job_key, result_key, queue, arq_id, score, ttl, payload, wake = QueuedJob(
            message, events.job_ttl_s, events.keyspace
        ).fields()[:8]
        event = Event(
            job_id=message.job_id,
            message_id=message.message_id,
            type=message.type,
            worker=by,
            stage=message.destination,
            status="redriven",
            rationale=f"dead letter {letter.id}: {letter.error}",
        )
        stream, entry = letter_stream(events.keyspace, letter.id)
        code, *detail = await script(
            keys=[
                stream,
                events.keyspace.job(message.job_id),
                job_key,
                result_key,
                events.keyspace.done(message.message_id),
                queue,
                wake,
            ],
            args=[
                entry,
                payload,
                score,
                ttl,
                message.destination,
                utc_now().isoformat(),
                arq_id,
                json.dumps(events.commands(event)),
                WAKE_TOKENS_MAX,
                events.keyspace.in_flight_prefix(events.keyspace.lane_of(message.job_id)),
                message.job_id,
            ],
        )
        if code == 1:
            return Redriven(
                dead_letter=letter.id,
                job_id=message.job_id,
                message_id=message.message_id,
                worker=message.destination,
            )
        if code == 0:
            raise RedriveRefused(letter.id, "it was redriven meanwhile")
        if code == 2:
            status, failure = (_text(value) or None for value in detail)
            reason = _job_refusal(status, failure) or "its job cannot be reopened"
            raise RedriveRefused(letter.id, reason)
    raise RedriveRefused(letter.id, f"no free message id after {_ID_ATTEMPTS} tries")


# KEYS: the letter's stream, the job record, the lane's callbacks set and wake-up list.
# ARGV: the letter's entry id, the job id, now (ms), then the `redriven` event's commands flat.
_CALL_BACK_AGAIN = LuaScript(
    RUN_FLAT
    + """
if redis.call('XDEL', KEYS[1], ARGV[1]) == 0 then
  return 0
end
if redis.call('HEXISTS', KEYS[2], 'callback_url') == 0 then
  return -1
end
redis.call('HDEL', KEYS[2], 'callback_status', 'callback_attempts', 'callback_first_ms')
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[2])
redis.call('LPUSH', KEYS[4], '1')
redis.call('LTRIM', KEYS[4], 0, 0)
run_flat(4, #ARGV)
return 1
"""
)


async def _call_back_again(
    pool: ArqRedis, events: EventLog, letter: DeadLetter, by: str
) -> Redriven:
    """A callback that was given up on is made due again, its attempts counted afresh; the
    receiver sees the same webhook-id (infra/runtime/callbacks.py)."""
    job_id = letter.job_id
    keyspace = events.keyspace
    lane = keyspace.lane_of(job_id)
    event = Event(
        job_id=job_id,
        message_id=letter.message_id or "-",
        type="callback",
        worker=by,
        stage="done",
        status="redriven",
        rationale=f"dead letter {letter.id}: {letter.error}",
    )
    stream, entry = letter_stream(keyspace, letter.id)
    done = await _CALL_BACK_AGAIN(
        pool,
        [stream, keyspace.job(job_id), keyspace.callbacks(lane), keyspace.callbacks_wake(lane)],
        [entry, job_id, int(utc_now().timestamp() * 1000), *flat(events.commands(event))],
    )
    if done == 0:
        raise RedriveRefused(letter.id, "it was redriven meanwhile")
    if done == -1:
        raise RedriveRefused(letter.id, "its job record is gone or names no callback")
    return Redriven(dead_letter=letter.id, job_id=job_id, message_id="-", worker=CALLBACK_SOURCE)


async def _resubmit(pool: ArqRedis, events: EventLog, letter: DeadLetter, by: str) -> Redriven:
    fields, request = _request(letter)
    entry = split_lane(letter.id)[1]
    job_id = fields.get("job_id") or f"redriven-{entry.replace('-', '_')}"
    jobs = JobStore(pool, events.keyspace, events.job_ttl_s)
    try:
        # Idempotent: an earlier redrive that submitted and stopped before deleting the dead
        # letter makes this a no-op.
        await submit_job(pool, events, jobs, request, job_id, source=by)
    except (JobConflict, GraphNotFound, ValueError, ValidationError) as exc:
        raise RedriveRefused(letter.id, str(exc)) from exc
    await pool.xdel(*letter_stream(events.keyspace, letter.id))
    return Redriven(
        dead_letter=letter.id,
        job_id=job_id,
        message_id=ids.message_id(job_id, ids.SUBMITTED),
        worker="intent",
    )
