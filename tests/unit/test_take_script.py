"""The take script (infra/runtime/wake.py) decides which queued jobs a worker takes: only
ready ones, none another worker holds, each under a fresh lease with its try counted and a
verdict on whether it must run, and moved past the ready jobs; what it leaves behind wakes
the next worker. Within a class the tenant with the fewest jobs in flight goes first, ties
in turn (infra/store/turns.py), and a job is in flight from its first take until the script
that ends it. Each decision, in process on fakeredis."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from arq.connections import ArqRedis
from arq.constants import in_progress_key_prefix, job_key_prefix, retry_key_prefix
from postel.infra.runtime.actor import Runtime
from postel.infra.runtime.cancel import cancel_job
from postel.infra.runtime.submit import submit_job
from postel.infra.runtime.wake import _TAKE_JOBS, RETRY_KEY_EXPIRY_S
from postel.infra.store.commit import commit_once
from postel.infra.store.keys import Keyspace
from postel.messages import JobOptions, JobRequest, ids
from postel.messages.job import Priority

LEASE_MS = 5000


async def take(pool: ArqRedis, keyspace: Keyspace, free: int = 10) -> tuple[list[Any], int, Any]:
    """One take by a worker of the intent queue with `free` slots, as PushWorker asks it."""
    script = pool.register_script(_TAKE_JOBS)
    lane = ""
    taken, left_behind, next_due = await script(
        keys=[
            keyspace.queue("intent", lane),
            keyspace.wake("intent", lane),
            keyspace.turns("intent", lane),
            keyspace.held_turns("intent", lane),
        ],
        args=[
            free,
            1000,
            in_progress_key_prefix,
            LEASE_MS,
            job_key_prefix,
            retry_key_prefix,
            RETRY_KEY_EXPIRY_S,
            lane,
            keyspace.done_prefix(lane),
            keyspace.job_prefix(lane),
            keyspace.held_prefix("intent", lane),
            "",
            "",
            keyspace.running_prefix("intent", lane),
            keyspace.in_flight_prefix(lane),
        ],
    )
    jobs = [
        {"id": i.decode(), "score": int(float(s)), "payload": p, "try": int(t), "verdict": v}
        for i, s, p, t, v, _running in zip(*[iter(taken)] * 6, strict=True)
    ]
    return jobs, int(left_behind), next_due


async def submit(
    runtime: Runtime, *job_ids: str, tenant: str = "default", priority: Priority = "normal"
) -> list[str]:
    """The arq ids of the jobs' first messages, queued for intent, each entering a
    millisecond after the one before (a queue orders equal scores by id)."""
    options = JobOptions(tenant=tenant, priority=priority)
    request = JobRequest(prompt="hello", desired_type="str", options=options)
    for job_id in job_ids:
        await submit_job(runtime.pool, runtime.events, runtime.jobs, request, job_id)
        await asyncio.sleep(0.002)
    return [runtime.keyspace.arq_id(ids.message_id(j, ids.SUBMITTED)) for j in job_ids]


async def taken_jobs(runtime: Runtime, takes: int) -> list[str]:
    """The jobs `takes` takes of one free slot each take, in order."""
    order = []
    for _ in range(takes):
        [job], _, _ = await take(runtime.pool, runtime.keyspace, free=1)
        order.append(ids.job_of(job["id"]))
    return order


async def test_a_ready_job_is_taken_leased_counted_and_started(runtime: Runtime) -> None:
    pool, keyspace = runtime.pool, runtime.keyspace
    [arq_id] = await submit(runtime, "j1")
    sent = await pool.zscore(keyspace.queue("intent"), arq_id)
    [job], left_behind, next_due = await take(pool, keyspace)
    assert job["id"] == arq_id and job["verdict"] == b"new" and job["try"] == 1
    assert job["payload"] == await pool.get(job_key_prefix + arq_id)
    assert 0 < await pool.pttl(in_progress_key_prefix + arq_id) <= LEASE_MS
    assert job["score"] - sent >= LEASE_MS, "scored when its lease ends"
    assert await pool.zscore(keyspace.queue("intent"), arq_id) == job["score"]
    assert (await runtime.jobs.get("j1")).status == "running"
    assert (left_behind, next_due) == (0, b"")


async def test_a_job_held_by_another_worker_is_not_taken(runtime: Runtime) -> None:
    pool, keyspace = runtime.pool, runtime.keyspace
    held, free = await submit(runtime, "held", "free")
    await pool.set(in_progress_key_prefix + held, "1", px=LEASE_MS)
    jobs, _, _ = await take(pool, keyspace)
    assert [job["id"] for job in jobs] == [free]


async def test_a_job_not_yet_due_waits_and_says_when(runtime: Runtime) -> None:
    pool, keyspace = runtime.pool, runtime.keyspace
    [arq_id] = await submit(runtime, "later")
    due = int(time.time() * 1000) + 60_000
    await pool.zadd(keyspace.queue("intent"), {arq_id: due})
    jobs, _, next_due = await take(pool, keyspace)
    assert jobs == [] and int(float(next_due)) == due
    assert await pool.exists(in_progress_key_prefix + arq_id) == 0


async def test_a_retaken_job_counts_its_try(runtime: Runtime) -> None:
    """A worker died holding it: once its lease lapses it is taken again, try 2."""
    pool, keyspace = runtime.pool, runtime.keyspace
    [arq_id] = await submit(runtime, "j1")
    await take(pool, keyspace)
    await pool.delete(in_progress_key_prefix + arq_id)  # the lease lapsed
    await pool.zadd(keyspace.queue("intent"), {arq_id: 0})  # and its score fell due
    [job], _, _ = await take(pool, keyspace)
    assert job["try"] == 2


async def test_the_verdict_says_whether_the_message_must_run(runtime: Runtime) -> None:
    pool, keyspace = runtime.pool, runtime.keyspace
    handled, finished, missing = await submit(runtime, "handled", "finished", "missing")
    await pool.set(keyspace.done(ids.message_id("handled", ids.SUBMITTED)), "1")
    await pool.hset(keyspace.job("finished"), "status", "completed")
    await pool.delete(keyspace.job("missing"))
    jobs, _, _ = await take(pool, keyspace)
    verdicts = {job["id"]: job["verdict"] for job in jobs}
    assert verdicts == {handled: b"handled", finished: b"job_finished", missing: b"missing"}


async def test_an_expired_job_key_is_taken_without_a_payload(runtime: Runtime) -> None:
    pool, keyspace = runtime.pool, runtime.keyspace
    [arq_id] = await submit(runtime, "j1")
    await pool.delete(job_key_prefix + arq_id)
    [job], _, _ = await take(pool, keyspace)
    assert job["payload"] == b""


async def test_a_take_fills_the_free_slots_and_wakes_the_next_worker_for_the_rest(
    runtime: Runtime,
) -> None:
    pool, keyspace = runtime.pool, runtime.keyspace
    await submit(runtime, *[f"j{n}" for n in range(7)])
    await pool.delete(keyspace.wake("intent"))
    jobs, left_behind, _ = await take(pool, keyspace, free=5)
    assert len(jobs) == 5, "as many jobs as free slots"
    assert left_behind == 1
    assert await pool.llen(keyspace.wake("intent")) == 1, "a token for the next worker"
    rest, left_behind, _ = await take(pool, keyspace, free=5)
    assert {job["id"] for job in rest}.isdisjoint({job["id"] for job in jobs})
    assert len(rest) == 2 and left_behind == 0


async def test_a_tenant_with_nothing_in_flight_goes_before_a_busy_tenants_waiting_jobs(
    runtime: Runtime,
) -> None:
    """Tenant a has two jobs running and more waiting when b's arrive: b's are taken first,
    although they entered later, until b has as many in flight as a."""
    await submit(runtime, *[f"a{n}" for n in range(6)], tenant="a")
    assert await taken_jobs(runtime, 2) == ["a0", "a1"]
    await submit(runtime, "b0", "b1", "b2", tenant="b")
    assert await taken_jobs(runtime, 5) == ["b0", "b1", "a2", "b2", "a3"]


async def test_tenants_with_as_many_jobs_in_flight_go_in_turn(runtime: Runtime) -> None:
    """Equal loads: the earlier message's tenant goes first (the turn), whatever its name."""
    await submit(runtime, "b0", "b1", tenant="b")
    await submit(runtime, "a0", "a1", tenant="a")
    assert await taken_jobs(runtime, 4) == ["b0", "a0", "b1", "a1"]


