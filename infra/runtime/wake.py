"""Push, not poll: a worker sleeps on a blocking Redis read until its queue has work.

arq finds work by polling its queue's sorted set on a timer; postel keeps arq's queue (job
keys, the sorted set, the in-progress key, retries and deferral are arq's own; the finish is
arq's without its abort set) and replaces the timer, the start of a job and, for a job that
commits, its finish:

- Wake-ups: whatever puts a message on a queue pushes one token on the queue's wake-up list
  (`Keyspace.wake`, one per lane on a cluster) in the same step: the commit script for
  downstream messages and for submissions and redrives (infra/store/commit.py).
- Sleeping: a worker with a free slot blocks on BLPOP of that list. One token wakes one
  worker, so N idle replicas are not all woken for one message.
- Taking: a worker sends its BLPOP and the take script in one pipeline, so Redis runs the
  take the moment the BLPOP returns (woken, or timed out), with no round trip between. The
  take is ONE Lua script: it reads the ready part of the queue, sets arq's in-progress key on
  up to its free slots' worth of jobs that no one holds, and reads each taken job's payload
  and counts its try, which is what arq's `start_jobs` and the start of its `run_job` do with
  a WATCH/MULTI exchange per job and a pipeline per job. A worker that loses the race for a
  job has spent one round trip, not one per job, and a taken job starts with no further round
  trip. A taken job's score moves to when its lease ends, so the jobs being run lie past the
  ready ones and a take does not look at them again; a job run again (a retry, a worker
  closing) is scored from the time it ends.
- A chain, not a stampede: if ready jobs are left behind (this worker is full) and no token
  is waiting, the script leaves one, which wakes the next idle replica; the full worker takes
  more as soon as one of its own slots frees.
- Fallback: BLPOP times out after `POSTEL_FALLBACK_POLL_S` (or when the earliest deferred job
  falls due, if that is sooner), and the worker looks at the queue anyway. Deferred work
  (arq's `Retry(defer=...)`, scheduled jobs) and a wake-up that was lost (popped by a process
  that died, or by a connection cut before the reply arrived) are thus delayed by at most the
  fallback interval. A token pushed while no worker listens (all busy, or reconnecting) waits
  in the list.
- Bound: a queue's list keeps at most WAKE_TOKENS_MAX tokens (infra/store/keys.py), so a
  burst wakes at most that many idle replicas at once (the chain wakes the rest) and, after
  a burst, at most that many look at the queue and find nothing.

- Finishing: postel's commit script also removes the handled message's job from its queue
  (`FINISHED_BY_JOB`), so a hop that commits costs no finish transaction of arq's; a job that
  ends otherwise (a retry, a failure, a duplicate run) is finished by arq as before.

- Checking: the take also tells, for each job it takes, whether the message must run, what
  a hop otherwise asks in a round trip of its own before its handler starts: `handled` (an
  earlier run committed it: its done marker is set), `job_finished` (its job completed or
  failed, cancelled say), `missing` (its job has no record) or `new`; a `new` message whose
  job is still queued marks the job running. The verdict reaches the job function as
  `ctx["received"]` (infra/runtime/actor.py records the hop's `received` event from it).

A job's try is counted when a worker takes it: a process that dies holding a job has spent
one of the job's tries, whether it died before its handler started or during it. A process
that dies while its BLPOP is pending may still have its take run when a token arrives: the
jobs it took wait out their lease like any job of a dead process.

An idle worker thus sends two commands per fallback interval (a BLPOP that times out, then the
take script). The in-progress key's first expiry is the lease (`POSTEL_LEASE_S`), not arq's
job_timeout + 10 s: a process killed after taking a job, before its handler renews the lease,
frees the job as quickly as one killed mid-handler (infra/runtime/actor.py renews it). The
queue loop rides out Redis outages (infra/store/outage.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

import structlog
from arq import Retry, Worker
from arq.connections import RedisSettings, create_pool
from arq.constants import in_progress_key_prefix, job_key_prefix, retry_key_prefix
from arq.jobs import SerializationError, deserialize_job_raw
from arq.utils import ms_to_datetime, timestamp_ms
from postel.infra.runtime.retries import RedisLost
from postel.infra.store.commit import VERDICT, Received
from postel.infra.store.connect import REDIS_UNAVAILABLE, block_timeout_s, with_outage_errors
from postel.infra.store.keys import Keyspace
from postel.infra.store.outage import RideOut
from postel.infra.store.scripts import LuaScript
from postel.infra.store.turns import FAIR_SHARE, TAKE_TURNS
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

log = structlog.get_logger(__name__)

FINISHED_BY_JOB = True
"""What a job function returns when it removed its own job from the queue (postel's commit
does, in the same script): the worker then skips arq's finish, a round trip."""
RETRY_KEY_EXPIRY_S = 88_400
"""How long arq keeps a job's try count (its own constant, inlined in its worker)."""


