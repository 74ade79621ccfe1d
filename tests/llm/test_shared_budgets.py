"""Shared model budgets (infra/store/budgets.py): worker processes sharing a route never send the
endpoint more than its requests/min (plus the documented burst) and no job fails for waiting;
a 429 with Retry-After seen by one process pauses the others. Real processes, counting
endpoints on loopback, the route's buckets in Redis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.presence import wait_for
from postel.infra.runtime.runner import load_worker
from postel.infra.runtime.settings import Settings
from postel.services.llm import LLMRequest

from postel.testing.fake_model import FakeModel

CALLER = Path(__file__).parent / "budget_caller.py"
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


def callers(redis_url: str, base_url: str, starts: list[float], rpm: int) -> list[list[float]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POSTEL_")}
    processes = [
        subprocess.Popen(
            [sys.executable, str(CALLER), redis_url, base_url, str(start), "1", str(rpm)],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for start in starts
    ]
    outputs = [process.communicate(timeout=90)[0] for process in processes]
    assert all(process.returncode == 0 for process in processes), "no call failed for waiting"
    return [json.loads(output.strip().splitlines()[-1]) for output in outputs]


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
        try:
            async with (
                LocalSystem(routed, redis_url=redis_url, specs=others),
                Client(redis_url, routed) as client,
            ):
                await wait_for(client.pool, "intent", 10, timeout=60)
                ids = [await client.submit("get the total", type="float") for _ in range(10)]
                records = await client.wait_all(ids, timeout=90)
                events = [e for job in ids for e in await client.events.read(job)]
        finally:
            for worker in workers:
                worker.terminate()
            for worker in workers:
                worker.wait(20)
    assert all(record.status == "completed" for record in records.values()), "none failed"
    times = sorted(INTENT_ARRIVALS)
    assert len(times) == 10
    # a bucket of one request refilled at one a second: any stretch of T seconds holds at most
    # T + 1 requests (0.2 s allowed for the clocks of Redis and the endpoint)
    for first in range(len(times)):
        for last in range(first + 1, len(times)):
            assert last - first + 1 <= (times[last] - times[first] + 0.2) + 1
    assert times[-1] - times[0] >= 8.0, "ten requests at one a second take nine seconds"
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
        start = time.time() + START_DELAY_S
        callers(redis_url, fake.base_url, [start, start + 0.5, start + 1.0, start + 1.5], rpm=0)
        watcher.join(10)
    limited = fake.stats().by_fault.get("429", 0)
    assert limited >= 1
    # after the first 429 (Retry-After 3 s) nobody reached the endpoint until the pause ended,
    # though three processes started calling during it
    assert len(arrivals.times) == 4
    assert min(arrivals.times) >= seen[0] + 2.5, [t - seen[0] for t in arrivals.times]
