"""`postel bench fair`: who goes first, measured against the plain arrival-order run.

Every scenario runs twice on the same scratch Redis and relay stages (postel/testing/
relay.py, five quick hops per job): once with the jobs' classes and tenants (job control),
once with every job submitted plain (normal, one tenant: arrival order). Each relay hop waits
`WORK_S`, as a model call would, with `CONCURRENCY` hops at once per stage. Figures:

- **priority**: tenant A's `--backlog` batch jobs queued, then tenant B's `--urgent`
  interactive jobs: B's queue wait (the sum of its hops' waits) at the median, against B's
  jobs alone on an empty system; and how much of A's backlog had drained when B's last job
  ended (job control: at most 10 %).
- **turns**: one class, tenant A's `--backlog / 2` jobs then tenant B's `--urgent / 2`: how
  many jobs had ended, from B's submission on, when B's last did (job control: within the
  first 30).
- **aging**: a batch job under constant interactive load: when it started (job control:
  within the documented bound, 2 x PRIORITY_GAP_MS, and the time to serve what entered
  before that).
- **cancel**: a job whose model call streams slowly (the fake endpoint, `slow_stream`): how
  long after `cancel` the endpoint saw the connection closed, and the answers sent after it
  (job control: 0), against the call's whole length.
- **callbacks**: the delay from a job's end to its callback arriving at a loopback receiver
  (median), and a receiver failing 5 times: the attempts, all with one webhook-id.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import os
import statistics
import time
from dataclasses import dataclass
from typing import Any

from postel.infra.client.client import Client
from postel.infra.runtime.actor import Handler, HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.runner import load_worker
from postel.infra.runtime.settings import Settings
from postel.infra.store.redis_server import configured_or_scratch
from postel.infra.store.turns import CLASS_ADVANCE_MS
from postel.messages import Envelope, JobOptions
from postel.messages.job import Priority
from pydantic import SecretStr
from redis.asyncio import Redis

from postel.testing.fake_model import FakeModel, marker
from postel.testing.receiver import CallbackReceiver
from postel.testing.relay import RELAY_WORKERS
from postel_bench.chaos import chaos_responder

MODES = ("job_control", "arrival_order")
SUBMIT_AT_ONCE = 200
WORK_S = 0.05
"""What each relay hop waits, as a model call would: the stages, not the event loop, are then
what the jobs queue for."""
CONCURRENCY = 4
"""Hops at once per stage."""
LOAD_BACKLOG = 60
"""The interactive jobs the aging scenario keeps waiting."""


@dataclass(frozen=True)
class Ask:
    tenant: str
    priority: Priority


def _working(work_s: float) -> list[WorkerSpec]:
    """The relay stages, each hop waiting `work_s` before it hands on."""

    def slowed(handle: Handler) -> Handler:
        async def handle_after_work(message: Envelope, runtime: Runtime) -> HopOutcome:
            await asyncio.sleep(work_s)
            return await handle(message, runtime)

        return handle_after_work

    return [dataclasses.replace(spec, handle=slowed(spec.handle)) for spec in RELAY_WORKERS]


def _options(ask: Ask, mode: str, **more: Any) -> JobOptions:
    if mode == "arrival_order":
        return JobOptions(**more)
    return JobOptions(priority=ask.priority, tenant=ask.tenant, **more)


async def _submit(client: Client, prefix: str, count: int, ask: Ask, mode: str) -> list[str]:
    ids: list[str] = []
    for start in range(0, count, SUBMIT_AT_ONCE):
        batch = range(start, min(start + SUBMIT_AT_ONCE, count))
        ids += await asyncio.gather(
            *(
                client.submit(f"{prefix} {n}", options=_options(ask, mode), job_id=f"{prefix}-{n}")
                for n in batch
            )
        )
    return ids


async def _ended(redis: Redis, client: Client) -> list[tuple[str, int]]:
    """Every job's end, in order: (job id, ms)."""
    entries = await redis.xrange(client.keyspace.results(""), "-", "+")
    return [
        (fields[b"job_id"].decode(), int(entry.decode().split("-")[0])) for entry, fields in entries
    ]


async def _waits_ms(client: Client, job_ids: list[str]) -> list[float]:
    waits = []
    for job_id in job_ids:
        events = await client.events.read(job_id)
        waits.append(sum(e.wait_ms for e in events if e.status == "received"))
    return waits


async def _fresh(redis: Redis) -> None:
    await redis.flushdb()


