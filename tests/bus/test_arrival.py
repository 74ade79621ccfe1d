"""A hop's `received` event: checked by the take script, written with the hop's commit when
the hop is quick, alone once it has run past POSTEL_RECEIVED_WINDOW_MS (infra/runtime/
arrival.py), and kept out of the lane's stream when written with its outcome."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis.asyncio as aioredis
from postel.infra.client.client import Client
from postel.infra.runtime import actor as actor_module
from postel.infra.runtime.actor import HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import Settings
from postel.infra.store.events import Event, EventLog
from postel.infra.store.keys import Keyspace
from postel.infra.web.job_story import _fold, _place
from postel.messages import Envelope
from support.recording import Recorder

from postel.testing.relay import RELAY_WORKERS

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""


def _event(status: str, message_id: str = "j:m", **figures: float) -> Event:
    return Event(
        job_id="j",
        message_id=message_id,
        type="t",
        worker="w",
        stage="w",
        status=status,  # type: ignore[arg-type]
        **figures,
    )


def test_a_received_event_written_with_its_outcome_stays_out_of_the_lane_stream() -> None:
    log = EventLog(None, KEYS, maxlen=100, job_maxlen=10, job_ttl_s=60)  # type: ignore[arg-type]
    together = log.commands(_event("received", wait_ms=2.0), _event("completed", wait_ms=2.0))
    streams = [(c[0], c[1], c[c.index("status") + 1]) for c in together if c[0] == "XADD"]
    assert streams == [
        ("XADD", KEYS.job_events("j"), "received"),
        ("XADD", KEYS.events(""), "completed"),
        ("XADD", KEYS.job_events("j"), "completed"),
    ]
    assert [c for c in together if c[0] == "EXPIRE" and c[1] == KEYS.job_events("j")] == [
        ["EXPIRE", KEYS.job_events("j"), "60"]
    ], "the job's stream has its lifetime renewed once"
    alone = [c[1] for c in log.commands(_event("received")) if c[0] == "XADD"]
    assert alone == [KEYS.events(""), KEYS.job_events("j")], "alone, it goes to both streams"
    other = log.commands(_event("received", "j:other"), _event("completed"))
    assert [c[1] for c in other if c[0] == "XADD"][:2] == [KEYS.events(""), KEYS.job_events("j")]


QUICK = {"received_window_ms": 60_000.0}
"""A window no hop of these tests outlasts, however loaded the machine."""


async def test_a_quick_hop_writes_received_with_its_commit_and_asks_nothing_before(
    redis_url: str, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five quick hops: none asks Redis whether to run (the take answered), each hop's
    `received` is in its job's stream before its outcome, whose event carries the same
    wait."""
    asked: list[str] = []

    async def receive_once(*args: object, **kwargs: object) -> str:
        asked.append(str(args[2]))
        raise AssertionError("a hop taken by the take script asked again")

    monkeypatch.setattr(actor_module, "receive_once", receive_once)
    commits: list[list[list[str]]] = []
    real_commit = actor_module.commit_once

    async def commit_once(*args: Any, **kwargs: Any) -> Any:
        commits.append(args[4])  # the commit's record commands
        return await real_commit(*args, **kwargs)

    monkeypatch.setattr(actor_module, "commit_once", commit_once)
    quick = settings.model_copy(update=QUICK)
    async with (
        LocalSystem(quick, redis_url=redis_url, specs=RELAY_WORKERS),
        Client(redis_url, quick) as client,
    ):
        job_id = await client.submit("quick")
        assert await client.result(job_id, timeout=20) == "quick"
        history = await client.events.read(job_id)
        stream_ttl = await client.pool.ttl(KEYS.job_events(job_id))
    assert asked == []
    # a hop's commit leaves the job stream's lifetime, set with the record at submission;
    # the last one's terminal events renew it
    renewals = [
        sum(c[:2] == ["EXPIRE", KEYS.job_events(job_id)] for c in commands) for commands in commits
    ]
    assert renewals == [0, 0, 0, 0, 1]
    tallies = (KEYS.tally_handled(""), KEYS.tally_last(""))
    assert not [
        c for commands in commits for c in commands if c[:1] == ["EXPIRE"] and c[1] in tallies
    ]
    assert 0 < stream_ttl <= settings.job_ttl_s
    hops = [e for e in history if e.worker != "client" and e.stage != "done"]
    assert [e.status for e in hops] == ["received", "completed"] * 5
    for received, completed in zip(hops[::2], hops[1::2], strict=True):
        assert received.message_id == completed.message_id
        assert completed.wait_ms == received.wait_ms > 0


