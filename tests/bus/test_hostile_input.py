"""Hostile input never stops the system: every entry or payload that used to kill a worker,
or to leave a job running forever, is dead-lettered or fails its job with a readable error,
and a valid job sent afterwards completes."""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest
import redis.asyncio as aioredis
from postel.infra.client.client import Client, JobFailedError
from postel.infra.runtime.actor import HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.ingress import INGRESS_KEEP_ENTRY_BYTES, IngressConsumer
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.redrive import RedriveRefused, redrive
from postel.infra.runtime.settings import Settings
from postel.infra.store.deadletter import (
    DEAD_LETTER_RAW_BYTES,
    EXCERPT_CHARS,
    dead_letter,
    get_dead,
    list_dead,
)
from postel.infra.store.keys import Keyspace
from postel.infra.store.wire import connect_arq
from postel.messages import GenerationCompleted, JobCompleted

from postel.testing.relay import RELAY_WORKERS

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


KILLERS = [
    pytest.param(
        {"job": json.dumps({"prompt": "x", "options": {"deadline_s": 1e300}})},
        "options.deadline_s: Input should be less than or equal to 2592000",
        id="deadline-1e300",
    ),
    pytest.param(
        {"job": json.dumps({"prompt": "x", "options": {"deadline_s": 1e12}})},
        "options.deadline_s",
        id="deadline-1e12",
    ),
    pytest.param(
        {"job": '{"prompt": "x", "options": {"deadline_s": Infinity}}'},
        "options.deadline_s: Input should be a finite number",
        id="deadline-infinity",
    ),
    pytest.param(
        {"job": '{"prompt": "x", "arguments": {"a": ' + nested(1000) + "}}"},
        "field `job` nesting limit is 64; got depth 65 or more",
        id="job-1000-deep",
    ),
    pytest.param(
        {"job": json.dumps({"prompt": "x", "desired_type": "list[" * 1200 + "int" + "]" * 1200})},
        "type nesting limit is 16",
        id="type-list-x1200",
    ),
    pytest.param(
        {"job": json.dumps({"prompt": "x", "arguments": {"a": json.loads(nested(40))}})},
        "arguments nesting limit is 32; got depth 33 or more",
        id="arguments-40-deep",
    ),
    pytest.param(
        {"job": json.dumps({"prompt": "x" * 2_000_000})},
        "field `job` size limit is 1,048,576; got 2000014 bytes",
        id="job-2MB",
    ),
    pytest.param(
        {
            "job": json.dumps(
                {"prompt": "x", "desired_type": {"properties": {"a": {"type": "nosuchtype"}}}}
            )
        },
        "unknown JSON Schema type ['nosuchtype'] at $.a",
        id="desired-type-unknown-schema-type",
    ),
    pytest.param(
        {"job": json.dumps({"prompt": "x"}), "job_id": "ingress-1_0"},
        "",  # an id of the reserved form is the ingress's own: accepted
        id="reserved-id-from-ingress",
    ),
]


@pytest.mark.parametrize(("fields", "expected_error"), KILLERS)
async def test_a_killer_ingress_entry_is_dead_lettered_and_ingress_goes_on(
    relay_system: LocalSystem,
    settings: Settings,
    redis_client: aioredis.Redis,
    fields: dict[str, str],
    expected_error: str,
) -> None:
    await redis_client.xadd(KEYS.ingress, fields)
    await redis_client.xadd(
        KEYS.ingress, {"job": json.dumps({"prompt": "next"}), "job_id": "after"}
    )
    async with Client(relay_system.url, settings) as client:
        assert await client.result("after", timeout=20) == "next"
    dead = [
        {k.decode(): v.decode() for k, v in f.items()}
        for _id, f in await redis_client.xrange(KEYS.dead_letters(""))
    ]
    if not expected_error:
        assert dead == []
        return
    assert len(dead) == 1, dead
    assert dead[0]["source"] == "ingress"
    assert expected_error in dead[0]["error"]
    assert (await redis_client.xpending(KEYS.ingress, KEYS.ingress_group))["pending"] == 0
    job_records = [k for k in await redis_client.keys("postel:job:*") if b":after" not in k]
    assert job_records == [], "a refused entry left a record behind"


