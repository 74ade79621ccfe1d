"""`postel bench bus`: what the runtime costs per hop, against bare arq on the same Redis.

Both sides cross five queues with the same poll_delay, JSON serializer and concurrency:
- postel: the relay workers (infra/relay.py) — decode, events, idempotent commit, enqueue;
- bare arq: five no-op functions, each enqueuing the next.
Figures: per-hop latency (enqueue to start of the next stage) p50/p99 with one job in
flight, end-to-end time per job / 5 (per-hop cost), and jobs/s with `jobs` in flight.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from arq import Worker
from arq.connections import ArqRedis, RedisSettings
from arq.worker import func
from postel.infra.client import Client
from postel.infra.local_system import LocalSystem
from postel.infra.redis_server import configured_or_scratch
from postel.infra.relay import RELAY_WORKERS
from postel.infra.settings import Settings
from postel.infra.wire import connect_arq, dumps, loads

STAGES = 5
BARE_QUEUE = "bench:bare:q:{}"


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


async def _postel_side(
    settings: Settings, url: str, jobs: int, latency_jobs: int
) -> dict[str, Any]:
    async with (
        LocalSystem(settings, redis_url=url, specs=RELAY_WORKERS),
        Client(url, settings) as client,
    ):
        waits: list[float] = []
        per_job: list[float] = []
        for _ in range(latency_jobs):
            job_id = await client.submit("bench")
            record = (await client.wait_all([job_id], timeout=30))[job_id]
            assert record.finished_at is not None
            per_job.append((record.finished_at - record.created_at).total_seconds() * 1000)
            events = await client.events.read(job_id)
            waits.extend(e.wait_ms for e in events if e.status == "received")
        started = time.perf_counter()
        ids = await asyncio.gather(*(client.submit("bench") for _ in range(jobs)))
        await client.wait_all(ids, timeout=300)
        elapsed = time.perf_counter() - started
    return _figures(waits, per_job, jobs, elapsed)


def _figures(waits: list[float], per_job: list[float], jobs: int, elapsed: float) -> dict[str, Any]:
    return {
        "hop_latency_p50_ms": round(_percentile(waits, 0.50), 3),
        "hop_latency_p99_ms": round(_percentile(waits, 0.99), 3),
        "per_hop_cost_ms": round(statistics.median(per_job) / STAGES, 3),
        "jobs_per_s": round(jobs / elapsed, 1),
    }


async def _bare_side(settings: Settings, url: str, jobs: int, latency_jobs: int) -> dict[str, Any]:
    poll_delay = settings.intent.poll_delay
    pool: ArqRedis = await connect_arq(url)
    finished: dict[str, asyncio.Future[None]] = {}
    waits: list[float] = []

    async def noop(ctx: dict[str, Any], stage: int, key: str, sent_at: float) -> None:
        waits.append((time.time() - sent_at) * 1000)
        if stage + 1 < STAGES:
            await pool.enqueue_job(
                "noop",
                stage + 1,
                key,
                time.time(),
                _queue_name=BARE_QUEUE.format(stage + 1),
                _job_id=f"{key}:{stage + 1}",
            )
        elif key in finished:
            finished[key].set_result(None)

    workers = [
        Worker(
            functions=[func(noop, name="noop")],
            queue_name=BARE_QUEUE.format(stage),
            redis_settings=RedisSettings.from_dsn(url),
            poll_delay=poll_delay,
            max_jobs=settings.concurrency,
            handle_signals=False,
            job_serializer=dumps,
            job_deserializer=loads,
            log_results=False,
        )
        for stage in range(STAGES)
    ]
    tasks = [asyncio.create_task(w.async_run()) for w in workers]

    async def one(key: str) -> None:
        finished[key] = asyncio.get_running_loop().create_future()
        await pool.enqueue_job(
            "noop", 0, key, time.time(), _queue_name=BARE_QUEUE.format(0), _job_id=f"{key}:0"
        )
        await asyncio.wait_for(finished[key], 120)

    try:
        per_job: list[float] = []
        for n in range(latency_jobs):
            started = time.perf_counter()
            await one(f"lat{n}")
            per_job.append((time.perf_counter() - started) * 1000)
        latency_waits = list(waits)
        started = time.perf_counter()
        await asyncio.gather(*(one(f"thr{n}") for n in range(jobs)))
        elapsed = time.perf_counter() - started
    finally:
        for task in tasks:
            task.cancel()
        for worker in workers:
            await worker.close()
        await pool.aclose()
    return _figures(latency_waits, per_job, jobs, elapsed)


async def run_bus_bench(settings: Settings, jobs: int = 200) -> dict[str, Any]:
    """Both sides on one Redis: POSTEL_REDIS_URL if set, else a fresh embedded server."""
    latency_jobs = min(jobs, 100)
    async with configured_or_scratch(settings.redis_url) as url:
        bare = await _bare_side(settings, url, jobs, latency_jobs)
        postel = await _postel_side(settings, url, jobs, latency_jobs)
    return {
        "jobs": jobs,
        "poll_delay_s": settings.intent.poll_delay,
        "redis": "POSTEL_REDIS_URL" if settings.redis_url else "embedded",
        "postel": postel,
        "bare_arq": bare,
        "per_hop_cost_ratio": round(postel["per_hop_cost_ms"] / bare["per_hop_cost_ms"], 2),
        "throughput_ratio": round(postel["jobs_per_s"] / bare["jobs_per_s"], 2),
    }


def format_bus_bench(figures: dict[str, Any]) -> str:
    rows = [
        f"bench bus: {figures['jobs']} jobs x {STAGES} stages, poll_delay "
        f"{figures['poll_delay_s']} s, redis {figures['redis']}",
        f"{'':<10}{'hop p50 ms':>12}{'hop p99 ms':>12}{'per-hop ms':>12}{'jobs/s':>10}",
    ]
    for side in ("postel", "bare_arq"):
        f = figures[side]
        rows.append(
            f"{side:<10}{f['hop_latency_p50_ms']:>12}{f['hop_latency_p99_ms']:>12}"
            f"{f['per_hop_cost_ms']:>12}{f['jobs_per_s']:>10}"
        )
    rows.append(
        f"postel / bare arq: per-hop cost x{figures['per_hop_cost_ratio']}, "
        f"throughput x{figures['throughput_ratio']}"
    )
    return "\n".join(rows)