async def test_fair_share_orders_tenants_within_a_class_never_classes(runtime: Runtime) -> None:
    """An interactive message of a busy tenant still goes before a normal one of an idle
    tenant: which class is served next is the queue's order."""
    await submit(runtime, "a0", "a1", tenant="a")
    assert await taken_jobs(runtime, 2) == ["a0", "a1"]
    await submit(runtime, "idle", tenant="b")
    await submit(runtime, "urgent", tenant="a", priority="interactive")
    assert await taken_jobs(runtime, 2) == ["urgent", "idle"]


async def test_a_job_is_in_flight_from_its_first_take_until_it_ends_once(
    runtime: Runtime,
) -> None:
    pool, keyspace = runtime.pool, runtime.keyspace
    in_flight = keyspace.in_flight("", "a")
    [arq_id] = await submit(runtime, "j1", tenant="a")
    assert await pool.scard(in_flight) == 0, "queued, not yet in flight"
    await take(pool, keyspace)
    assert await pool.smembers(in_flight) == {b"j1"}
    await pool.delete(in_progress_key_prefix + arq_id)  # its worker died: taken again
    await pool.zadd(keyspace.queue("intent"), {arq_id: 0})
    await take(pool, keyspace)
    assert await pool.smembers(in_flight) == {b"j1"}, "counted once"
    await cancel_job(pool, runtime.events, "j1", by="cli")
    assert await pool.scard(in_flight) == 0
    await pool.delete(in_progress_key_prefix + arq_id)
    await pool.zadd(keyspace.queue("intent"), {arq_id: 0})
    [job], _, _ = await take(pool, keyspace)
    assert job["verdict"] == b"job_finished" and await pool.scard(in_flight) == 0


async def test_a_hop_that_ends_its_job_takes_it_out_of_flight(runtime: Runtime) -> None:
    pool, keyspace = runtime.pool, runtime.keyspace
    await submit(runtime, "done", "running", tenant="a")
    await take(pool, keyspace)
    in_flight = keyspace.in_flight("", "a")
    assert await pool.smembers(in_flight) == {b"done", b"running"}
    for job_id, commands in (
        ("running", [runtime.jobs.running_command("running", "planner")]),
        ("done", [runtime.jobs.finished_command("done", result=4)]),
    ):
        message_id = ids.message_id(job_id, ids.INTENT)
        committed = await commit_once(
            pool,
            keyspace,
            keyspace.done(message_id),
            60,
            commands,
            job_id=job_id,
            message_ttl_s=60,
            record="require",
        )
        assert committed == "committed"
    assert await pool.smembers(in_flight) == {b"running"}