ARQ_SHAPED_POISON = [
    {"t": "x", "f": "handle", "a": [{}], "k": {}, "et": 1},
    {"t": 1, "f": "handle", "a": [{}], "k": {}, "et": "y"},
    {"t": 1, "f": "teleport", "a": [{}], "k": {}, "et": 1},
    {"f": "handle", "a": [{}]},
    {"t": 1, "f": "handle", "a": [{}, {}], "k": {}, "et": 1},
]


async def test_arq_shaped_poison_is_dead_lettered_and_no_worker_dies(
    relay_system: LocalSystem, settings: Settings, redis_client: aioredis.Redis
) -> None:
    queue = KEYS.queue("intent")
    for n, payload in enumerate(ARQ_SHAPED_POISON):
        await redis_client.set(f"arq:job:poison{n}", json.dumps(payload))
        await redis_client.zadd(queue, {f"poison{n}": 1})
    await redis_client.set("arq:job:deep", nested(5000).encode())
    await redis_client.zadd(queue, {"deep": 1})
    async with Client(relay_system.url, settings) as client:
        job_id = await client.submit("still alive")
        assert await client.result(job_id, timeout=20) == "still alive"
    for _ in range(100):
        if await redis_client.xlen(KEYS.dead_letters("")) >= len(ARQ_SHAPED_POISON) + 1:
            break
        await asyncio.sleep(0.05)
    dead = [
        {k.decode(): v.decode() for k, v in f.items()}
        for _id, f in await redis_client.xrange(KEYS.dead_letters(""))
    ]
    assert len(dead) == len(ARQ_SHAPED_POISON) + 1
    assert all(d["source"] == "worker:intent" for d in dead)
    assert all(d["error"].startswith("undecodable message") for d in dead), dead
    assert await redis_client.zcard(queue) == 0


def validator_answering(result: object) -> WorkerSpec:
    async def handle(message: object, runtime: Runtime) -> HopOutcome:
        assert isinstance(message, GenerationCompleted)
        return HopOutcome([message.derive(JobCompleted, "completed", result=result)])

    return WorkerSpec("validator", (GenerationCompleted,), handle)


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        pytest.param(10**5000, "Exceeds the limit", id="int-5000-digits"),
        pytest.param(json.loads(nested(900)), "depth", id="result-900-deep"),
    ],
)
async def test_an_outcome_that_cannot_be_stored_fails_the_job_instead_of_leaving_it_running(
    redis_url: str, settings: Settings, result: object, expected: str
) -> None:
    specs = [*RELAY_WORKERS[:4], validator_answering(result)]
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
        Client(system.url, settings) as client,
    ):
        job_id = await client.submit("x")
        with pytest.raises(JobFailedError) as failure:
            await client.result(job_id, timeout=20)
    assert failure.value.status == "invalid_request"
    assert "could not store its outcome" in failure.value.error
    assert expected in failure.value.error


async def test_deleting_the_ingress_stream_under_a_running_consumer_does_not_kill_it(
    relay_system: LocalSystem, settings: Settings, redis_client: aioredis.Redis
) -> None:
    async with Client(relay_system.url, settings) as client:
        await redis_client.xadd(KEYS.ingress, {"job": json.dumps({"prompt": "a"}), "job_id": "a"})
        assert await client.result("a", timeout=20) == "a"
        await redis_client.delete(KEYS.ingress)
        await redis_client.xadd(KEYS.ingress, {"job": json.dumps({"prompt": "b"}), "job_id": "b"})
        assert await client.result("b", timeout=20) == "b"


