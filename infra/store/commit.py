"""Commit once: a message's done marker, its downstream messages and the records of its
handling, atomically.

One Lua script sets `postel:done:<message_id>` if absent and, only then (unless the job has
finished, below):
- puts each downstream message on its queue the way arq's own `enqueue_job` does (the job
  under `arq:job:<id>`, its id in the queue's sorted set), skipping an id
  arq already holds or has a result for — so a message is never forked — and wakes one worker
  of that queue (a token on its wake-up list, infra/runtime/wake.py);
- runs the given record commands (event XADDs, the job record, the results stream).
A handler that runs twice therefore commits once, and a crash before the commit leaves
nothing half-done: the re-run does it all. Nothing downstream can start before its
upstream's commit, in one round trip.

A message whose job has already finished (completed, or failed for any reason: cancelled, a
dead-lettered message) commits nothing: the script sets its done marker and runs only the
`dropped` commands (an event saying the outcome was discarded), enqueues nothing and writes
no record, so a handler that was running when its job was cancelled cannot revive it.

A queued message lives as long as its job's record (POSTEL_JOB_TTL_S, 7 days by default),
not arq's one day: a queue whose workers are all down over a weekend loses nothing, and a
message outlives the record it would update by no more than the time it waited.

Two record commands are postel's own: `MARK_RUNNING key stage at` sets the job record to
running at `stage` unless the job already finished (a dead-lettered message may have failed
it meanwhile); `CALLBACK_IF_ASKED key callbacks wake job at` makes the job's completion
callback due if its record names a callback URL (infra/runtime/callbacks.py).

A hop commits only while its job record exists (`record="require"`): a message whose record
is gone (expired, deleted, or lost in a Redis failover's replication window) commits
nothing and runs only the `missing` commands (its dead letter, "job record missing"): no
record fields written into a fresh hash without request or expiry, nothing enqueued, no done
marker, so a resubmission under the same id runs the job afresh. A submission
(`record="create"`) writes the record itself; its marker without a record is stale (the
record was lost), so the submission goes ahead and first clears what the lost job left: its
events and the done markers they name.

The `dropped` and `missing` commands are made and sent only when a commit needs them: the
first call of the script leaves them out and, finding the job finished or its record gone,
returns having changed nothing; the second call, with them, decides again atomically.

`receive_once` is the check at the start of a hop, in one round trip: whether the message
was committed already, its job finished or its record is missing; only a message that will
run records `received`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, cast

from arq.constants import job_key_prefix, result_key_prefix
from arq.jobs import serialize_job
from postel.infra.store.events import Command
from postel.infra.store.keys import WAKE_TOKENS_MAX, Keyspace
from postel.infra.store.scripts import LuaScript
from postel.infra.store.turns import (
    CLASS_ADVANCE_MS,
    ENQUEUE,
    GIVE_TURN,
    LEAVE_IN_FLIGHT,
    turn_of,
)
from postel.infra.store.wire import ARQ_FUNCTION, dumps
from postel.messages import Envelope
from postel.messages.envelope import utc_now
from redis.asyncio import Redis

CommitResult = Literal["committed", "duplicate", "refused", "missing"]
_RESULTS: dict[int, CommitResult] = {1: "committed", 0: "duplicate", -1: "refused", -2: "missing"}
_RESEND_WITH_RARE = -3
RareCommands = Callable[[], list[Command]]
"""Makes the commands of a commit's rare outcome (refused, missing) when it happens."""
RecordMode = Literal["require", "create", "any"]
JOB_RECORD_MISSING = "job record missing"
"""The error of a message dead-lettered because its job has no record."""

QUEUED_FIELDS = 12
"""What one queued message is to the commit script (`QueuedJob.fields`)."""


# Commands travel flat, not as JSON: each is its number of words, then its words, so the
# script runs them without decoding anything (cjson.decode was a third of the script's time).
# `RUN_FLAT` runs the commands in ARGV[first..last] so laid out; `handled(i)`, when given, may
# run the command at ARGV[i] itself (true) instead.
RUN_FLAT = """
local function run_flat(first, last, handled)
  local i = first
  while i <= last do
    local words = tonumber(ARGV[i])
    if not (handled and handled(i)) then
      redis.call(unpack(ARGV, i + 1, i + words))
    end
    i = i + words + 1
  end
end
"""