async def test_a_long_hop_writes_received_alone_once_the_window_has_passed(
    redis_url: str, settings: Settings
) -> None:
    """A hop held past the window shows `received` in both streams while it runs; its
    commit then writes its outcome only."""
    recorder = Recorder(held="planner")
    quick_window = settings.model_copy(update={"received_window_ms": 20.0})
    async with (
        LocalSystem(quick_window, redis_url=redis_url, specs=recorder.specs()),
        Client(redis_url, quick_window) as client,
    ):
        job_id = await client.submit("held")
        async with asyncio.timeout(20):
            await recorder.entered.wait()
            while not any(
                e.worker == "planner" and e.status == "received"
                for e in await client.events.read(job_id)
            ):
                await asyncio.sleep(0.01)
        lane = [
            (f[b"worker"], f[b"status"]) for _id, f in await client.pool.xrange(KEYS.events(""))
        ]
        assert (b"planner", b"received") in lane, "while it runs, live views see it"
        recorder.release.set()
        await client.result(job_id, timeout=20)
        planner = [e.status for e in await client.events.read(job_id) if e.worker == "planner"]
    assert planner == ["received", "completed"], "written once"


async def test_a_window_of_zero_writes_received_at_once(redis_url: str, settings: Settings) -> None:
    at_once = settings.model_copy(update={"received_window_ms": 0.0})
    async with (
        LocalSystem(at_once, redis_url=redis_url, specs=RELAY_WORKERS),
        Client(redis_url, at_once) as client,
    ):
        job_id = await client.submit("now")
        await client.result(job_id, timeout=20)
        lane = [f[b"status"] for _id, f in await client.pool.xrange(KEYS.events(""))]
        history = [e.status for e in await client.events.read(job_id)]
    assert lane.count(b"received") == history.count("received") == 5


async def test_a_quick_hop_that_fails_writes_received_with_its_retry(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    failures = {"left": 1}

    def failing_once(spec: WorkerSpec) -> WorkerSpec:
        async def handle(message: Envelope, runtime: Runtime) -> HopOutcome:
            if failures["left"]:
                failures["left"] -= 1
                raise ConnectionError("once")
            return await spec.handle(message, runtime)

        return dataclasses.replace(spec, handle=handle)

    specs = [failing_once(s) if s.name == "gasl" else s for s in RELAY_WORKERS]
    quick = settings.model_copy(update=QUICK)
    async with (
        LocalSystem(quick, redis_url=redis_url, specs=specs),
        Client(redis_url, quick) as client,
    ):
        job_id = await client.submit("retry me")
        await client.result(job_id, timeout=30)
        gasl = [
            (e.status, e.attempt) for e in await client.events.read(job_id) if e.worker == "gasl"
        ]
    assert gasl == [("received", 1), ("retried", 1), ("received", 2), ("completed", 2)]
    lane = [
        (f[b"status"], f[b"attempt"])
        for _id, f in await redis_client.xrange(KEYS.events(""))
        if f[b"worker"] == b"gasl"
    ]
    assert lane == [(b"retried", b"1"), (b"completed", b"2")], "quick: outcomes only"


def test_the_timeline_starts_a_quick_hop_its_duration_before_its_end() -> None:
    """A quick hop's `received` is stamped at its end; the job page places the hop by its
    duration instead."""
    end = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    ms = int(end.timestamp() * 1000)
    received = _event("received", wait_ms=3.0).model_copy(update={"id": f"{ms}-0"})
    completed = _event("completed", wait_ms=3.0, duration_ms=40.0)
    completed = completed.model_copy(update={"id": f"{ms}-1"})
    (hop,) = _fold([received, completed])
    assert hop.started == end - timedelta(milliseconds=40)
    assert hop.attempts == 1 and hop.wait_ms == 3.0
    _place([hop], end - timedelta(seconds=1), end)
    assert round(hop.offset_ms) == 960
