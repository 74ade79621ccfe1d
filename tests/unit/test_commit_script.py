"""The commit script (infra/store/commit.py) decides, atomically, what a hop's outcome may
write: once per message, nothing for a finished job, nothing but a dead letter where the job
has no record, and a resubmission clears what a lost job left. The receive script decides
whether a message must run. Each decision, in process on fakeredis."""

from __future__ import annotations

from arq.connections import ArqRedis
from arq.constants import job_key_prefix
from postel.infra.runtime.actor import Runtime
from postel.infra.runtime.submit import submit_job
from postel.infra.store.commit import commit_once, receive_once
from postel.infra.store.events import Command, Event
from postel.infra.store.keys import WAKE_TOKENS_MAX, Keyspace
from postel.messages import IntentAnalyzed, JobRequest, JobSubmitted, decode_message, ids
from postel.messages.intent import Intent
from postel.messages.task import JobProgress

REQUEST = JobRequest(prompt="What is 2+2?", desired_type="int")


async def submitted(runtime: Runtime, job_id: str = "j1") -> JobSubmitted:
    await submit_job(runtime.pool, runtime.events, runtime.jobs, REQUEST, job_id)
    return JobSubmitted(
        job_id=job_id, message_id=ids.message_id(job_id, ids.SUBMITTED), request=REQUEST
    )


def analyzed(message: JobSubmitted) -> IntentAnalyzed:
    intent = Intent(detected_language="en", normalized_request="q", intent="q", primary_goal="q")
    return message.derive(
        IntentAnalyzed, ids.INTENT, request=REQUEST, progress=JobProgress(intent=intent)
    )


def marker(key: str) -> Command:
    return ["SET", key, "written"]


async def commit(
    runtime: Runtime, message: JobSubmitted, commands: list[Command], **options: object
) -> str:
    keyspace = runtime.keyspace
    return await commit_once(
        runtime.pool,
        keyspace,
        keyspace.done(message.message_id),
        60,
        commands,
        [analyzed(message)],
        job_id=message.job_id,
        message_ttl_s=600,
        **options,  # type: ignore[arg-type]
    )


async def queued(pool: ArqRedis, keyspace: Keyspace, worker: str) -> list[bytes]:
    return await pool.zrange(keyspace.queue(worker), 0, -1)


async def test_a_commit_enqueues_wakes_and_records_once(runtime: Runtime) -> None:
    pool, keyspace = runtime.pool, runtime.keyspace
    message = await submitted(runtime)
    assert await commit(runtime, message, [marker("outcome")]) == "committed"
    [job] = await queued(pool, keyspace, "planner")
    next_message = analyzed(message)
    assert job.decode() == keyspace.arq_id(next_message.message_id)
    assert await pool.exists(job_key_prefix + job.decode()) == 1
    assert await pool.llen(keyspace.wake("planner")) == 1
    assert await pool.get("outcome") == b"written"
    assert 0 < await pool.ttl(keyspace.done(message.message_id)) <= 60

    await pool.delete("outcome")
    assert await commit(runtime, message, [marker("outcome")]) == "duplicate"
    assert await pool.exists("outcome") == 0, "a second run writes nothing"
    assert len(await queued(pool, keyspace, "planner")) == 1
    assert await pool.llen(keyspace.wake("planner")) == 1


async def test_a_message_arq_already_holds_is_not_enqueued_again(runtime: Runtime) -> None:
    pool, keyspace = runtime.pool, runtime.keyspace
    message = await submitted(runtime)
    arq_job = job_key_prefix + keyspace.arq_id(analyzed(message).message_id)
    await pool.set(arq_job, b"held")
    assert await commit(runtime, message, []) == "committed"
    assert await queued(pool, keyspace, "planner") == []
    assert await pool.get(arq_job) == b"held"


async def test_a_finished_job_takes_only_the_dropped_commands(runtime: Runtime) -> None:
    pool, keyspace = runtime.pool, runtime.keyspace
    message = await submitted(runtime)
    await pool.hset(keyspace.job("j1"), "status", "failed")
    asked = []

    def dropped() -> list[Command]:
        asked.append(True)
        return [marker("dropped")]

    result = await commit(runtime, message, [marker("outcome")], dropped=dropped)
    assert result == "refused"
    assert asked == [True], "the rare commands are made only when needed"
    assert await pool.get("dropped") == b"written"
    assert await pool.exists("outcome") == 0
    assert await queued(pool, keyspace, "planner") == []
    assert await pool.exists(keyspace.done(message.message_id)) == 1