# KEYS: done marker, job record, job events. ARGV: done ttl, wake tokens max, record mode,
# done marker prefix, then how many ARGV entries each of four sections takes (commands,
# queued jobs, dropped commands, missing commands), whether the last two were sent ('1') or
# left out ('0'), the job's lane's prefix of jobs in flight and the job id, then the
# sections in that order: the commands flat, each queued job as its
# QUEUED_FIELDS fields (QueuedJob.fields), entering its queue or its tenant's held list
# (infra/store/turns.py). A job record is a hash with a status: one HGET says whether
# it exists and whether the job has finished, and MARK_RUNNING on this job's record goes by
# that status (a commit that marks its job running does not also finish it). Where the
# record exists, SET NX both checks and writes the done marker. A commit whose commands
# write the record (an HSET of it: its end, or a submission's new record) reads its status
# after them, and a job that has just ended leaves its tenant's jobs in flight
# (infra/store/turns.py); a hop that only marks its job running reads nothing more.
# The dropped and missing commands (an event, a dead letter with the whole payload) are
# rarely run but would double what every commit sends: they are left out, and a commit that
# needs them returns -3 having changed nothing, to be sent again with them.
_SCRIPT = (
    RUN_FLAT
    + ENQUEUE
    + LEAVE_IN_FLIGHT
    + f"local QUEUED_FIELDS = {QUEUED_FIELDS}\n"
    + """
local job_status = redis.call('HGET', KEYS[2], 'status')
local commands_at = 12
local rare_sent = ARGV[9] == '1'
local jobs_at = commands_at + tonumber(ARGV[5])
local dropped_at = jobs_at + tonumber(ARGV[6])
local missing_at = dropped_at + tonumber(ARGV[7])
local missing_end = missing_at + tonumber(ARGV[8]) - 1
if not job_status then
  local marked = redis.call('EXISTS', KEYS[1]) == 1
  if ARGV[3] == 'require' then
    if marked then
      return 0
    end
    if not rare_sent then
      return -3
    end
    run_flat(missing_at, missing_end)
    return -2
  end
  if marked then
    if ARGV[3] ~= 'create' then
      return 0
    end
    for _, entry in ipairs(redis.call('XRANGE', KEYS[3], '-', '+')) do
      local fields = entry[2]
      for i = 1, #fields, 2 do
        if fields[i] == 'message_id' then
          redis.call('DEL', ARGV[4] .. fields[i + 1])
        end
      end
    end
    redis.call('DEL', KEYS[3])
  end
  redis.call('SET', KEYS[1], '1', 'EX', ARGV[1])
else
  local finished = job_status == 'completed' or job_status == 'failed'
  if finished and not rare_sent then
    if redis.call('EXISTS', KEYS[1]) == 1 then
      return 0
    end
    return -3
  end
  if not redis.call('SET', KEYS[1], '1', 'EX', ARGV[1], 'NX') then
    return 0
  end
  if finished then
    run_flat(dropped_at, missing_at - 1)
    return -1
  end
end
for j = jobs_at, dropped_at - 1, QUEUED_FIELDS do
  local job_key, result_key, queue, job_id, score, ttl, payload, wake, turns, turn, held,
    held_turns = unpack(ARGV, j, j + QUEUED_FIELDS - 1)
  if redis.call('EXISTS', job_key, result_key) == 0 then
    redis.call('PSETEX', job_key, ttl, payload)
    enqueue(queue, job_id, score, wake, turns, turn, held, held_turns, ARGV[2])
  end
end
local function callback_if_asked(i)
  if redis.call('HEXISTS', ARGV[i + 2], 'callback_url') == 1 then
    redis.call('ZADD', ARGV[i + 3], ARGV[i + 6], ARGV[i + 5])
    redis.call('LPUSH', ARGV[i + 4], '1')
    redis.call('LTRIM', ARGV[i + 4], 0, 0)
  end
  return true
end
local record_written = false
local function mark_running(i)
  if ARGV[i + 1] == 'CALLBACK_IF_ASKED' then
    return callback_if_asked(i)
  end
  if ARGV[i + 1] == 'HSET' and ARGV[i + 2] == KEYS[2] then
    record_written = true
  end
  if ARGV[i + 1] ~= 'MARK_RUNNING' then
    return false
  end
  local status = job_status
  if ARGV[i + 2] ~= KEYS[2] then
    status = redis.call('HGET', ARGV[i + 2], 'status')
  end
  if status ~= 'completed' and status ~= 'failed' then
    redis.call('HSET', ARGV[i + 2], 'status', 'running', 'stage', ARGV[i + 3],
               'updated_at', ARGV[i + 4])
  end
  return true
end
run_flat(commands_at, jobs_at - 1, mark_running)
if record_written then
  local status = redis.call('HGET', KEYS[2], 'status')
  if status == 'completed' or status == 'failed' then
    leave_in_flight(KEYS[2], ARGV[10], ARGV[11])
  end
end
return 1
"""
)


