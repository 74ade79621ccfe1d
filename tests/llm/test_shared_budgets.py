"""Shared model budgets (infra/store/budgets.py): worker processes sharing a route never send the
endpoint more than its requests/min (plus the documented burst) and no job fails for waiting;
a 429 with Retry-After seen by one process pauses the others. Real processes, counting
endpoints on loopback, the route's buckets in Redis."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time

import pytest
import redis.asyncio as aioredis
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.presence import wait_for
from postel.infra.runtime.runner import load_worker
from postel.infra.runtime.settings import Settings
from postel.services.llm import LLMRequest
from support import script, with_support

from postel.testing.fake_model import FakeModel

START_DELAY_S = 4.0  # the processes' imports, before they all call at once


class Arrivals:
    """When each answered request reached the endpoint."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._lock = threading.Lock()

    def __call__(self, request: LLMRequest) -> str:
        with self._lock:
            self.times.append(time.time())
        return "ok"


def callers(
    redis_url: str, base_url: str, starts: list[float | str], rpm: int
) -> list[list[float]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POSTEL_")}
    processes = [
        subprocess.Popen(
            script("budget_caller", redis_url, base_url, str(start), "1", str(rpm)),
            env=with_support(env),
            stdout=subprocess.PIPE,
            text=True,
        )
        for start in starts
    ]
    outputs = [process.communicate(timeout=90)[0] for process in processes]
    assert all(process.returncode == 0 for process in processes), "no call failed for waiting"
    return [json.loads(output.strip().splitlines()[-1]) for output in outputs]


async def note_grants(url: str, granted_at_ms: list[float], watching: asyncio.Event) -> None:
    """Until cancelled: the moment (ms, the caller's clock) at which each request a route's
    bucket grants was decided, in the order Redis ran the grants, as the acquire script
    writes it (infra/store/budgets.py). Redis's MONITOR shows the commands scripts run."""
    redis = aioredis.Redis.from_url(url)
    try:
        async with redis.monitor() as monitor:
            watching.set()
            while True:
                command = (await monitor.next_command())["command"].split()
                if command[:1] == ["HSET"] and command[-2:-1] == ["at"]:
                    granted_at_ms.append(float(command[-1]))
    finally:
        await redis.aclose()


def within_rate(granted_at_ms: list[float], per_s: float) -> list[tuple[int, int]]:
    """The runs of grants (first, last) more than a bucket holding one request, refilled at
    `per_s` requests a second, can give: after a grant the bucket is empty, and the next is
    refilled only by the time that passed between the two grants' decisions."""
    over = []
    for first in range(len(granted_at_ms)):
        refilled = 0.0
        for last in range(first + 1, len(granted_at_ms)):
            passed_s = max(granted_at_ms[last] - granted_at_ms[last - 1], 0.0) / 1000
            refilled += passed_s * per_s
            if last - first > refilled + 1e-6:
                over.append((first, last))
    return over


def test_within_rate_names_grants_closer_than_the_rate_allows() -> None:
    # the fourth grant came half a second after the third: every run ending with it is over
    assert within_rate([0, 1000, 2000, 2500], per_s=1) == [(0, 3), (1, 3), (2, 3)]
    # a decision that reached Redis late (its clock read before the one before it) earns no
    # refill: the third grant is one too many, and its time does not count for the fourth
    assert within_rate([0, 1000, 900, 2100], per_s=1) == [(0, 2), (0, 3), (1, 2), (1, 3)]
    assert within_rate([0, 1000, 2000, 3000], per_s=1) == []


def intent_answer(request: LLMRequest) -> str:
    INTENT_ARRIVALS.append(time.time())
    return json.dumps(INTENT)


def other_answer(request: LLMRequest) -> str:
    if request.messages[0].content.startswith("You plan work"):
        return json.dumps({"tasks": [{"id": "t1", "objective": "total", "kind": "generation"}]})
    return "$165.50"


INTENT = {
    "detectedLanguage": "en",
    "normalizedRequest": "the total",
    "intent": "the total",
    "primaryGoal": "the total",
    "dataType": "numbers",
}
INTENT_ARRIVALS: list[float] = []


async def test_ten_worker_processes_share_a_60_per_minute_route(
    embedded_redis_url: str, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten `postel worker intent` processes route intent calls to one endpoint limited to 60
    requests/min; ten jobs at once: the endpoint sees one request a second (the bucket holds
    one), every job completes, and the waits show in the intent hops' events."""
    INTENT_ARRIVALS.clear()
    redis_url = embedded_redis_url
    async with Client(redis_url) as flushing:
        await flushing.pool.flushdb()
    with FakeModel(intent_answer) as limited, FakeModel(other_answer) as free:
        monkeypatch.setenv("POSTEL_LLM_BASE_URL", free.base_url)
        monkeypatch.setenv("POSTEL_INTENT__LLM_BASE_URL", limited.base_url)
        monkeypatch.setenv("POSTEL_INTENT__LLM_RPM", "60")
        env = {
            k: v for k, v in os.environ.items() if k.startswith("POSTEL_") or k in ("PATH", "HOME")
        }
        env.update({"POSTEL_REDIS_URL": redis_url, "POSTEL_LOG_LEVEL": "WARNING"})
        workers = [
            subprocess.Popen(
                [sys.executable, "-m", "postel", "worker", "intent"], env={**os.environ, **env}
            )
            for _ in range(10)
        ]
        routed = Settings(state_dir=settings.state_dir, log_level="WARNING")
        others = [load_worker(name) for name in ("planner", "gasl", "generator", "validator")]
        granted_at_ms: list[float] = []
        watching = asyncio.Event()
        monitor = asyncio.create_task(note_grants(redis_url, granted_at_ms, watching))
        await watching.wait()
        try:
            async with (
                LocalSystem(routed, redis_url=redis_url, specs=others),
                Client(redis_url, routed) as client,
            ):
                await wait_for(client.pool, client.keyspace, "intent", 10, timeout=60)
                ids = [await client.submit("get the total", type="float") for _ in range(10)]
                records = await client.wait_all(ids, timeout=90)
                events = [e for job in ids for e in await client.events.read(job)]
        finally:
            monitor.cancel()
            await asyncio.gather(monitor, return_exceptions=True)
            for worker in workers:
                worker.terminate()
            for worker in workers:
                worker.wait(20)
    assert all(record.status == "completed" for record in records.values()), "none failed"
    assert len(INTENT_ARRIVALS) == 10
    # the endpoint's ten requests are the bucket's ten grants, decided at one a second (any
    # T seconds hold at most T + 1), whatever the time each then took to reach the endpoint
    assert len(granted_at_ms) == 10
    assert within_rate(granted_at_ms, per_s=60 / 60) == []
    intent = [e for e in events if e.worker == "intent" and e.status == "completed"]
    assert sum(e.budget_wait_ms > 500 for e in intent) >= 8, "the waits are in the events"


def test_a_429_seen_by_one_process_pauses_the_others(embedded_redis_url: str) -> None:
    redis_url = embedded_redis_url
    arrivals = Arrivals()
    with FakeModel(arrivals) as fake:
        fake.set_faults(mode="429", retry_after="3")
        seen: list[float] = []

        def first_429_then_ok() -> None:
            while fake.stats().total == 0:
                time.sleep(0.005)
            seen.append(time.time())
            fake.set_faults(mode="ok")

        watcher = threading.Thread(target=first_429_then_ok)
        watcher.start()
        # the three others call during the pause however slowly they start (a loaded
        # machine): each waits for the route's pause first
        start = time.time() + START_DELAY_S
        later: list[float | str] = ["paused+0.1", "paused+0.6", "paused+1.1"]
        callers(redis_url, fake.base_url, [start, *later], rpm=0)
        watcher.join(10)
    limited = fake.stats().by_fault.get("429", 0)
    assert limited >= 1
    # after the first 429 (Retry-After 3 s) nobody reached the endpoint until the pause ended,
    # though three processes started calling during it
    assert len(arrivals.times) == 4
    assert min(arrivals.times) >= seen[0] + 2.5, [t - seen[0] for t in arrivals.times]