async def _priority(
    client: Client, redis: Redis, mode: str, backlog: int, urgent: int
) -> dict[str, Any]:
    await _fresh(redis)
    alone = await _submit(client, "b-alone", urgent, Ask("b", "interactive"), mode)
    await client.wait_all(alone, timeout=600)
    alone_p50 = statistics.median(await _waits_ms(client, alone))
    await _fresh(redis)
    backlog_ids = await _submit(client, "a", backlog, Ask("a", "batch"), mode)
    submitted_ms = int(time.time() * 1000)
    urgent_ids = await _submit(client, "b", urgent, Ask("b", "interactive"), mode)
    await client.wait_all(urgent_ids, timeout=600)
    ended = await _ended(redis, client)
    last_b = max(ms for job_id, ms in ended if job_id.startswith("b-"))
    drained = sum(
        1 for job_id, ms in ended if job_id.startswith("a-") and submitted_ms <= ms <= last_b
    )
    loaded_p50 = statistics.median(await _waits_ms(client, urgent_ids))
    await client.wait_all(backlog_ids, timeout=900)
    return {
        "b_wait_p50_ms": round(loaded_p50, 1),
        "b_wait_alone_p50_ms": round(alone_p50, 1),
        "b_wait_vs_alone": round(loaded_p50 / max(alone_p50, 0.001), 2),
        "a_drained_when_b_ended_pct": round(100 * drained / backlog, 1),
    }


async def _turns(
    client: Client, redis: Redis, mode: str, backlog: int, urgent: int
) -> dict[str, Any]:
    await _fresh(redis)
    a_ids = await _submit(client, "ta", backlog, Ask("a", "normal"), mode)
    submitted_ms = int(time.time() * 1000)
    b_ids = await _submit(client, "tb", urgent, Ask("b", "normal"), mode)
    await client.wait_all(a_ids + b_ids, timeout=900)
    # counted from B's submission: what A finished while it was still being queued is not B's
    order = [job_id for job_id, ms in await _ended(redis, client) if ms >= submitted_ms]
    return {"b_last_ended_at_completion": max(order.index(job_id) + 1 for job_id in b_ids)}


async def _aging(client: Client, redis: Redis, mode: str, load_s: float) -> dict[str, Any]:
    """Interactive jobs kept waiting (`LOAD_BACKLOG` at least, topped up every 50 ms) for
    `load_s`; a batch job submitted after the first second: when its first hop started."""
    await _fresh(redis)
    stop_at = time.monotonic() + load_s
    began = time.monotonic()
    submitted: list[str] = []
    batch_sent: float | None = None
    n = 0
    while time.monotonic() < stop_at:
        waiting = len(submitted) - await redis.xlen(client.keyspace.results(""))
        if waiting < LOAD_BACKLOG:
            submitted += await _submit(client, f"i{n}", 20, Ask("i", "interactive"), mode)
            n += 1
        if batch_sent is None and time.monotonic() - began > 1:
            batch_sent = time.time()
            await client.submit(
                "the batch job", options=_options(Ask("z", "batch"), mode), job_id="batch"
            )
        await asyncio.sleep(0.05)
    assert batch_sent is not None
    record = await client.wait("batch", timeout=900)
    events = await client.events.read("batch")
    first = next(e for e in events if e.status == "received")
    started_s = int((first.id or "0-0").split("-")[0]) / 1000 - batch_sent
    await client.wait_all(submitted, timeout=900)
    return {
        "batch_started_after_s": round(started_s, 2),
        "bound_s": (CLASS_ADVANCE_MS["interactive"] - CLASS_ADVANCE_MS["batch"]) / 1000,
        "batch_status": record.status,
    }


async def _cancel(settings: Settings, url: str, stream_s: float) -> dict[str, Any]:
    with FakeModel(chaos_responder) as fake:
        fake.set_faults(stream_s=stream_s)
        routed = settings.model_copy(
            update={"llm_provider": "openai", "llm_base_url": fake.base_url, "llm_max_retries": 0}
        )
        specs = [load_worker("intent"), *RELAY_WORKERS[1:]]
        async with (
            LocalSystem(routed, redis_url=url, specs=specs),
            Client(url, routed) as client,
        ):
            job_id = await client.submit(f"How many people? {marker('slow_stream')}")
            while fake.stats().in_flight < 1:
                await asyncio.sleep(0.01)
            cancelled_at = time.time()
            await client.cancel(job_id, "benchmark")
            while fake.stats().hung_up < 1:
                await asyncio.sleep(0.01)
                if time.time() - cancelled_at > stream_s + 5:
                    break
            await asyncio.sleep(0.5)  # anything sent after the cancel would show now
            record = await client.status(job_id)
        stats = fake.stats()
    closed = stats.hung_up_at[0] - cancelled_at if stats.hung_up_at else None
    return {
        "closed_after_cancel_s": round(closed, 3) if closed is not None else None,
        "call_length_s": stream_s,
        "answers_sent_after_cancel": stats.streamed,
        "model_calls": stats.total,
        "tokens_billed": record.prompt_tokens + record.completion_tokens,
        "status": f"{record.status}:{record.failure}",
    }