async def test_a_commit_needing_no_rare_commands_never_makes_them(runtime: Runtime) -> None:
    message = await submitted(runtime)

    def never() -> list[Command]:
        raise AssertionError("made although the job is running")

    assert await commit(runtime, message, [], dropped=never, missing=never) == "committed"


async def test_a_job_without_a_record_gets_only_its_dead_letter(runtime: Runtime) -> None:
    pool, keyspace = runtime.pool, runtime.keyspace
    message = JobSubmitted(job_id="ghost", message_id="ghost:submitted", request=REQUEST)
    result = await commit(
        runtime,
        message,
        [marker("outcome")],
        record="require",
        missing=lambda: [marker("dead letter")],
    )
    assert result == "missing"
    assert await pool.get("dead letter") == b"written"
    assert await pool.exists("outcome", keyspace.job("ghost")) == 0, "no record made up"
    assert await pool.exists(keyspace.done(message.message_id)) == 0, "a resubmission runs"
    assert await queued(pool, keyspace, "planner") == []


async def test_a_resubmission_after_a_lost_record_clears_what_the_job_left(
    runtime: Runtime,
) -> None:
    pool, keyspace = runtime.pool, runtime.keyspace
    message = await submitted(runtime, "lost")
    assert await commit(runtime, message, []) == "committed"
    planner = analyzed(message)
    await runtime.events.record(
        Event(
            job_id="lost",
            message_id=planner.message_id,
            type=planner.type,
            worker="planner",
            stage="planner",
            status="received",
        )
    )
    await pool.set(keyspace.done(planner.message_id), "1")
    await pool.delete(keyspace.job("lost"))  # lost in a failover's replication window
    await submitted(runtime, "lost")
    assert await pool.exists(keyspace.done(planner.message_id)) == 0
    assert [e.status for e in await runtime.events.read("lost")] == ["submitted"]
    assert (await runtime.jobs.get("lost")).status == "queued"


async def test_mark_running_never_revives_a_finished_job(runtime: Runtime) -> None:
    pool, keyspace = runtime.pool, runtime.keyspace
    first = await submitted(runtime, "j1")
    await submitted(runtime, "j2")
    await pool.hset(keyspace.job("j2"), "status", "completed")
    commands = [
        runtime.jobs.running_command("j1", "planner"),
        runtime.jobs.running_command("j2", "planner"),
    ]
    assert await commit(runtime, first, commands) == "committed"
    assert (await runtime.jobs.get("j1")).stage == "planner"
    assert (await runtime.jobs.get("j2")).status == "completed"


async def test_the_wake_up_list_is_bounded(runtime: Runtime) -> None:
    pool, keyspace = runtime.pool, runtime.keyspace
    wake = keyspace.wake("planner")
    await pool.lpush(wake, *["1"] * WAKE_TOKENS_MAX)
    assert await commit(runtime, await submitted(runtime), []) == "committed"
    assert await pool.llen(wake) == WAKE_TOKENS_MAX


async def test_receive_says_whether_a_message_must_run(runtime: Runtime) -> None:
    pool, keyspace = runtime.pool, runtime.keyspace
    message = await submitted(runtime)
    done = keyspace.done(message.message_id)

    async def receive(job_id: str = "j1") -> str:
        return await receive_once(pool, keyspace, done, job_id, [marker("received")])

    assert await receive("nobody") == "missing"
    assert await pool.exists("received") == 0
    assert await receive() == "new"
    assert await pool.get("received") == b"written", "received is recorded for a new one"
    assert (await runtime.jobs.get("j1")).status == "running", "a queued job starts running"
    await pool.delete("received")
    await pool.hset(keyspace.job("j1"), "status", "completed")
    assert await receive() == "job_finished"
    await pool.set(done, "1")
    assert await receive() == "handled"
    assert await pool.exists("received") == 0


async def test_the_committed_message_decodes_as_sent(runtime: Runtime) -> None:
    """What the script stored under arq's job key is arq's format around the message."""
    from arq.jobs import deserialize_job_raw
    from postel.infra.store.wire import loads

    message = await submitted(runtime)
    await commit(runtime, message, [])
    [job] = await queued(runtime.pool, runtime.keyspace, "planner")
    raw = await runtime.pool.get(job_key_prefix + job.decode())
    _, args, _, _, _ = deserialize_job_raw(raw, deserializer=loads)
    sent = decode_message(args[0])
    assert isinstance(sent, IntentAnalyzed) and sent.causation_id == message.message_id