def flat(commands: list[Command]) -> list[str | int]:
    """`commands` as the scripts take them: each command's number of words, then its words."""
    laid_out: list[str | int] = []
    for command in commands:
        laid_out.append(len(command))
        laid_out.extend(command)
    return laid_out


@dataclass(frozen=True)
class QueuedJob:
    """A downstream message as arq stores it, under the keys `keyspace` names. It enters its
    queue scored by its class (infra/store/turns.py), or at `due_ms` if that is later than
    now (a deferred job), taking no turn of its tenant's while it waits."""

    message: Envelope
    lives_s: int
    keyspace: Keyspace
    due_ms: int | None = None

    def fields(self) -> list[str | int]:
        """The message's arq job key, result key, queue, arq job id, score, lifetime (ms),
        payload and wake-up list; then its queue's turns hash, its `<class>|<tenant>` ('' for
        a deferred message), its held list and the queue's held turns."""
        assert self.message.destination is not None
        job_id = self.keyspace.arq_id(self.message.message_id)
        lane = self.keyspace.lane_of(self.message.job_id)
        # A message is created when it is sent: its hop's wait (the `received` event's
        # wait_ms) measures the bus, not the work its sender did after building it.
        sent = self.message.model_copy(update={"created_at": utc_now()})
        now = int(sent.created_at.timestamp() * 1000)
        payload = serialize_job(
            ARQ_FUNCTION, (sent.model_dump(mode="json"),), {}, None, now, serializer=dumps
        )
        worker = self.message.destination
        deferred = self.due_ms is not None and self.due_ms > now
        turn = "" if deferred else turn_of(self.message.priority, self.message.tenant)
        return [
            job_key_prefix + job_id,
            result_key_prefix + job_id,
            self.keyspace.queue(worker, lane),
            job_id,
            self.due_ms if deferred else now - CLASS_ADVANCE_MS[self.message.priority],
            self.lives_s * 1000,
            payload.decode(),
            self.keyspace.wake(worker, lane),
            self.keyspace.turns(worker, lane),
            turn,
            self.keyspace.held(worker, lane, turn),
            self.keyspace.held_turns(worker, lane),
        ]


_COMMIT = LuaScript(_SCRIPT)


async def commit_once(
    redis: Redis,
    keyspace: Keyspace,
    done_key: str,
    ttl_s: int,
    commands: list[Command],
    downstream: list[Envelope] | None = None,
    *,
    job_id: str,
    message_ttl_s: int,
    dropped: RareCommands | None = None,
    record: RecordMode = "any",
    missing: RareCommands | None = None,
    due_ms: int | None = None,
) -> CommitResult:
    """`committed` by this call; `duplicate` if the message was already committed; `refused`
    if job `job_id` had finished (only the `dropped` commands ran); `missing` if `record` is
    "require" and the job has no record (only the `missing` commands ran). `dropped` and
    `missing` are called for their commands only when the commit needs them. Downstream
    messages stay queued for up to `message_ttl_s`, their job record's lifetime, and fall
    due at `due_ms` if given (a deferred submission)."""
    recorded = flat(commands)
    # last, as each downstream message is stamped sent as it is serialised
    jobs = [
        field
        for message in downstream or []
        for field in QueuedJob(message, message_ttl_s, keyspace, due_ms).fields()
    ]
    script_keys = [done_key, keyspace.job(job_id), keyspace.job_events(job_id)]
    # the stale markers a resubmission clears are its job's, so in its lane
    marker_prefix = keyspace.done_prefix(keyspace.lane_of(job_id))
    head = [ttl_s, WAKE_TOKENS_MAX, record, marker_prefix, len(recorded), len(jobs)]
    in_flight = [keyspace.in_flight_prefix(keyspace.lane_of(job_id)), job_id]
    rare = dropped is not None or missing is not None
    args = [*head, 0, 0, int(not rare), *in_flight, *recorded, *jobs]
    result = int(await _COMMIT(redis, script_keys, args))
    if result == _RESEND_WITH_RARE:
        if_refused = flat(dropped() if dropped is not None else [])
        if_missing = flat(missing() if missing is not None else [])
        sizes = [len(if_refused), len(if_missing), 1]
        args = [*head, *sizes, *in_flight, *recorded, *jobs, *if_refused, *if_missing]
        result = int(await _COMMIT(redis, script_keys, args))
    return _RESULTS[result]