async def _callbacks(settings: Settings, url: str, jobs: int) -> dict[str, Any]:
    secret = "whsec_" + base64.b64encode(os.urandom(24)).decode()
    hooked = settings.model_copy(
        update={"callback_secret": SecretStr(secret), "callback_allow": ["127.0.0.1"]}
    )
    async with (
        LocalSystem(hooked, redis_url=url, specs=RELAY_WORKERS),
        Client(url, hooked) as client,
    ):
        with CallbackReceiver() as receiver:
            ids = []
            for n in range(jobs):  # one at a time: the delay of each, not of a queue
                ids.append(
                    await client.submit(f"c{n}", options=JobOptions(callback_url=receiver.url))
                )
                await client.wait(ids[-1], timeout=60)
                while len(receiver.delivered()) < n + 1:
                    await asyncio.sleep(0.005)
            delays = []
            for job_id, got in zip(ids, receiver.delivered(), strict=True):
                record = await client.status(job_id)
                assert record.finished_at is not None
                delays.append((got.at - record.finished_at.timestamp()) * 1000)
        with CallbackReceiver(fail_first=5) as flaky:
            job_id = await client.submit("flaky", options=JobOptions(callback_url=flaky.url))
            while not flaky.delivered():
                await asyncio.sleep(0.05)
    return {
        "delivery_p50_ms": round(statistics.median(delays), 1),
        "failing_receiver_attempts": len(flaky.received),
        "failing_receiver_webhook_ids": len({r.headers["webhook-id"] for r in flaky.received}),
    }


async def run_fair_bench(
    settings: Settings, backlog: int = 2000, urgent: int = 20, aging_s: float = 14.0
) -> dict[str, Any]:
    quiet = settings.model_copy(update={"log_level": "WARNING", "concurrency": CONCURRENCY})
    figures: dict[str, Any] = {"backlog": backlog, "urgent": urgent, "modes": {}}
    async with configured_or_scratch(None) as url:
        redis = Redis.from_url(url)
        try:
            async with (
                LocalSystem(quiet, redis_url=url, specs=_working(WORK_S)),
                Client(url, quiet) as client,
            ):
                for mode in MODES:
                    figures["modes"][mode] = {
                        "priority": await _priority(client, redis, mode, backlog, urgent),
                        "turns": await _turns(client, redis, mode, backlog // 2, urgent // 2),
                        "aging": await _aging(client, redis, mode, aging_s),
                    }
            await _fresh(redis)
            figures["cancel"] = await _cancel(quiet, url, stream_s=30.0)
            await _fresh(redis)
            figures["callbacks"] = await _callbacks(quiet, url, jobs=20)
        finally:
            await redis.aclose()
    return figures


def format_fair(figures: dict[str, Any]) -> str:
    control, plain = figures["modes"]["job_control"], figures["modes"]["arrival_order"]
    lines = [
        f"postel bench fair: {figures['backlog']} batch jobs of tenant A, then "
        f"{figures['urgent']} interactive of tenant B (relay stages of "
        f"{WORK_S * 1000:g} ms, {CONCURRENCY} at once)",
        f"{'':44}{'job control':>14}{'arrival order':>16}",
    ]

    def row(label: str, a: Any, b: Any) -> None:
        lines.append(f"{label:44}{a!s:>14}{b!s:>16}")

    cp, pp = control["priority"], plain["priority"]
    row("B's queue wait p50 (ms)", cp["b_wait_p50_ms"], pp["b_wait_p50_ms"])
    row("  on an empty system (ms)", cp["b_wait_alone_p50_ms"], pp["b_wait_alone_p50_ms"])
    row("  ratio (target <= 2x)", cp["b_wait_vs_alone"], pp["b_wait_vs_alone"])
    row(
        "A drained when B's last ended (%, <= 10)",
        cp["a_drained_when_b_ended_pct"],
        pp["a_drained_when_b_ended_pct"],
    )
    row(
        "one class: B's last ended at completion (<=30)",
        control["turns"]["b_last_ended_at_completion"],
        plain["turns"]["b_last_ended_at_completion"],
    )
    row(
        f"aging: batch started after (s, bound {control['aging']['bound_s']:g} s + drain)",
        control["aging"]["batch_started_after_s"],
        plain["aging"]["batch_started_after_s"],
    )
    cancel = figures["cancel"]
    lines.append(
        f"cancel: the endpoint saw the call closed {cancel['closed_after_cancel_s']} s after "
        f"`cancel` (target <= 1 s; the call would have run {cancel['call_length_s']:g} s); "
        f"answers sent after it: {cancel['answers_sent_after_cancel']}, tokens billed: "
        f"{cancel['tokens_billed']}, job {cancel['status']}"
    )
    hooks = figures["callbacks"]
    lines.append(
        f"callbacks: delivered p50 {hooks['delivery_p50_ms']} ms after the job ended (target "
        f"<= 100 ms); a receiver failing 5 times got {hooks['failing_receiver_attempts']} "
        f"attempts under {hooks['failing_receiver_webhook_ids']} webhook-id"
    )
    return "\n".join(lines)
