"""Prometheus metrics (infra/web/metrics.py): after real jobs, `/metrics` parsed with the
Prometheus client's own parser shows every series with the values the run implies, a second
scrape counts only what is new, and a lone worker serves the same on --metrics-port."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.settings import Settings
from postel.infra.store.redis_server import free_port
from postel.infra.web.server import WebServer
from postel.services.llm import ScriptedClient
from postel.services.prompts import Capability
from prometheus_client.parser import text_string_to_metric_families

CASSETTE = Path(__file__).parents[1] / "pipeline" / "cassettes" / "invoice_total.json"
INVOICE = "ACME Tools — Invoice 2026-118\n2 x hammer $40.00\nTOTAL DUE: $165.50"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


async def run_reason_job(client: Client) -> None:
    job_id = await client.submit("get the total price", type="float", text=INVOICE)
    assert await client.result(job_id, timeout=30) == 165.5


async def test_metrics_show_the_systems_jobs_hops_queues_workers_and_model_use(
    redis_url: str, settings: Settings
) -> None:
    model = Model(ScriptedClient.from_cassette(CASSETTE), Capability.STANDARD)
    async with (
        LocalSystem(settings, redis_url=redis_url, resources={RESOURCE: model}),
        Client(redis_url, settings) as client,
        WebServer(settings, redis_url, "127.0.0.1", 0) as web,
        httpx.AsyncClient(base_url=web.url) as http,
    ):
        await run_reason_job(client)
        scraped = await http.get("/metrics")
        assert scraped.status_code == 200
        assert scraped.headers["content-type"].startswith("text/plain")
        first = samples(scraped.text)
        model.client = ScriptedClient.from_cassette(CASSETTE)
        await run_reason_job(client)
        second = samples((await http.get("/metrics")).text)
    for found, jobs in ((first, 1), (second, 2)):
        assert value(found, "postel_jobs_total", status="submitted") == jobs
        assert value(found, "postel_jobs_total", status="completed") == jobs
        assert value(found, "postel_hop_wait_seconds_count", stage="intent") == jobs
        assert value(found, "postel_hop_duration_seconds_count", stage="generator") == jobs
        assert value(found, "postel_hops_total", stage="validator", status="completed") >= jobs
        calls = sum(
            value(found, "postel_model_calls_total", stage=s)
            for s in ("intent", "planner", "generator")
        )
        assert calls == 3 * jobs, "intent, task plan and the answer, per job"
        assert value(found, "postel_model_tokens_total", stage="intent", kind="prompt") > 0
    assert value(second, "postel_queue_depth", queue="intent") == 0
    assert value(second, "postel_queue_oldest_age_seconds", queue="generator") == 0
    assert value(second, "postel_workers_live", kind="validator") >= 1
    assert value(second, "postel_dead_letters") == 0
    assert value(second, "postel_jobs_known") == 2
    families = {f.name for f in text_string_to_metric_families(scraped.text)}
    assert "postel_model_budget_wait_seconds" in families


def test_a_lone_worker_serves_metrics_on_its_port(redis_url: str) -> None:
    port = free_port()
    base = {k: v for k, v in os.environ.items() if not k.startswith("POSTEL_")}
    env = {**base, "POSTEL_REDIS_URL": redis_url, "POSTEL_LOG_LEVEL": "WARNING"}
    worker = subprocess.Popen(
        [sys.executable, "-m", "postel", "worker", "validator", "--metrics-port", str(port)],
        env=env,
    )
    try:
        for _ in range(150):
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
                found = samples(answer.text)
                if value(found, "postel_workers_live", kind="validator") >= 1:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        else:
            pytest.fail("no metrics from the worker's port after 150 polls")
    finally:
        worker.terminate()
        worker.wait(20)
    assert worker.returncode == 0
    assert ("postel_queue_depth", (("queue", "validator"),)) in found