@dataclass(frozen=True)
class TakenJob:
    """A job the take script took: its payload (None if its key had expired), try and
    verdict."""

    job_id: str
    score: int  # its score once taken: when its lease ends
    payload: bytes | None
    job_try: int
    verdict: Received  # whether the message must run (module docstring)
    running: str = ""  # the tenant's running set it counts in, if capped (infra/store/turns.py)


Unrunnable = Callable[[str, bytes | None, str, int], Awaitable[None]]
"""Called with (job id, payload, reason, try) for a queue entry arq would drop with a log
line: the worker dead-letters it (infra/runtime/actor.py)."""

Locate = Callable[[], Awaitable[RedisSettings]]
"""Where the queue lives now: on a cluster, the primary of the queue's lane, asked again
after an outage (a failover moves it)."""


# KEYS: queue, wake list, the queue's turns hash and held turns (infra/store/turns.py).
# ARGV: free slots, how many queued jobs to look at, arq's
# in-progress key prefix, in-progress expiry (ms), arq's job key prefix, arq's retry key
# prefix, the retry key's expiry (s), the queue's lane tag, the lane's done marker prefix and
# job record prefix (infra/store/keys.py), the queue's held list prefix; then the tenants'
# cap in flight ('' for none), the caps by tenant (JSON, '' for none) and the queue's running
# set prefix (infra/store/turns.py, `running_set`), and the lane's prefix of the tenants' jobs
# in flight (Keyspace.in_flight; without it every tenant counts 0: plain turns); a message
# whose tenant is at its cap is passed by, ready, and counts as free for the mend.
# Which ready message fills each free slot is fair share's (infra/store/turns.py,
# `FAIR_SHARE`): the slot's class is the next ready message's in score order, its tenant
# the one of that class with the fewest jobs in flight, ties in turn; a take whose job is
# running enters it in flight (`verdict`).
# Each taken job gives its turn to its tenant's next held message (`pass_turn`), which
# enters the queue now; the take reads on to those it let in while it has free slots, and
# if any did enter, it reports jobs left behind, so that this worker (or, with a token, the
# next) looks again at once. A take that finds nothing free to take
# while messages are held mends the turns (`mend_turns`).
# Returns {job id, score, payload ('' if the job key expired), try, verdict, running set ('' if
# uncapped), ...} for the
# jobs taken, 1
# if free ready jobs were left behind, and the score of the earliest job not yet due ('' if
# none among those looked at). One read of the sorted set serves both: it is ordered by due
# time. Due means by Redis's clock, as the script may run long after it was sent (when its
# BLPOP returns), rounded up to the millisecond: arq scores a job with its sender's clock,
# rounded, so a job sent this millisecond is ready.
# The queue is read in pages, a few more than the free slots first, then doubling: its
# front holds the jobs other workers are running, and reading the whole look-ahead at every
# take cost Redis more per hop than the rest of the take (a deep queue after a burst).
# A taken job is scored when its lease ends (its new score is the one returned), after the
# loop so the pages' ranks hold: the jobs being run then lie past the ready ones, and a
# take reads only ready jobs instead of checking every running one's in-progress key each
# time; a job whose worker died is due again as its lease lapses.
# An arq job id is the message id after the lane's tag, and a message id starts with its job
# id up to the first colon (Keyspace.arq_id, ids.job_of): the marker and record are found by
# name, in the queue's own slot.
_TAKE_JOBS = (
    VERDICT
    + TAKE_TURNS
    + FAIR_SHARE
    + """
local function verdict_of(arq_id)
  local message_id = string.sub(arq_id, #ARGV[8] + 1)
  local job_id = string.match(message_id, '^[^:]*')
  return verdict(ARGV[9] .. message_id, ARGV[10] .. job_id, ARGV[15], job_id)
end
local now = redis_now()
local free = tonumber(ARGV[1])
local leased_until = now + tonumber(ARGV[4])
local limit = tonumber(ARGV[2])
local taken = {}  -- six entries per job: id, score, payload, try, verdict, running set
local left_behind = 0
local next_due = ''
local first, page = 0, 2 * free + 8
local looking = true
local promoted, moved_in = 0, 0
local free_seen = false
local read = {}  -- ids read: a message let in can shift ranks, and a page read one again
local share = fair_share(KEYS[3], ARGV[15])
local function take(picked, running)
  local id = picked.id
  redis.call('SET', ARGV[3] .. id, '1', 'PX', ARGV[4])
  local tries = ARGV[6] .. id
  taken[#taken + 1] = id
  taken[#taken + 1] = leased_until
  taken[#taken + 1] = picked.payload
  moved_in = moved_in + pass_turn(KEYS[1], KEYS[3], ARGV[11], picked.payload, now)
  taken[#taken + 1] = redis.call('INCR', tries)
  redis.call('EXPIRE', tries, ARGV[7])
  local seen, entered = verdict_of(id)
  taken[#taken + 1] = seen
  taken[#taken + 1] = running
  if running ~= '' then
    redis.call('SADD', running, id)
  end
  return entered
end
local function fill(final)
  while #taken < 6 * free do
    local picked = fair_pick(share, final)
    if not picked then
      return
    end
    local running = running_set(picked.payload, ARGV[3], ARGV[14], ARGV[12], ARGV[13])
    if running then
      fair_taken(share, picked, take(picked, running))
    else
      fair_capped(share, picked)
    end
  end
end
while looking and first < limit do
  local last = math.min(first + page, limit) - 1
  local queued = redis.call('ZRANGE', KEYS[1], first, last, 'WITHSCORES')
  looking = #queued == 2 * (last - first + 1)
  local stopped = false
  moved_in = 0
  for i = 1, #queued, 2 do
    if tonumber(queued[i + 1]) > now then
      next_due = queued[i + 1]
      looking, stopped = false, true
      break
    end
    local id = queued[i]
    if not read[id] and redis.call('EXISTS', ARGV[3] .. id) == 0 then
      read[id] = true
      free_seen = true
      if #taken >= 6 * free then
        left_behind = 1
        looking, stopped = false, true
        break
      end
      fair_found(share, id, redis.call('GET', ARGV[5] .. id) or '')
      fill(false)
    end
  end
  -- messages a take let in lie behind those read: read on from the last one read
  promoted = promoted + moved_in
  if moved_in > 0 and not stopped then
    looking = true
  end
  first, page = first + #queued / 2, 2 * page
end
moved_in = 0
fill(true)
promoted = promoted + moved_in
if #taken >= 6 * free and fair_waiting(share) then
  left_behind = 1
end
if #taken > 0 then
  local rescored = {}
  for t = 1, #taken, 6 do
    rescored[#rescored + 1] = leased_until
    rescored[#rescored + 1] = taken[t]
  end
  redis.call('ZADD', KEYS[1], 'XX', unpack(rescored))
end
if not free_seen and free > 0 and redis.call('SCARD', KEYS[4]) > 0 then
  promoted = mend_turns(KEYS[1], KEYS[3], KEYS[4], ARGV[11], now)
end
if promoted > 0 then
  left_behind = 1
end
if left_behind == 1 and redis.call('LLEN', KEYS[2]) == 0 then
  redis.call('LPUSH', KEYS[2], '1')
end
return {taken, left_behind, next_due}
"""
)