async def test_acknowledged_ingress_entries_are_trimmed_beyond_the_cap(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    pool = await connect_arq(redis_url)
    try:
        consumer = IngressConsumer(Runtime.create(pool, KEYS, settings), keep=5, trim_every=1)
        await consumer.ensure_group()
        for n in range(30):
            await redis_client.xadd(KEYS.ingress, {"job": json.dumps({"prompt": f"p{n}"})})
        while await consumer.run_once(count=10):
            pass
        unread = await redis_client.xadd(KEYS.ingress, {"job": json.dumps({"prompt": "late"})})
        assert await redis_client.xlen(KEYS.ingress) <= 6
        remaining = [entry_id for entry_id, _ in await redis_client.xrange(KEYS.ingress)]
        assert unread in remaining, "an entry not yet read was trimmed"
        assert len(await redis_client.keys("postel:job:ingress-*")) == 30
    finally:
        await pool.aclose()


async def test_a_large_result_is_stored_once_in_the_record_not_in_the_results_stream(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    large, small = "x" * 100_000, "small"
    for value in (large, small):
        specs = [*RELAY_WORKERS[:4], validator_answering(value)]
        async with (
            LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
            Client(system.url, settings) as client,
        ):
            assert await client.result(await client.submit("x"), timeout=20) == value
    entries = [
        {k.decode(): v.decode() for k, v in f.items()}
        for _id, f in await redis_client.xrange(KEYS.results(""))
    ]
    assert [(e["status"], e.get("in"), "message" in e) for e in entries] == [
        ("completed", "record", False),
        ("completed", None, True),
    ]


async def test_large_entries_are_kept_neither_in_ingress_nor_whole_in_dead_letters(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    """Nine 3.6 MB entries once kept 33 MB of ingress stream and five 1 MB dead payloads sat
    whole: now a handled entry over INGRESS_KEEP_ENTRY_BYTES leaves the stream, and a dead
    letter keeps an excerpt with the payload's size and sha256."""
    pool = await connect_arq(redis_url)
    try:
        consumer = IngressConsumer(Runtime.create(pool, KEYS, settings))
        await consumer.ensure_group()
        huge = {"job": json.dumps({"prompt": "x" * 3_600_000})}
        for _ in range(9):
            await redis_client.xadd(KEYS.ingress, huge)
        for n in range(3):
            big = json.dumps({"prompt": "y" * (INGRESS_KEEP_ENTRY_BYTES + 1)})
            await redis_client.xadd(KEYS.ingress, {"job": big, "job_id": f"big-{n}"})
        small = await redis_client.xadd(
            KEYS.ingress, {"job": json.dumps({"prompt": "small"}), "job_id": "small"}
        )
        while await consumer.run_once(count=10):
            pass
        assert [entry_id for entry_id, _ in await redis_client.xrange(KEYS.ingress)] == [small]
        assert await redis_client.memory_usage(KEYS.ingress) < 64 * 1024
        for n in range(3):
            assert await redis_client.exists(KEYS.job(f"big-{n}")), "the request is kept there"
        letters = (await list_dead(redis_client, KEYS, limit=50)).items
        assert len(letters) == 9
        whole = json.dumps(huge, ensure_ascii=False).encode()
        for letter in letters:
            assert "size limit" in letter.error
            assert letter.raw_bytes == len(whole)
            assert letter.raw_sha256 == hashlib.sha256(whole).hexdigest()
            assert len(letter.raw) < EXCERPT_CHARS + 200
            assert f"[cut: {len(whole)} bytes in all, sha256 {letter.raw_sha256}]" in letter.raw
        assert await redis_client.memory_usage(KEYS.dead_letters("")) < 9 * DEAD_LETTER_RAW_BYTES
    finally:
        await pool.aclose()


async def test_a_dead_payload_over_the_bound_is_an_excerpt_that_redrive_refuses(
    redis_url: str, redis_client: aioredis.Redis, settings: Settings
) -> None:
    message = {"type": "generation.completed", "job_id": "j", "text": "z" * 1_000_000}
    kept = {"type": "generation.completed", "job_id": "j", "text": "z" * 60_000}
    ids = [
        await dead_letter(redis_client, KEYS, source="worker:validator", error="e", payload=message)
        for _ in range(5)
    ]
    kept_id = await dead_letter(
        redis_client, KEYS, source="worker:validator", error="e", payload=kept
    )
    for entry_id in ids:
        letter = await get_dead(redis_client, KEYS, entry_id)
        assert letter.raw_bytes == len(json.dumps(message)) and len(letter.raw) < 5_000
    whole = await get_dead(redis_client, KEYS, kept_id)
    assert json.loads(whole.raw) == kept and whole.raw_sha256 == ""
    pool = await connect_arq(redis_url)
    try:
        events = Runtime.create(pool, KEYS, settings).events
        with pytest.raises(RedriveRefused, match="its payload was cut when dead-lettered"):
            await redrive(pool, events, ids[0], by="test")
    finally:
        await pool.aclose()
