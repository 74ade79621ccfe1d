"""Shared model budgets (infra/budgets.py): processes sharing a route never send the endpoint
more than its requests/min (plus the documented burst) and none fails for waiting; a 429
with Retry-After seen by one process pauses the others. Real processes, a counting endpoint
on loopback, the route's buckets in Redis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from postel.infra.fake_model import FakeModel
from postel.services.llm import LLMRequest

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


def test_ten_processes_share_a_60_per_minute_route(redis_url: str) -> None:
    arrivals = Arrivals()
    with FakeModel(arrivals) as fake:
        start = time.time() + START_DELAY_S
        waits = callers(redis_url, fake.base_url, [start] * 10, rpm=60)
    times = sorted(arrivals.times)
    assert len(times) == 10
    # a bucket of one request refilled at one per second: any stretch of T seconds holds at
    # most T + 1 requests (0.2 s allowed for the clocks of Redis and the endpoint)
    for first in range(len(times)):
        for last in range(first + 1, len(times)):
            assert last - first + 1 <= (times[last] - times[first] + 0.2) * 1 + 1
    assert times[-1] - times[0] >= 8.0, "ten requests at one per second take nine seconds"
    assert sum(w[0] > 500 for w in waits) >= 8, "the waits show in the answers"


def test_a_429_seen_by_one_process_pauses_the_others(redis_url: str) -> None:
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
