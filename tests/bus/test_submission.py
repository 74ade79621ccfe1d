"""Submission is one atomic step and idempotent by job id: a crash at any point loses no
job, a retried submission runs nothing twice, and a different job under a taken id is a
clear conflict."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import textwrap

import pytest
import redis.asyncio as aioredis
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import Settings
from postel.infra.runtime.submit import JobConflict
from postel.infra.store.keys import Keyspace
from postel.messages import TypeSpec
from postel.services.validation import UnsupportedSchemaError

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""


async def test_resubmitting_the_same_job_is_a_no_op_that_returns_it(
    relay_system: LocalSystem, settings: Settings
) -> None:
    async with Client(relay_system.url, settings) as client:
        first = await client.submit("same", job_id="idem")
        assert await client.result(first, timeout=20) == "same"
        again = await client.submit("same", job_id="idem")
        assert again == first
        events = await client.events.read("idem")
    assert [e.status for e in events].count("submitted") == 1
    assert [e.type for e in events].count("job.completed") == 1


async def test_a_different_request_under_a_taken_id_is_a_conflict(
    relay_system: LocalSystem, settings: Settings
) -> None:
    async with Client(relay_system.url, settings) as client:
        await client.submit("one thing", job_id="taken")
        with pytest.raises(JobConflict, match="'taken' already exists with a different request"):
            await client.submit("another thing", job_id="taken")
        assert await client.result("taken", timeout=20) == "one thing"


async def test_ids_of_the_ingress_form_are_reserved_for_ingress(
    relay_system: LocalSystem, settings: Settings
) -> None:
    async with Client(relay_system.url, settings) as client:
        with pytest.raises(ValueError, match="reserved for ingress"):
            await client.submit("pre-empt", job_id="ingress-1700000000000_0")


async def test_a_bad_desired_type_is_refused_by_submit_before_anything_is_written(
    relay_system: LocalSystem, settings: Settings, redis_client: aioredis.Redis
) -> None:
    bad = TypeSpec.model_validate({"kind": "list", "items": {"type": "nosuchtype"}})
    async with Client(relay_system.url, settings) as client:
        with pytest.raises(UnsupportedSchemaError, match=r"unknown JSON Schema type"):
            await client.submit("x", type=bad, job_id="bad-type")
    assert not await redis_client.exists(KEYS.job("bad-type"))


async def test_an_ingress_entry_conflicting_with_a_job_is_dead_lettered(
    relay_system: LocalSystem, settings: Settings, redis_client: aioredis.Redis
) -> None:
    async with Client(relay_system.url, settings) as client:
        await client.submit("original", job_id="dup")
        assert await client.result("dup", timeout=20) == "original"
        await redis_client.xadd(
            KEYS.ingress, {"job": json.dumps({"prompt": "impostor"}), "job_id": "dup"}
        )
        await redis_client.xadd(
            KEYS.ingress, {"job": json.dumps({"prompt": "original"}), "job_id": "dup"}
        )
        await redis_client.xadd(
            KEYS.ingress, {"job": json.dumps({"prompt": "next"}), "job_id": "next"}
        )
        assert await client.result("next", timeout=20) == "next"
        assert (await client.status("dup")).result == "original"
    dead = [
        {k.decode(): v.decode() for k, v in f.items()}
        for _id, f in await redis_client.xrange(KEYS.dead_letters(""))
    ]
    assert len(dead) == 1, "the identical resubmission is a no-op, not a dead letter"
    assert "conflicting ingress entry" in dead[0]["error"]
    assert "impostor" in dead[0]["raw"]


SUBMITTER = textwrap.dedent(
    """
    import asyncio, sys
    from postel.infra.client.client import Client
    from postel.infra.runtime.settings import Settings

    async def main() -> None:
        async with Client(sys.argv[1], Settings()) as client:
            for n in range(int(sys.argv[2])):
                await client.submit(f"job {n}", job_id=f"crash-{n}")
                print(n, flush=True)

    asyncio.run(main())
    """
)


async def test_a_submitter_killed_at_any_point_loses_no_job_and_duplicates_none(
    relay_system: LocalSystem, settings: Settings, redis_client: aioredis.Redis
) -> None:
    """A producer is SIGKILLed mid-submission, again and again, and retries every job it was
    asked to submit: each job runs exactly once, none is left half-written."""
    count = 40
    env = {**os.environ, "POSTEL_LOG_LEVEL": "WARNING"}
    rng = random.Random(7)
    for _ in range(6):
        process = subprocess.Popen(
            [sys.executable, "-c", SUBMITTER, relay_system.url, str(count)],
            env=env,
            stdout=subprocess.DEVNULL,
        )
        await asyncio.sleep(rng.uniform(0.3, 1.2))
        process.send_signal(signal.SIGKILL)
        process.wait()
    async with Client(relay_system.url, settings) as client:
        for n in range(count):
            await client.submit(f"job {n}", job_id=f"crash-{n}")
        records = await client.wait_all([f"crash-{n}" for n in range(count)], timeout=60)
        for n in range(count):
            assert records[f"crash-{n}"].result == f"job {n}"
            types = [e.type for e in await client.events.read(f"crash-{n}")]
            assert types.count("job.completed") == 1, (n, types)
            assert [e.status for e in await client.events.read(f"crash-{n}")].count(
                "submitted"
            ) == 1
