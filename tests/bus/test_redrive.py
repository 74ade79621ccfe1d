"""Dead letters on real Redis: listed, shown and redriven to completion; a payload that still
cannot be decoded, or a job that cannot be reopened, stays dead with the reason."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable

import pytest
import redis.asyncio as aioredis
from click.testing import Result
from postel.infra.client.client import Client
from postel.infra.runtime.ingress import IngressConsumer
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.redrive import RedriveRefused, redrive, redrive_matching
from postel.infra.runtime.settings import QueueSettings, Settings
from postel.infra.store.deadletter import (
    DeadLetter,
    DeadLetterNotFound,
    Unusable,
    dead_letter,
    list_dead,
    request_of,
)
from postel.infra.store.keys import Keyspace
from postel.messages import JobRequest, JobSubmitted
from support.recording import Breakable

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""


@pytest.fixture
def quick(settings: Settings) -> Settings:
    """Two tries per message, so a broken stage dead-letters quickly."""
    return settings.model_copy(update={"planner": QueueSettings(job_timeout=30, max_tries=2)})


@pytest.fixture
async def broken_system(redis_url: str, quick: Settings) -> AsyncIterator[tuple[Breakable, Client]]:
    breakable = Breakable()
    async with (
        LocalSystem(quick, redis_url=redis_url, specs=breakable.specs()),
        Client(redis_url, quick) as client,
    ):
        yield breakable, client


async def dead_job(client: Client) -> tuple[str, str]:
    """A job whose planner message ran out of tries: (job id, dead letter id)."""
    job_id = await client.submit("needs a second chance")
    record = await client.wait(job_id, timeout=30)
    assert record.failure == "out_of_tries"
    page = await list_dead(client.pool, client.keyspace)
    [letter] = [d for d in page.items if d.job_id == job_id]
    return job_id, letter.id


async def test_a_dead_letter_is_redriven_to_completion(
    broken_system: tuple[Breakable, Client], redis_client: aioredis.Redis
) -> None:
    breakable, client = broken_system
    job_id, entry = await dead_job(client)
    letter = (await list_dead(client.pool, client.keyspace)).items[0]
    assert (letter.worker, letter.message_id, letter.attempt) == ("planner", f"{job_id}:intent", 2)
    assert "backend is down" in letter.error
    breakable.broken = False
    done = await redrive(client.pool, client.events, entry, by="test")
    assert done.message_id == f"{job_id}:intent:redrive1" and done.worker == "planner"
    assert (await client.status(job_id)).status == "running"
    assert await client.result(job_id, timeout=20) == "needs a second chance"
    record = await client.status(job_id)
    assert record.failure is None and record.error is None
    events = await client.events.read(job_id)
    redriven = [e for e in events if e.status == "redriven"]
    assert len(redriven) == 1 and redriven[0].message_id == done.message_id
    assert entry in redriven[0].rationale
    planner = [(e.status, e.attempt) for e in events if e.message_id == done.message_id]
    assert planner[:2] == [("redriven", 1), ("received", 1)], "its tries start again"
    assert await redis_client.xlen(KEYS.dead_letters("")) == 0
    with pytest.raises(DeadLetterNotFound):
        await redrive(client.pool, client.events, entry, by="test")


async def test_the_redriven_id_skips_one_still_held(
    broken_system: tuple[Breakable, Client], redis_client: aioredis.Redis
) -> None:
    breakable, client = broken_system
    job_id, entry = await dead_job(client)
    await redis_client.set(f"arq:result:{job_id}:intent:redrive1", b"{}")
    breakable.broken = False
    done = await redrive(client.pool, client.events, entry, by="test")
    assert done.message_id == f"{job_id}:intent:redrive2"
    assert await client.result(job_id, timeout=20) == "needs a second chance"


async def test_a_job_that_completed_or_was_cancelled_is_not_reopened(
    broken_system: tuple[Breakable, Client], redis_client: aioredis.Redis
) -> None:
    _breakable, client = broken_system
    job_id, entry = await dead_job(client)
    for status, failure, reason in [
        ("completed", "", "its job is completed"),
        ("failed", "cancelled", "its job was cancelled"),
        ("running", "", "its job is running"),
    ]:
        await redis_client.hset(KEYS.job(job_id), mapping={"status": status, "failure": failure})
        with pytest.raises(RedriveRefused, match=reason):
            await redrive(client.pool, client.events, entry, by="test")
    assert await redis_client.xlen(KEYS.dead_letters("")) == 1, "the dead letter stays"
    assert await redis_client.zcard(KEYS.queue("planner")) == 0


async def test_a_poison_payload_stays_dead_with_the_reason(
    redis_url: str, redis_client: aioredis.Redis, settings: Settings
) -> None:
    entry = await dead_letter(
        redis_client, KEYS, source="worker:intent", error="undecodable", payload="plain text"
    )
    wrong = await dead_letter(
        redis_client,
        KEYS,
        source="worker:intent",
        error="invalid",
        payload={"type": "job.submitted", "job_id": "j", "message_id": "j:1"},
    )
    orphan = JobSubmitted(
        job_id="gone", message_id="gone:submitted", request=JobRequest(prompt="x")
    )
    no_job = await dead_letter(
        redis_client,
        KEYS,
        source="worker:gasl",
        error="misrouted",
        payload=orphan.model_dump(mode="json"),
    )
    async with Client(redis_url, settings) as client:
        with pytest.raises(RedriveRefused, match="still cannot be decoded"):
            await redrive(client.pool, client.events, entry, by="test")
        with pytest.raises(RedriveRefused, match="request"):
            await redrive(client.pool, client.events, wrong, by="test")
        with pytest.raises(RedriveRefused, match="job record is gone"):
            await redrive(client.pool, client.events, no_job, by="test")
        with pytest.raises(DeadLetterNotFound):
            await redrive(client.pool, client.events, "not-an-id", by="test")
    assert await redis_client.xlen(KEYS.dead_letters("")) == 3


async def test_a_refused_ingress_entry_is_resubmitted_once_it_can_be(
    relay_system: LocalSystem, settings: Settings, redis_client: aioredis.Redis
) -> None:
    body = json.dumps({"prompt": "about a graph added later", "graph": "later"})
    await redis_client.xadd(KEYS.ingress, {"job": body, "job_id": "late-graph"})
    await redis_client.xadd(KEYS.ingress, {"job": json.dumps({"prompt": ""})})
    async with Client(relay_system.url, settings) as client:
        async with asyncio.timeout(20):
            while (await list_dead(client.pool, client.keyspace)).total < 2:
                await asyncio.sleep(0.05)
        report = await redrive_matching(client.pool, client.events, by="test", worker="ingress")
        assert report.redriven == []
        reasons = sorted(report.refused.values())
        assert "no graph named 'later'" in reasons[0] and "still invalid" in reasons[1]
        await redis_client.sadd(KEYS.graphs, "later")  # the relay workers never load it
        report = await redrive_matching(client.pool, client.events, by="test", error="graph")
        [done] = report.redriven
        assert done.job_id == "late-graph"
        assert await client.result("late-graph", timeout=20) == "about a graph added later"
        assert (await list_dead(client.pool, client.keyspace)).total == 1, "the invalid one stays"


async def test_the_filters_pick_by_worker_and_error(
    redis_url: str, redis_client: aioredis.Redis
) -> None:
    for n in range(5):
        await dead_letter(
            redis_client, KEYS, source="worker:gasl", error=f"Timeout {n}", payload={}
        )
        await dead_letter(
            redis_client, KEYS, source="worker:planner", error=f"Boom {n}", payload={}
        )
    async with Client(redis_url) as client:
        page = await list_dead(client.pool, client.keyspace, worker="gasl", limit=3)
        assert [d.error for d in page.items] == ["Timeout 4", "Timeout 3", "Timeout 2"]
        assert page.total == 10 and page.next is not None
        rest = await list_dead(
            client.pool, client.keyspace, worker="gasl", limit=3, before=page.next
        )
        assert [d.error for d in rest.items] == ["Timeout 1", "Timeout 0"] and rest.next is None
        booms = await list_dead(client.pool, client.keyspace, error="boom 3")
        assert [d.worker for d in booms.items] == ["planner"]


def test_postel_dead_commands(redis_url: str, in_process: Callable[..., Result]) -> None:

    async def poison() -> str:
        async with Client(redis_url) as client:
            return await dead_letter(
                client.pool,
                client.keyspace,
                source="worker:intent",
                error="not a JSON object",
                payload="x",
            )

    entry = asyncio.run(poison())

    def postel(*args: str) -> Result:
        return in_process("dead", *args, env={"POSTEL_REDIS_URL": redis_url})

    listed = postel("list", "--json")
    assert listed.exit_code == 0 and json.loads(listed.stdout)["id"] == entry
    shown = postel("show", entry)
    assert shown.exit_code == 0 and json.loads(shown.stdout)["raw"] == "x"
    refused = postel("redrive", entry)
    assert refused.exit_code == 6 and "stays dead: the payload still cannot be decoded" in (
        refused.stderr
    )
    assert postel("redrive", "1-1").exit_code == 4
    assert postel("redrive").exit_code == 2
    every = postel("redrive", "--all", "--worker", "intent")
    assert every.exit_code == 6 and "redriven 0, refused 1" in every.stderr


def test_postel_dead_list_cuts_long_text_with_an_ellipsis(
    redis_url: str, in_process: Callable[..., Result]
) -> None:
    """A list line keeps its columns: a long error or job id is cut and says so (…), never
    mid-number as if it were whole ("no answer within 1")."""
    error = "the model failed after 3 attempt(s): no answer within 120.0s; " * 3
    job_id = "ingress-1790000000000-0-" + "x" * 20

    async def letter() -> str:
        async with Client(redis_url) as client:
            return await dead_letter(
                client.pool,
                client.keyspace,
                source="worker:intent",
                error=error,
                payload="x",
                job_id=job_id,
            )

    entry = asyncio.run(letter())
    listed = in_process("dead", "list", env={"POSTEL_REDIS_URL": redis_url})
    [line] = [line for line in listed.stdout.splitlines() if line.startswith(entry)]
    shown_job, shown_error = line.split()[4], line.split("  ", 2)[-1].split(None, 2)[-1]
    assert shown_job.endswith("…") and job_id.startswith(shown_job[:-1]), line
    assert shown_error.endswith("…") and error.startswith(shown_error[:-1]), line


@pytest.mark.parametrize("job", ["{not json", '{"prompt": "p",}', "[1, 2"])
def test_a_json_error_is_worded_one_way_in_the_letter_and_its_refusal(job: str) -> None:
    """An ingress entry whose `job` is not JSON: the dead letter's error and a redrive's
    refusal say the same thing in the same words (Python's JSON error, where it breaks),
    never pydantic's second wording of it nor a doubled `message:`."""
    with pytest.raises(ValueError) as refused:
        IngressConsumer._parse({"job": job})
    said = str(refused.value)
    letter = DeadLetter(id="1-0", source="ingress", error=said, raw=json.dumps({"job": job}))
    with pytest.raises(Unusable) as again:
        request_of(letter)
    assert said.startswith("field `job` is not JSON (") and said.endswith(")"), said
    assert str(again.value) == f"the entry is still invalid: {said}"
    assert letter.redrive_blocker in (None, str(again.value))
    for text in (said, str(again.value)):
        assert "Invalid JSON" not in text and "message:" not in text, text
