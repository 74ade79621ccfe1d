"""`postel bench web`: the dashboard's and the API's server time with many jobs and events.

A scratch Redis (never POSTEL_REDIS_URL: the bench writes synthetic jobs) is filled twice:
first with a baseline of `jobs / 100` jobs, then up to `jobs` jobs and `events` events in
all (each job's hops: submitted, received and completed per stage, a GASL round with its
commands; a tenth of them failed, a twentieth still running) plus `jobs / 10` dead letters.
After each fill the same pages are requested `requests` times over real HTTP from the web
server on a loopback port; the figure is the server's own time until the answer started
(its Server-Timing header), p50 and p95 per page. Paged lists should cost the same at both
sizes; a filter that matches few jobs reads at most SCAN_LIMIT records per page.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import httpx
from postel.infra.runtime.settings import WORKER_NAMES, Settings
from postel.infra.store import lanes
from postel.infra.store.connect import keyspace_of
from postel.infra.store.deadletter import DEAD_LETTER_MAXLEN
from postel.infra.store.events import Event, EventLog, run_commands
from postel.infra.store.job_stores import job_stores
from postel.infra.store.jobs import JobStore
from postel.infra.store.redis_server import configured_or_scratch
from postel.infra.store.wire import connect_arq
from postel.infra.web.server import WebServer
from postel.messages import JobRequest, utc_now
from redis.asyncio import Redis

_CHUNK = 250
_COMMANDS = "\n".join(
    [
        'success 371 FIND nodes WHERE entity_type = "PERSON" AS people',
        "success 19 AGGREGATE people BY source_ids WITH COLLECT OF id AS by_chunk",
        "success 17 SELECT by_chunk WHERE LEN value >= 2 AS shared",
    ]
)


def _job_events(job_id: str, n: int, events_per_job: int) -> tuple[str, list[Event]]:
    """A job's status and its hops, `events_per_job` of them."""
    status = "failed" if n % 10 == 3 else "running" if n % 20 == 7 else "completed"
    events = [
        Event(
            job_id=job_id,
            message_id=f"{job_id}:submitted",
            type="job.submitted",
            worker="client",
            stage="submit",
            status="submitted",
        )
    ]
    stages = list(WORKER_NAMES)
    while len(events) < events_per_job:
        stage = stages[(len(events) // 2) % len(stages)]
        received = len(events) % 2 == 1
        events.append(
            Event(
                job_id=job_id,
                message_id=f"{job_id}:{stage}:{len(events) // 2}",
                type=f"{stage}.message",
                worker=stage,
                stage=stage,
                status="received" if received else "completed",
                wait_ms=4.2,
                duration_ms=0.0 if received else 37.5,
                round=len(events) // 10,
                llm_calls=0 if received or stage in ("gasl", "validator") else 1,
                prompt_tokens=0 if received else 900,
                completion_tokens=0 if received else 120,
                commands=_COMMANDS if stage == "gasl" and not received else "",
            )
        )
    return status, events


async def _fill(
    redis: Redis,
    log: EventLog,
    jobs: JobStore,
    first: int,
    last: int,
    events_per_job: int,
) -> None:
    """Jobs first..last-1: records, index entries, events, and a dead letter per tenth."""
    request = JobRequest(prompt="Which authors in these reports collaborate most?")
    keyspace = jobs.keyspace
    for start in range(first, last, _CHUNK):
        async with redis.pipeline(transaction=False) as pipe:
            for n in range(start, min(start + _CHUNK, last)):
                job_id = f"bench-{n:06d}"
                status, events = _job_events(job_id, n, events_per_job)
                now = utc_now()
                lane = keyspace.lane_of(job_id)
                pipe.hset(
                    keyspace.job(job_id),
                    mapping={
                        "job_id": job_id,
                        "status": "queued",
                        "stage": "intent",
                        "created_at": now.isoformat(),
                        "updated_at": now.isoformat(),
                        "request": request.model_dump_json(),
                        "title": f"{request.prompt} (#{n})",
                    },
                )
                pipe.zadd(keyspace.jobs(lane), {job_id: now.timestamp() * 1000})
                for event in events:
                    for command in log.commands(event):
                        pipe.execute_command(*command)
                if status == "running":
                    pipe.hset(keyspace.job(job_id), mapping={"status": "running", "stage": "gasl"})
                elif status == "failed":
                    pipe.execute_command(
                        *jobs.finished_command(job_id, error="boom", failure="out_of_tries")
                    )
                    pipe.xadd(
                        keyspace.dead_letters(lane),
                        {"source": "worker:gasl", "error": "boom", "raw": "{}", "job_id": job_id},
                        maxlen=DEAD_LETTER_MAXLEN,
                    )
                else:
                    pipe.execute_command(*jobs.finished_command(job_id, result="done"))
                pipe.expire(keyspace.job(job_id), jobs.ttl_s)
            await pipe.execute()


def _pages(jobs: int, cursor: str | None) -> dict[str, str]:
    middle = f"bench-{jobs // 2:06d}"
    pages = {
        "jobs, newest": "/jobs",
        "jobs, failed": "/jobs?status=failed",
        "jobs, running at gasl": "/jobs?status=running&stage=gasl",
        "jobs, search an id": f"/jobs?q={middle}",
        "job page (11 events)": f"/jobs/{middle}",
        "job page (2000 events)": "/jobs/bench-heavy",
        "dead letters": "/dead",
        "workers": "/workers",
        "queues": "/queues",
        "api: jobs": "/api/jobs",
        "api: job events": f"/api/jobs/{middle}/events",
    }
    if cursor is not None:
        pages["jobs, the middle page"] = f"/jobs?before={cursor}"
    return pages


async def _measure(web: WebServer, pages: dict[str, str], requests: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    async with httpx.AsyncClient(base_url=web.url.rstrip("/"), timeout=60) as client:
        for name, path in pages.items():
            server: list[float] = []
            for _ in range(requests):
                response = await client.get(path)
                response.raise_for_status()
                timing = response.headers["server-timing"].split("dur=")[1]
                server.append(float(timing))
            ordered = sorted(server)
            figures[name] = {
                "path": path,
                "p50_ms": round(statistics.median(ordered), 2),
                "p95_ms": round(ordered[min(int(0.95 * len(ordered)), len(ordered) - 1)], 2),
            }
    return figures


async def run_web_bench(
    settings: Settings, jobs: int = 10_000, events: int = 100_000, requests: int = 20
) -> dict[str, Any]:
    events_per_job = max(events // jobs, 3)
    baseline_jobs = max(jobs // 100, 10)
    sized = settings.model_copy(update={"events_maxlen": max(events, settings.events_maxlen)})
    async with configured_or_scratch(None) as url:
        pool = await connect_arq(url)
        try:
            keyspace = keyspace_of(url)
            log, store = job_stores(pool, keyspace, sized)
            request = JobRequest(prompt="a job with many hops")
            await run_commands(pool, store.created_commands("bench-heavy", request, "-"))
            _status, heavy = _job_events("bench-heavy", 0, sized.job_events_maxlen)
            async with pool.pipeline(transaction=False) as pipe:
                for event in heavy:
                    for command in log.commands(event):
                        pipe.execute_command(*command)
                await pipe.execute()
            async with WebServer(sized, url, "127.0.0.1", 0) as web:
                started = time.perf_counter()
                await _fill(pool, log, store, 0, baseline_jobs, events_per_job)
                small = await _measure(web, _pages(baseline_jobs, None), requests)
                await _fill(pool, log, store, baseline_jobs, jobs, events_per_job)
                filled_s = time.perf_counter() - started
                middle = f"bench-{jobs // 2:06d}"
                score = await pool.zscore(keyspace.jobs(keyspace.lane_of(middle)), middle)
                cursor = f"{score:.0f}:{middle}"
                large = await _measure(web, _pages(jobs, cursor), requests)
            counts = {
                "jobs": sum([await pool.zcard(keyspace.jobs(lane)) for lane in keyspace.lanes()]),
                "events": await lanes.length(pool, keyspace, keyspace.events),
                "dead_letters": await lanes.length(pool, keyspace, keyspace.dead_letters),
            }
        finally:
            await pool.aclose()
    return {
        "filled": counts,
        "baseline_jobs": baseline_jobs,
        "fill_s": round(filled_s, 1),
        "requests_per_page": requests,
        "pages": {
            name: {"baseline": small.get(name), "full": figures} for name, figures in large.items()
        },
    }


def format_web_bench(figures: dict[str, Any]) -> str:
    filled = figures["filled"]
    rows = [
        f"bench web: {filled['jobs']} jobs, {filled['events']} events, "
        f"{filled['dead_letters']} dead letters (filled in {figures['fill_s']} s); "
        f"server time per page over {figures['requests_per_page']} requests "
        f"(baseline: the same pages with {figures['baseline_jobs']} jobs)",
        f"{'page':<26}{'p50 ms':>10}{'p95 ms':>10}{'baseline p50':>15}",
    ]
    for name, page in figures["pages"].items():
        full, baseline = page["full"], page["baseline"]
        base = f"{baseline['p50_ms']:>15}" if baseline else f"{'-':>15}"
        rows.append(f"{name:<26}{full['p50_ms']:>10}{full['p95_ms']:>10}{base}")
    return "\n".join(rows)
