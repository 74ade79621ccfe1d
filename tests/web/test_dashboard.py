"""The dashboard's operator views over real HTTP and real Redis: failed model calls counted,
dead letters that say whether they can be redriven and can be discarded, what runs and
waits now, charts over the last hour, filters, requeue and cancelling many jobs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
import redis.asyncio as aioredis
from click.testing import CliRunner
from postel.infra.cli.main import main
from postel.infra.client.client import Client, JobFailedError
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.runner import load_worker
from postel.infra.runtime.settings import Settings
from postel.infra.store import keys
from postel.infra.store.deadletter import dead_letter, list_dead

from postel.testing.fake_model import FakeModel
from postel.testing.relay import RELAY_WORKERS

pytestmark = pytest.mark.slow


@pytest.fixture
def failing_model() -> Iterator[FakeModel]:
    with FakeModel(lambda request: "unused") as fake:
        fake.set_faults(mode="500")
        yield fake


async def test_a_job_whose_every_model_call_failed_counts_them(
    redis_url: str, settings: Settings, failing_model: FakeModel, api: httpx.AsyncClient
) -> None:
    settings.llm_provider = "openai"
    settings.llm_base_url = failing_model.base_url
    settings.llm_max_retries = 2
    specs = [load_worker("intent"), *RELAY_WORKERS[1:]]
    async with (
        LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
        Client(system.url, settings) as client,
    ):
        job_id = await client.submit("hello")
        with pytest.raises(JobFailedError):
            await client.result(job_id, timeout=60)
    made = failing_model.stats().total
    assert made == 3, "three attempts, all answered 500"
    record = (await api.get(f"/api/jobs/{job_id}")).json()
    assert (record["llm_calls"], record["failed_llm_calls"]) == (0, made)
    page = (await api.get(f"/jobs/{job_id}")).text
    assert 'id="failed-llm-calls">3<' in page
    listed = (await api.get("/jobs")).text
    assert "3 failed" in listed


async def test_dead_letters_offer_redrive_only_where_it_can_work_and_say_why_in_words(
    api: httpx.AsyncClient, redis_client: aioredis.Redis
) -> None:
    poison = await dead_letter(redis_client, source="worker:gasl", error="x", payload="not json")
    invalid = await dead_letter(
        redis_client, source="worker:planner", error="y", payload={"type": "task.planned"}
    )
    retried = await dead_letter(
        redis_client,
        source="worker:intent",
        error="LLMServerError: http://m/v1 failed after 5 attempt(s): HTTP 500",
        payload={"type": "job.submitted"},
        attempt=1,
    )
    page = (await api.get("/dead")).text
    rows = {entry: _row(page, entry) for entry in (poison, invalid, retried)}
    assert "cannot be redriven: the payload still cannot be decoded: it is not JSON" in rows[poison]
    assert "Redrive</button>" not in rows[poison]
    assert (
        "it is not a valid message" in rows[invalid] and "job_id: Field required" in rows[invalid]
    )
    assert "errors.pydantic.dev" not in page, "pydantic's raw text, with its URL, is not shown"
    assert "model ×5" in rows[retried], "the model's five attempts are shown, not only tries 1"
    letter = (await api.get(f"/api/dead/{retried}")).json()
    assert (letter["attempt"], letter["model_attempts"]) == (1, 5)
    refused = (await api.post(f"/api/dead/{invalid}/redrive")).json()["detail"]
    assert "errors.pydantic.dev" not in refused and "Field required" in refused


def _row(page: str, entry: str) -> str:
    start = page.index(f'data-dead="{entry}"')
    return page[start : page.index("</tr>", start)]


async def test_discard_one_from_the_page_and_all_matching_in_the_api_and_cli_as_events(
    api: httpx.AsyncClient, redis_client: aioredis.Redis, redis_url: str, settings: Settings
) -> None:
    one = await dead_letter(
        redis_client, source="worker:gasl", error="boom", payload="x", job_id="job-a"
    )
    gasl = [
        await dead_letter(redis_client, source="worker:gasl", error="bad", payload="x")
        for _ in range(2)
    ]
    kept = await dead_letter(redis_client, source="worker:intent", error="bad", payload="x")
    cli_one = await dead_letter(redis_client, source="ingress", error="nope", payload="x")
    page = (await api.get("/dead")).text
    assert f'action="/dead/{one}/discard"' in page and 'id="discard-all"' in page
    back = await api.post(f"/dead/{one}/discard", data={"back": "/dead"})
    assert back.status_code == 303 and "discarded" in back.headers["location"]
    assert (await api.delete(f"/api/dead/{one}")).status_code == 404
    done = (await api.post("/api/dead/discard", params={"worker": "gasl"})).json()
    assert sorted(done["discarded"]) == sorted(gasl)
    runner = CliRunner(env={"POSTEL_REDIS_URL": redis_url})
    result = await asyncio.to_thread(runner.invoke, main, ["dead", "discard", cli_one])
    assert result.exit_code == 0, result.output
    missing = await asyncio.to_thread(runner.invoke, main, ["dead", "discard", cli_one])
    assert missing.exit_code == 4
    assert [d.id for d in (await list_dead(redis_client)).items] == [kept]
    entries = await redis_client.xrange(keys.EVENTS)
    discarded = [f for _, f in entries if f[b"status"] == b"discarded"]
    assert len(discarded) == 4
    assert {f[b"worker"] for f in discarded} == {b"web", b"cli"}
    job_events = await redis_client.xrange(keys.job_events("job-a"))
    assert [f[b"status"] for _, f in job_events] == [b"discarded"]
