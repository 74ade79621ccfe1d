"""Fuzzing the runtime's two entrances on a real Redis: ingress entries and queue payloads.

Every entry and payload must end handled (a job, or a dead letter with the error), and
nothing may escape the consumer or the actor: an escaped exception is a process that would
have stopped. The killers that used to stop ingress for good are mixed in."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from postel.infra.runtime.actor import Actor, Runtime
from postel.infra.runtime.ingress import IngressConsumer
from postel.infra.runtime.settings import Settings
from postel.infra.store.keys import Keyspace
from postel.infra.store.wire import connect_arq, dumps, loads
from postel.messages import JobRequest, JobSubmitted
from support.fuzz import FUZZ_EXAMPLES, fuzz_settings

from postel.testing.relay import RELAY_WORKERS

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""

KILLERS: list[str] = [
    json.dumps({"prompt": "x", "options": {"deadline_s": 1e300}}),
    '{"prompt": "x", "options": {"deadline_s": Infinity}}',
    '{"prompt": "x", "options": {"deadline_s": NaN}}',
    '{"prompt": "x", "arguments": {"a": ' + "[" * 1000 + "]" * 1000 + "}}",
    json.dumps({"prompt": "x", "desired_type": "list[" * 1200 + "int" + "]" * 1200}),
    json.dumps({"prompt": "x", "desired_type": {"type": "object", "properties": 5}}),
    json.dumps({"prompt": "x", "arguments": {"n": 10**400}}),
    "[" * 5000,
    json.dumps({"prompt": ""}),
    json.dumps({"prompt": "x", "graph": "no-such-graph"}),
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)

requests = st.fixed_dictionaries(
    {"prompt": st.text(max_size=40)},
    optional={
        "desired_type": st.sampled_from(
            ["int", "float", "list[int]", "document", "list[", "dict", "bogus", 5]
        )
        | json_values,
        "options": st.dictionaries(
            st.sampled_from(["deadline_s", "max_tokens", "max_rounds", "nope"]),
            st.floats() | st.integers() | st.text(max_size=5),
            max_size=3,
        ),
        "arguments": st.dictionaries(st.text(max_size=8), json_values, max_size=3),
        "ambient": json_values,
        "graph": st.none() | st.text(max_size=10),
    },
)

job_fields = st.one_of(
    requests.map(lambda r: json.dumps(r, allow_nan=True)),
    st.sampled_from(KILLERS),
    json_values.map(lambda v: json.dumps(v, allow_nan=True)),
    st.text(max_size=60),
)

entries = st.fixed_dictionaries(
    {},
    optional={
        "job": job_fields,
        "job_id": st.text(max_size=20) | st.sampled_from(["taken", "ingress-1_0", "ok-id"]),
        "other": st.text(max_size=10),
    },
).filter(bool)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def test_ingress_entries_always_end_handled(
    embedded_redis_url: str, settings: Settings, loop: asyncio.AbstractEventLoop
) -> None:
    counts: Counter[str] = Counter()

    async def setup() -> tuple[Any, aioredis.Redis, IngressConsumer]:
        client = aioredis.Redis.from_url(embedded_redis_url)
        await client.flushdb()
        pool = await connect_arq(embedded_redis_url)
        consumer = IngressConsumer(Runtime.create(pool, KEYS, settings), block_ms=10)
        await consumer.ensure_group()
        return pool, client, consumer

    pool, client, consumer = loop.run_until_complete(setup())

    async def one(fields: dict[str, str]) -> None:
        dead_before = await client.xlen(KEYS.dead_letters(""))
        await client.xadd(KEYS.ingress, fields)
        try:
            handled = await consumer.run_once()
        except Exception as exc:  # an escape is a consumer that would have stopped
            counts["escaped"] += 1
            raise AssertionError(f"{type(exc).__name__}: {exc}") from exc
        assert handled == 1
        assert (await client.xpending(KEYS.ingress, KEYS.ingress_group))["pending"] == 0
        if await client.xlen(KEYS.dead_letters("")) > dead_before:
            counts["dead-lettered"] += 1
        else:
            counts["submitted"] += 1

    @hypothesis_settings(parent=fuzz_settings, suppress_health_check=list(HealthCheck))
    @given(entries)
    def fuzz(fields: dict[str, str]) -> None:
        counts["tried"] += 1
        loop.run_until_complete(one(fields))

    try:
        fuzz()
        for killer in KILLERS:
            counts["tried"] += 1
            loop.run_until_complete(one({"job": killer}))
    finally:
        loop.run_until_complete(pool.aclose())
        loop.run_until_complete(client.aclose())
        print(f"\ningress fuzz ({FUZZ_EXAMPLES} examples): {dict(counts)}")
    assert counts["escaped"] == 0
    assert counts["tried"] == counts["submitted"] + counts["dead-lettered"]


VALID = dumps(
    {
        "t": 1,
        "f": "handle",
        "a": [
            JobSubmitted(
                job_id="fz", message_id="fz:submitted", request=JobRequest(prompt="x")
            ).model_dump(mode="json")
        ],
        "k": {},
        "et": 1,
    }
)

arq_shaped = st.fixed_dictionaries(
    {},
    optional={
        "t": json_values,
        "f": st.sampled_from(["handle", "other"]) | json_values,
        "a": json_values | st.just([{"type": "job.submitted"}]),
        "k": json_values,
        "et": json_values,
    },
).map(lambda d: json.dumps(d).encode())

payloads = st.one_of(
    st.binary(max_size=80),
    json_values.map(lambda v: json.dumps(v, allow_nan=True).encode()),
    arq_shaped,
    st.integers(1, 6000).map(lambda n: b"[" * n + b"]" * n),
    st.just(VALID.replace(b'"fz"', b'"f z"')),
    st.just(VALID.replace(b'"t":1', b'"t":"x"')),
)


def test_queue_payloads_never_escape_the_actor(
    embedded_redis_url: str, settings: Settings, loop: asyncio.AbstractEventLoop
) -> None:
    counts: Counter[str] = Counter()

    async def setup() -> tuple[Any, aioredis.Redis, Actor]:
        client = aioredis.Redis.from_url(embedded_redis_url)
        await client.flushdb()
        pool = await connect_arq(embedded_redis_url)
        return pool, client, Actor(RELAY_WORKERS[0], Runtime.create(pool, KEYS, settings))

    pool, client, actor = loop.run_until_complete(setup())

    async def one(raw: bytes) -> None:
        dead_before = await client.xlen(KEYS.dead_letters(""))
        job = loads(raw)
        try:
            await actor.run(job["a"][0], attempt=1)
        except Exception as exc:
            counts["escaped"] += 1
            raise AssertionError(f"{type(exc).__name__}: {exc}") from exc
        counts[
            "dead-lettered" if await client.xlen(KEYS.dead_letters("")) > dead_before else "ran"
        ] += 1

    @hypothesis_settings(parent=fuzz_settings, suppress_health_check=list(HealthCheck))
    @given(payloads)
    def fuzz(raw: bytes) -> None:
        counts["tried"] += 1
        loop.run_until_complete(one(raw))

    try:
        fuzz()
    finally:
        loop.run_until_complete(pool.aclose())
        loop.run_until_complete(client.aclose())
        print(f"\nqueue payload fuzz ({FUZZ_EXAMPLES} examples): {dict(counts)}")
    assert counts["escaped"] == 0


def test_the_depth_check_is_linear_whatever_the_text_holds() -> None:
    """Escapes, quotes and brackets in any mix: one pass, never a rescan per quote."""
    from postel.messages.limits import MAX_PAYLOAD_BYTES, json_depth

    for text in (
        '"\\' * (MAX_PAYLOAD_BYTES // 2),
        '"' * MAX_PAYLOAD_BYTES,
        "[" * MAX_PAYLOAD_BYTES,
    ):
        started = time.process_time()
        json_depth(text, 64)
        assert time.process_time() - started < 2.0
    assert json_depth('{"a": "[[[\\"[", "b": [1, {"c": 2}]}') == 3