Received = Literal["new", "handled", "job_finished", "missing"]

VERDICT = """
local function verdict(done_key, record, in_flight_prefix, job_id)
  if redis.call('EXISTS', done_key) == 1 then
    return 'handled', 0
  end
  local read = redis.call('HMGET', record, 'status', 'tenant')
  local status, tenant = read[1], read[2]
  if not status then
    return 'missing', 0
  end
  if status == 'completed' or status == 'failed' then
    return 'job_finished', 0
  end
  if status == 'queued' then
    redis.call('HSET', record, 'status', 'running')
    if tenant and in_flight_prefix and in_flight_prefix ~= '' then
      return 'new', redis.call('SADD', in_flight_prefix .. tenant, job_id)
    end
  end
  return 'new', 0
end
"""
"""Lua: whether a message must run (`Received`), from its done marker and its job's record;
a queued job becomes running and enters its tenant's jobs in flight (infra/store/turns.py:
the second value is 1 when it has just entered; a job reopened by a redrive entered then).
The receive script and the take script (infra/runtime/wake.py) both ask it."""

# KEYS: done marker, job record, and the message's queue, its turns hash and its held list.
# ARGV: the message's `<class>|<tenant>` and class, its lane's prefix of jobs in flight, its
# job id, then the `received` commands flat. The
# lease needs no renewal here: the take script set it a moment ago (infra/runtime/wake.py).
# The hop was taken by arq's own Worker (a PushWorker's take tells the verdict and passes the
# turn itself), so it gives its tenant's turn here (infra/store/turns.py).
_RECEIVE = (
    RUN_FLAT
    + VERDICT
    + GIVE_TURN
    + """
give_turn(KEYS[3], KEYS[4], KEYS[5], ARGV[1], ARGV[2], redis_now())
local seen = verdict(KEYS[1], KEYS[2], ARGV[3], ARGV[4])
if seen == 'new' then
  run_flat(5, #ARGV)
end
return seen
"""
)


_RECEIVE_SCRIPT = LuaScript(_RECEIVE)


async def receive_once(
    redis: Redis,
    keyspace: Keyspace,
    message: Envelope,
    worker: str,
    received: list[Command],
) -> Received:
    """Learn whether `message`, taken from `worker`'s queue by arq's own Worker, must run:
    `handled` (an earlier run committed it), `job_finished`, `missing` (no job record), or
    `new`, and only then record `received`. A queued job becomes running here: its first hop
    runs from now, not from when it commits. The message gives its tenant's turn in the
    queue to the next held message (infra/store/turns.py)."""
    lane = keyspace.lane_of(message.job_id)
    turn = turn_of(message.priority, message.tenant)
    keys = [
        keyspace.done(message.message_id),
        keyspace.job(message.job_id),
        keyspace.queue(worker, lane),
        keyspace.turns(worker, lane),
        keyspace.held(worker, lane, turn),
    ]
    args = [turn, message.priority, keyspace.in_flight_prefix(lane), message.job_id]
    reply = await _RECEIVE_SCRIPT(redis, keys, [*args, *flat(received)])
    return cast(Received, reply.decode() if isinstance(reply, bytes) else str(reply))