# KEYS: a tenant's running set, the queue's wake-up list. ARGV: the arq job id.
_LEAVE_RUNNING = LuaScript(
    """
redis.call('SREM', KEYS[1], ARGV[1])
if redis.call('LLEN', KEYS[2]) == 0 then
  redis.call('LPUSH', KEYS[2], '1')
end
return 1
"""
)


class PushWorker(Worker):
    """arq's Worker, woken by its queue's wake-up list instead of polling on a timer."""

    def __init__(
        self,
        *,
        keyspace: Keyspace,
        kind: str,
        wake_key: str,
        fallback_poll_s: float,
        lease_s: float,
        give_up_s: float | None = None,
        unrunnable: Unrunnable | None = None,
        locate: Locate | None = None,
        lane: str = "",
        tenant_cap: int | None = None,
        tenant_caps: dict[str, int] | None = None,
        **arq_options: Any,
    ) -> None:
        super().__init__(poll_delay=fallback_poll_s, **arq_options)
        self.tenant_cap = tenant_cap  # a tenant's messages running at once, if capped
        self.tenant_caps = tenant_caps or {}  # the same, per tenant
        self.keyspace = keyspace
        self.worker_kind = kind  # whose turns and held lists (Keyspace.turns)
        self.lane = lane
        self.unrunnable = unrunnable
        self.locate = locate
        self.wake_key = wake_key
        self.fallback_poll_s = fallback_poll_s
        self.give_up_s = give_up_s
        self.in_progress_timeout_s = lease_s
        self._left_behind = False
        self._next_due_ms: int | None = None
        self._slot_freed = asyncio.Event()
        self._take_script: AsyncScript  # registered once connected

    async def main(self) -> None:
        """Take what is ready, then sleep until woken, a slot frees or the fallback elapses;
        on a Redis outage, retry with backoff (giving up after `give_up_s`, if set)."""
        reconnect = RideOut(f"worker {self.queue_name}", self.give_up_s)
        self._use(await self._connected(reconnect))
        wait = False  # the first look at the queue does not wait
        while True:
            try:
                await self._wait_for_slot()
                await self._take_jobs(wait=wait and not self._left_behind)
                self._reap_finished()
                await self.heart_beat()
                reconnect.succeeded()
                wait = True
            except REDIS_UNAVAILABLE as exc:
                # Back, the loop looks at the queue at once: wake-ups may have been lost.
                wait = False
                await reconnect.failed(exc)
                if self.locate is not None:
                    # the lane's primary may have moved (a failover): connect to where it is
                    # now, then drop the old pool; jobs still running finish on the new one
                    old = self.pool
                    self._use(await self._connected(reconnect))
                    await old.aclose()

    async def _connected(self, reconnect: RideOut) -> Any:
        while True:
            try:
                return await self._connect()
            except REDIS_UNAVAILABLE as exc:
                await reconnect.failed(exc)

    def _use(self, pool: Any) -> None:
        self._pool = pool
        self.ctx["redis"] = pool
        self._take_script = pool.register_script(_TAKE_JOBS)

    async def _connect(self) -> Any:
        settings = await self.locate() if self.locate is not None else self.redis_settings
        assert settings is not None
        pool = await create_pool(
            dataclasses.replace(settings, conn_retries=0),
            job_serializer=self.job_serializer,
            job_deserializer=self.job_deserializer,
            default_queue_name=self.queue_name,
            expires_extra_ms=self.expires_extra_ms,
        )
        return await with_outage_errors(pool)

    async def _take_jobs(self, *, wait: bool) -> None:
        """Take ready jobs; with `wait`, first sleep until woken (or the fallback, or the
        earliest deferred job, is due). Waiting and taking go in one pipeline: Redis runs
        the take script the moment the BLPOP returns, with no round trip between."""
        worker = self.worker_kind
        script_keys = [
            self.queue_name,
            self.wake_key,
            self.keyspace.turns(worker, self.lane),
            self.keyspace.held_turns(worker, self.lane),
        ]
        args = [
            self.max_jobs - self.job_counter,
            self.queue_read_limit,
            in_progress_key_prefix,
            int(self.in_progress_timeout_s * 1000),
            job_key_prefix,
            retry_key_prefix,
            RETRY_KEY_EXPIRY_S,
            self.lane,
            self.keyspace.done_prefix(self.lane),
            self.keyspace.job_prefix(self.lane),
            self.keyspace.held_prefix(worker, self.lane),
            "" if self.tenant_cap is None else self.tenant_cap,
            json.dumps(self.tenant_caps) if self.tenant_caps else "",
            self.keyspace.running_prefix(worker, self.lane),
            self.keyspace.in_flight_prefix(self.lane),
        ]
        timeout = self.fallback_poll_s
        if self._next_due_ms is not None:
            timeout = min(timeout, (self._next_due_ms - timestamp_ms()) / 1000)
        if not wait or timeout <= 0:
            reply = await self._take_script(keys=script_keys, args=args)
        else:
            reply = await self._wait_and_take(timeout, script_keys, args)
        taken, left_behind, next_due = reply
        self._left_behind = bool(left_behind)
        self._next_due_ms = int(float(next_due)) if next_due else None
        for raw_id, score, payload, job_try, verdict, running in zip(
            *[iter(taken)] * 6, strict=True
        ):
            job = TakenJob(
                raw_id.decode(),
                int(float(score)),
                payload or None,
                int(job_try),
                cast(Received, verdict.decode()),
                running.decode() if isinstance(running, bytes) else str(running),
            )
            await self.sem.acquire()
            self.job_counter += 1
            task = asyncio.create_task(self._run_counted(job))
            task.add_done_callback(lambda _: self._release_sem_dec_counter_on_complete())
            self.tasks[job.job_id] = task
        if taken:
            # the taken jobs start (up to their first round trip) before this loop goes on
            # to write its next wait: a hop does not wait for the worker's own bookkeeping
            await asyncio.sleep(0)

    async def _wait_and_take(self, timeout: float, script_keys: list[str], args: list[Any]) -> Any:
        """BLPOP and the take script written together on one connection (a pipeline of two,
        without a Pipeline object, whose cleanup a shutdown can cut short)."""
        pool = self.pool.connection_pool
        connection = await pool.get_connection()
        try:
            blpop = ("BLPOP", self.wake_key, block_timeout_s(timeout))
            take = ("EVALSHA", self._take_script.sha, len(script_keys), *script_keys, *args)
            await connection.send_packed_command(connection.pack_commands([blpop, take]))
            await connection.read_response()
            try:
                reply = await connection.read_response()
            except NoScriptError:
                # Redis lost its script cache (a restart, SCRIPT FLUSH): load it and take
                reply = await self._take_script(keys=script_keys, args=args)
        except BaseException:
            # cut off (an outage, a shutdown) with replies unread: the connection is not reused
            await connection.disconnect(nowait=True)
            raise
        finally:
            await pool.release(connection)
        return reply

    async def _run_counted(self, job: TakenJob) -> None:
        """Run a taken job; one that counted against its tenant's cap in flight then leaves
        the running set and wakes the queue, where the tenant's next message may wait for
        it (infra/store/turns.py)."""
        try:
            await self.run_taken(job)
        finally:
            if job.running:
                with contextlib.suppress(*REDIS_UNAVAILABLE):  # the set mends itself
                    await asyncio.shield(
                        _LEAVE_RUNNING(self.pool, [job.running, self.wake_key], [job.job_id])
                    )

    async def run_taken(self, job: TakenJob) -> None:
        """What arq's `run_job` does once it has read the job, from what the take script read:
        the same checks (expired, unknown function, out of tries), the same timeout, and the
        same endings (done, `Retry` deferred by its delay, cancelled to run again, failed).
        postel keeps no results and uses neither aborts nor arq's job hooks. A job arq would
        drop with a log line (no payload, not callable, out of tries) is handed to
        `unrunnable` first, which dead-letters it."""
        job_id = job.job_id
        if job.payload is None:
            log.warning("the job has no payload", job_id=job_id)
            await self._drop(job, "no payload (its job key is missing, expired or empty)")
            return
        try:
            name, args, kwargs, enqueue_try, enqueue_ms = deserialize_job_raw(
                job.payload, deserializer=self.job_deserializer
            )
            function = self.functions[name]
        except (SerializationError, KeyError) as exc:
            log.error("the job cannot run", job_id=job_id, error=repr(exc))
            await self._drop(job, f"arq cannot run it: {exc!r}")
            return
        job_try = job.job_try
        if enqueue_try and enqueue_try > job_try:
            job_try = enqueue_try
            await self.pool.setex(retry_key_prefix + job_id, RETRY_KEY_EXPIRY_S, str(job_try))
        max_tries = self.max_tries if function.max_tries is None else function.max_tries
        if job_try > max_tries:
            log.warning("the job is out of tries", job_id=job_id, tries=max_tries)
            await self._drop(job, f"out of tries (try {job_try} of at most {max_tries})", job_try)
            return
        ctx = {
            **self.ctx,
            "job_id": job_id,
            "job_try": job_try,
            "enqueue_time": ms_to_datetime(enqueue_ms),
            "score": job.score,
            "received": job.verdict,
        }
        timeout_s = self.job_timeout_s if function.timeout_s is None else function.timeout_s
        finish, removed_by_itself, outage = True, False, False
        defer_ms = 0
        try:
            # run in this task (arq starts one more and waits for it): a hop starts sooner
            async with asyncio.timeout(timeout_s):
                result = await function.coroutine(ctx, *args, **kwargs)
            removed_by_itself = result is FINISHED_BY_JOB
            self.jobs_complete += 1
        except Retry as retry:
            finish, outage = False, isinstance(retry, RedisLost)
            defer_ms = retry.defer_score or 0
            self.jobs_retried += 1
        except asyncio.CancelledError:
            # the worker is closing: the job stays queued and runs again
            finish = False
            self.jobs_retried += 1
        except Exception:
            log.exception("the job failed", job_id=job_id)
            self.jobs_failed += 1
        if finish and removed_by_itself:
            return
        # a job run again is due `defer_ms` from now, not when the lease it was taken on ends
        incr_score = None if finish else defer_ms + timestamp_ms() - job.score
        if outage:
            await asyncio.shield(self._run_again_after_outage(job_id, defer_ms + timestamp_ms()))
            return
        await asyncio.shield(self.finish_job(job_id, finish, None, None, False, incr_score, None))

    async def _run_again_after_outage(self, job_id: str, due_ms: int) -> None:
        """Queue a job whose run lost Redis to run again at `due_ms`, giving back the try
        its take counted (RedisLost)."""
        async with self.pool.pipeline(transaction=True) as transaction:
            transaction.zadd(self.queue_name, {job_id: due_ms}, xx=True)
            transaction.decr(retry_key_prefix + job_id)
            transaction.delete(in_progress_key_prefix + job_id)
            await transaction.execute()

    async def finish_job(
        self,
        job_id: str,
        finish: bool,
        result_data: bytes | None,
        result_timeout_s: float | None,
        keep_result_forever: bool,
        incr_score: int | None,
        keep_in_progress: float | None,
    ) -> None:
        """arq's finish, less its abort set: `arq:abort` is one key for every queue, so on a
        cluster it is in another slot than the job's keys, and postel aborts no job (nor
        keeps a result, nor keeps a lease past its job)."""
        async with self.pool.pipeline(transaction=True) as transaction:
            ended = [in_progress_key_prefix + job_id]
            if finish:
                ended += [retry_key_prefix + job_id, job_key_prefix + job_id]
                transaction.zrem(self.queue_name, job_id)
            elif incr_score:
                transaction.zincrby(self.queue_name, incr_score, job_id)
            transaction.delete(*ended)
            await transaction.execute()

    async def finish_failed_job(self, job_id: str, result_data: bytes | None) -> None:
        await self.finish_job(job_id, True, None, None, False, None, None)

    async def _drop(self, job: TakenJob, reason: str, job_try: int | None = None) -> None:
        self.jobs_failed += 1
        if self.unrunnable is not None:
            attempt = job.job_try if job_try is None else job_try
            await asyncio.shield(self.unrunnable(job.job_id, job.payload, reason, attempt))
        await asyncio.shield(self.finish_failed_job(job.job_id, None))

    def _release_sem_dec_counter_on_complete(self) -> None:
        super()._release_sem_dec_counter_on_complete()
        self._slot_freed.set()

    def _reap_finished(self) -> None:
        """Forget finished jobs; re-raise a job's unexpected error, as arq does. A job that
        lost Redis is not an error of this process: its in-progress key lapses within the
        lease and it runs again."""
        for job_id, task in list(self.tasks.items()):
            if not task.done():
                continue
            del self.tasks[job_id]
            if task.cancelled():
                continue
            error = task.exception()
            if isinstance(error, REDIS_UNAVAILABLE):
                log.warning("a job lost redis; it runs again", job_id=job_id, error=str(error))
            elif error is not None:
                raise error

    async def _wait_for_slot(self) -> None:
        while self.job_counter >= self.max_jobs:
            self._slot_freed.clear()
            await self._slot_freed.wait()
