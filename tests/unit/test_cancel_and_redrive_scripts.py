"""Cancel, redrive and discard each decide in one script (infra/runtime/cancel.py,
infra/runtime/redrive.py) whether they may act on a job or a dead letter, and act wholly or
not at all. Each decision, in process on fakeredis."""

from __future__ import annotations

import pytest
from postel.infra.runtime.actor import Runtime
from postel.infra.runtime.cancel import JobAlreadyFinished, cancel_job
from postel.infra.runtime.redrive import RedriveRefused, discard, redrive
from postel.infra.runtime.submit import submit_job
from postel.infra.store.deadletter import DeadLetterNotFound, dead_letter_command, list_dead
from postel.infra.store.jobs import JobNotFound
from postel.messages import IntentAnalyzed, JobRequest, ids
from postel.messages.intent import Intent
from postel.messages.task import JobProgress

REQUEST = JobRequest(prompt="What is 2+2?", desired_type="int")


async def submit(runtime: Runtime, job_id: str) -> None:
    await submit_job(runtime.pool, runtime.events, runtime.jobs, REQUEST, job_id)


async def statuses(runtime: Runtime, job_id: str) -> list[str]:
    return [event.status for event in await runtime.events.read(job_id)]


async def test_cancel_fails_a_running_job_with_its_terminal_event(runtime: Runtime) -> None:
    await submit(runtime, "j1")
    await cancel_job(runtime.pool, runtime.events, "j1", by="cli", reason="not needed")
    record = await runtime.jobs.get("j1")
    assert (record.status, record.failure) == ("failed", "cancelled")
    assert record.error == "cancelled by cli: not needed"
    assert (await statuses(runtime, "j1"))[-1] == "failed"
    assert await runtime.pool.xlen(runtime.keyspace.results("")) == 1


async def test_cancel_refuses_a_finished_job_and_an_unknown_one(runtime: Runtime) -> None:
    await submit(runtime, "j1")
    await cancel_job(runtime.pool, runtime.events, "j1", by="cli")
    with pytest.raises(JobAlreadyFinished, match="failed \\(cancelled\\)"):
        await cancel_job(runtime.pool, runtime.events, "j1", by="cli")
    assert (await statuses(runtime, "j1")).count("failed") == 1, "nothing written again"
    with pytest.raises(JobNotFound):
        await cancel_job(runtime.pool, runtime.events, "nobody", by="cli")


def planner_message(job_id: str) -> IntentAnalyzed:
    intent = Intent(detected_language="en", normalized_request="q", intent="q", primary_goal="q")
    return IntentAnalyzed(
        job_id=job_id,
        message_id=ids.message_id(job_id, ids.INTENT),
        request=REQUEST,
        progress=JobProgress(intent=intent),
    )


async def dead_planner_message(runtime: Runtime, job_id: str, status: str = "failed") -> str:
    """A planner message its worker gave up on, its job left `status`: the letter's id."""
    await submit(runtime, job_id)
    await runtime.pool.hset(runtime.keyspace.job(job_id), mapping={"status": status})
    message = planner_message(job_id)
    command = dead_letter_command(
        runtime.keyspace,
        source="worker:planner",
        error="out of tries",
        payload=message.model_dump(mode="json"),
        job_id=job_id,
        message_id=message.message_id,
        attempt=3,
    )
    return (await runtime.pool.execute_command(*command)).decode()


async def test_redrive_requeues_reopens_records_and_deletes_at_once(runtime: Runtime) -> None:
    pool, keyspace = runtime.pool, runtime.keyspace
    letter = await dead_planner_message(runtime, "j1")
    redriven = await redrive(pool, runtime.events, letter, by="cli")
    assert redriven.message_id == ids.redrive(ids.message_id("j1", ids.INTENT), 1)
    assert redriven.worker == "planner"
    assert await pool.zrange(keyspace.queue("planner"), 0, -1) == [
        keyspace.arq_id(redriven.message_id).encode()
    ]
    record = await runtime.jobs.get("j1")
    assert (record.status, record.stage, record.failure) == ("running", "planner", None)
    assert (await statuses(runtime, "j1"))[-1] == "redriven"
    assert (await list_dead(pool, keyspace, limit=10)).items == []
    in_flight = keyspace.in_flight("", "default")
    assert await pool.smembers(in_flight) == {b"j1"}, "reopened: in flight again"


async def test_a_cancel_ends_a_job_in_flight_once(runtime: Runtime) -> None:
    """The job's end takes it out of its tenant's jobs in flight (infra/store/turns.py) in
    the cancel's own script; a second cancel changes nothing."""
    pool, keyspace = runtime.pool, runtime.keyspace
    await submit(runtime, "j1")
    in_flight = keyspace.in_flight("", "default")
    await pool.sadd(in_flight, "j1", "other")
    await cancel_job(pool, runtime.events, "j1", by="cli")
    assert await pool.smembers(in_flight) == {b"other"}
    with pytest.raises(JobAlreadyFinished):
        await cancel_job(pool, runtime.events, "j1", by="cli")
    assert await pool.smembers(in_flight) == {b"other"}


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ("completed", "its job is completed; only a failed job is reopened"),
        ("running", "its job is running; only a failed job is reopened"),
    ],
)
async def test_redrive_leaves_the_letter_where_the_job_is_not_failed(
    runtime: Runtime, status: str, reason: str
) -> None:
    letter = await dead_planner_message(runtime, "j1", status=status)
    with pytest.raises(RedriveRefused, match=reason):
        await redrive(runtime.pool, runtime.events, letter, by="cli")
    assert [d.id for d in (await list_dead(runtime.pool, runtime.keyspace, limit=10)).items] == [
        letter
    ]
    assert await runtime.pool.zcard(runtime.keyspace.queue("planner")) == 0


async def test_redrive_refuses_a_cancelled_job_and_a_lost_record(runtime: Runtime) -> None:
    cancelled = await dead_planner_message(runtime, "c")
    await runtime.pool.hset(runtime.keyspace.job("c"), "failure", "cancelled")
    with pytest.raises(RedriveRefused, match="its job was cancelled"):
        await redrive(runtime.pool, runtime.events, cancelled, by="cli")
    lost = await dead_planner_message(runtime, "l")
    await runtime.pool.delete(runtime.keyspace.job("l"))
    with pytest.raises(RedriveRefused, match="its job record is gone"):
        await redrive(runtime.pool, runtime.events, lost, by="cli")


async def test_a_redrive_id_already_spent_moves_to_the_next(runtime: Runtime) -> None:
    letter = await dead_planner_message(runtime, "j1")
    spent = ids.redrive(ids.message_id("j1", ids.INTENT), 1)
    await runtime.pool.set(runtime.keyspace.done(spent), "1")
    redriven = await redrive(runtime.pool, runtime.events, letter, by="cli")
    assert redriven.message_id == ids.redrive(ids.message_id("j1", ids.INTENT), 2)


async def test_discard_drops_the_letter_once_and_records_it(runtime: Runtime) -> None:
    letter = await dead_planner_message(runtime, "j1")
    assert (await discard(runtime.pool, runtime.events, letter, by="web")).discarded == [letter]
    assert (await statuses(runtime, "j1"))[-1] == "discarded"
    with pytest.raises(DeadLetterNotFound):
        await discard(runtime.pool, runtime.events, letter, by="web")
