"""The dashboard's operator views over real HTTP and real Redis: failed model calls counted,
dead letters that say whether they can be redriven and can be discarded, what runs and
waits now, charts over the last hour, filters, requeue and cancelling many jobs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest
import redis.asyncio as aioredis
from click.testing import CliRunner
from postel.infra.cli.main import main
from postel.infra.client.client import Client, JobFailedError
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.runner import load_worker
from postel.infra.runtime.settings import Settings
from postel.infra.store.deadletter import dead_letter, list_dead
from postel.infra.store.keys import Keyspace
from postel.infra.web import charts as charts_module
from postel.infra.web.charts import ChartWindow
from postel.infra.web.system_view import QUEUE_PAGE
from postel.messages import JobFailed, JobRequest, JobSubmitted, utc_now
from postel.services.llm import LLMRequest, ScriptedClient
from postel.services.prompts import Capability
from support.recording import Recorder
from support.story_model import QUESTION, respond

from postel.testing.fake_model import FakeModel
from postel.testing.relay import RELAY_WORKERS

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""


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
    poison = await dead_letter(
        redis_client, KEYS, source="worker:gasl", error="x", payload="not json"
    )
    invalid = await dead_letter(
        redis_client, KEYS, source="worker:planner", error="y", payload={"type": "task.planned"}
    )
    retried = await dead_letter(
        redis_client,
        KEYS,
        source="worker:intent",
        error="LLMServerError: http://m/v1 failed after 5 attempt(s): HTTP 500",
        payload=JobSubmitted(
            job_id="j1", message_id="j1:submitted", request=JobRequest(prompt="hello")
        ).model_dump(mode="json"),
        attempt=1,
    )
    page = (await api.get("/dead")).text
    rows = {entry: _row(page, entry) for entry in (poison, invalid, retried)}
    assert (
        "Redrive cannot work: the payload still cannot be decoded: it is not JSON" in (rows[poison])
    )
    assert "Redrive</button>" not in rows[poison]
    assert "no try was counted" in rows[poison], "a payload that never decoded shows no tries"
    assert (
        "it is not a valid message" in rows[invalid] and "job_id: Field required" in rows[invalid]
    )
    assert "errors.pydantic.dev" not in page, "pydantic's raw text, with its URL, is not shown"
    assert "model ×5" in rows[retried], "the model's five attempts are shown, not only tries 1"
    letter = (await api.get(f"/api/dead/{retried}")).json()
    assert (letter["attempt"], letter["model_attempts"]) == (1, 5)
    assert letter["redrive_blocker"] is None
    blocked = (await api.get(f"/api/dead/{poison}")).json()["redrive_blocker"]
    assert blocked.startswith("the payload still cannot be decoded: it is not JSON")
    refused = (await api.post(f"/api/dead/{invalid}/redrive")).json()["detail"]
    assert "errors.pydantic.dev" not in refused and "Field required" in refused


def _row(page: str, entry: str) -> str:
    start = page.index(f'data-dead="{entry}"')
    return page[start : page.index("</tr>", start)]


async def test_discard_one_from_the_page_and_all_matching_in_the_api_and_cli_as_events(
    api: httpx.AsyncClient, redis_client: aioredis.Redis, redis_url: str, settings: Settings
) -> None:
    one = await dead_letter(
        redis_client, KEYS, source="worker:gasl", error="boom", payload="x", job_id="job-a"
    )
    gasl = [
        await dead_letter(redis_client, KEYS, source="worker:gasl", error="bad", payload="x")
        for _ in range(2)
    ]
    kept = await dead_letter(redis_client, KEYS, source="worker:intent", error="bad", payload="x")
    cli_one = await dead_letter(redis_client, KEYS, source="ingress", error="nope", payload="x")
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
    assert [d.id for d in (await list_dead(redis_client, KEYS)).items] == [kept]
    entries = await redis_client.xrange(KEYS.events(""))
    discarded = [f for _, f in entries if f[b"status"] == b"discarded"]
    assert len(discarded) == 4
    assert {f[b"worker"] for f in discarded} == {b"web", b"cli"}
    job_events = await redis_client.xrange(KEYS.job_events("job-a"))
    assert [f[b"status"] for _, f in job_events] == [b"discarded"]


async def test_jobs_filter_by_failure_and_time_cancel_many_requeue_and_chart_the_hour(
    redis_url: str, settings: Settings, api: httpx.AsyncClient
) -> None:
    recorder = Recorder(held="gasl")
    async with LocalSystem(settings, redis_url=redis_url, specs=recorder.specs()):
        ids = [
            (await api.post("/api/jobs", json={"prompt": f"held {n}"})).json()["job_id"]
            for n in range(3)
        ]
        async with asyncio.timeout(20):
            await recorder.entered.wait()
        # the first job held at gasl says nothing of the other two: they may still be on
        # their way through intent and planner
        for _ in range(400):
            waiting = (await api.get("/queues", params={"worker": "gasl"})).text
            if all(f'href="/jobs/{job_id}"' in waiting for job_id in ids):
                break
            await asyncio.sleep(0.05)
        assert 'id="queue-contents"' in waiting
        assert all(f'href="/jobs/{job_id}"' in waiting for job_id in ids)
        assert "gasl.plan_requested" in waiting and "taken" in waiting
        # a taken message is due again only if its lease lapses: the page says when that is
        assert "lease ends in" in waiting.split('id="queue-contents"')[1]
        listed = (await api.get("/jobs")).text
        assert all(f'value="{job_id}"' in listed for job_id in ids), "running jobs can be picked"
        report = await api.post("/api/jobs/cancel", json={"job_ids": [*ids[:2], "nowhere"]})
        assert report.status_code == 200
        assert report.json()["cancelled"] == ids[:2]
        assert list(report.json()["refused"]) == ["nowhere"]
        picked = await api.post("/jobs/cancel", data={"job": ids[2], "back": "/jobs"})
        assert picked.status_code == 303
        assert picked.headers["location"] == "/jobs?note=cancelled-many&done=1&refused=0"
        again = (await api.post("/api/jobs/cancel", json={"job_ids": ids[:1]})).json()
        assert again["cancelled"] == [] and "already finished" in again["refused"][ids[0]]
        recorder.release.set()

        cancelled = (await api.get("/api/jobs", params={"failure": "cancelled"})).json()
        assert sorted(j["job_id"] for j in cancelled["items"]) == sorted(ids)
        assert (await api.get("/api/jobs", params={"failure": "llm_error"})).json()["items"] == []
        recent = (await api.get("/api/jobs", params={"within": "15m"})).json()
        assert len(recent["items"]) == 3
        bad = await api.get("/api/jobs", params={"within": "fortnight"})
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "within"]
        page = (await api.get("/jobs", params={"failure": "cancelled", "within": "1h"})).text
        assert all(f'data-job="{job_id}"' in page for job_id in ids)
        assert '<option value="cancelled" selected>' in page
        assert 'class="pill cancelled"' in page

        requeued = await api.post(f"/api/jobs/{ids[0]}/requeue")
        assert requeued.status_code == 201, requeued.text
        clone = requeued.json()["job_id"]
        assert clone not in ids and requeued.json()["requeued_from"] == ids[0]
        record = (await api.get(f"/api/jobs/{clone}")).json()
        assert record["requeued_from"] == ids[0] and record["request"]["prompt"] == "held 0"
        assert (await api.get(f"/api/jobs/{ids[0]}")).json()["requeued_as"] == clone
        assert 'id="requeued-as"' in (await api.get(f"/jobs/{ids[0]}")).text
        running = await api.post(f"/api/jobs/{clone}/requeue")
        assert running.status_code == 409 and "only a failed job" in running.json()["detail"]
        assert (await api.post("/api/jobs/nowhere/requeue")).status_code == 404
        from_page = await api.post(f"/jobs/{ids[1]}/requeue")
        assert from_page.status_code == 303 and from_page.headers["location"].endswith(
            "?note=requeued"
        )

    charts = (await api.get("/charts")).text
    assert 'id="chart-outcomes"' in charts and 'class="k-cancelled"' in charts
    assert "cancelled: 3 jobs" in charts
    assert '<polyline class="k-intent"' in charts, "the hop latency of the intent stage"
    assert 'id="charts"' in (await api.get("/jobs")).text


async def test_a_hop_in_progress_shows_its_worker_attempt_and_model_call_in_flight(
    redis_url: str, settings: Settings, api: httpx.AsyncClient, quick_presence: float
) -> None:
    answer = asyncio.Event()

    async def slow(request: LLMRequest) -> str:
        await answer.wait()
        return respond(request)

    model = Model(ScriptedClient(responder=slow), Capability.STANDARD)
    specs = [load_worker("intent"), *RELAY_WORKERS[1:]]
    async with LocalSystem(settings, redis_url=redis_url, specs=specs, resources={RESOURCE: model}):
        job_id = (await api.post("/api/jobs", json={"prompt": QUESTION})).json()["job_id"]
        async with asyncio.timeout(30):  # the worker reports what it does every few seconds
            while 'id="model-call-in-flight"' not in (
                page := (await api.get(f"/jobs/{job_id}")).text
            ):
                await asyncio.sleep(0.2)
        now = page[page.index('id="now"') : page.index('id="timeline"')]
        assert "intent" in now and "job.submitted" in now and "attempt 1" in now
        assert "model call in flight for" in now and "0 model calls answered" in now
        assert "running" in page[page.index('id="timeline"') :]
        workers = await _text(api, "/workers")
        assert f'href="/jobs/{job_id}">intent · submitted</a>' in workers
        assert "model call" in workers
        answer.set()
        async with asyncio.timeout(30):
            while (await api.get(f"/api/jobs/{job_id}")).json()["status"] != "completed":
                await asyncio.sleep(0.1)
    assert 'id="now"' not in (await api.get(f"/jobs/{job_id}")).text


async def _text(api: httpx.AsyncClient, path: str) -> str:
    return (await api.get(path)).text


async def test_failed_attempts_of_a_hop_that_then_succeeded_are_counted_too(
    redis_url: str, settings: Settings, api: httpx.AsyncClient
) -> None:
    with FakeModel(respond) as flaky:
        flaky.set_faults(mix={"500": 0.5}, seed=7)  # two 500s, then a success
        settings.llm_provider = "openai"
        settings.llm_base_url = flaky.base_url
        settings.llm_max_retries = 8
        specs = [load_worker("intent"), *RELAY_WORKERS[1:]]
        async with (
            LocalSystem(settings, redis_url=redis_url, specs=specs) as system,
            Client(system.url, settings) as client,
        ):
            job_id = await client.submit(QUESTION)
            await client.result(job_id, timeout=60)
        failures = flaky.stats().by_fault.get("500", 0)
    assert failures > 0, "the seed makes some calls fail"
    record = (await api.get(f"/api/jobs/{job_id}")).json()
    assert (record["llm_calls"], record["failed_llm_calls"]) == (1, failures)
    events = (await api.get(f"/api/jobs/{job_id}/events")).json()
    intent = next(e for e in events if e["worker"] == "intent" and e["status"] == "completed")
    assert intent["failed_llm_calls"] == failures


async def test_a_queue_is_listed_in_pages_and_jobs_by_when_they_were_created(
    redis_url: str, settings: Settings, api: httpx.AsyncClient, redis_client: aioredis.Redis
) -> None:
    ids = []
    async with Client(redis_url, settings) as client:  # no workers: everything waits
        for n in range(QUEUE_PAGE + 2):
            ids.append(await client.submit(f"waiting {n}"))
            # a queue orders by the millisecond a message was queued: two in one are a tie
            await asyncio.sleep(0.002)
    first = await _text(api, "/queues?worker=intent")
    assert first.count("<tr data-message=") == QUEUE_PAGE
    assert f'offset={QUEUE_PAGE}" id="queue-next"' in first
    assert "waiting" in first and "taken" not in first.split('id="queue-contents"')[1]
    rest = await _text(api, f"/queues?worker=intent&offset={QUEUE_PAGE}")
    assert rest.count("<tr data-message=") == 2 and 'id="queue-next"' not in rest
    assert f'href="/jobs/{ids[-1]}"' in rest and f">{QUEUE_PAGE + 2}</td>" in rest
    assert "show-queue" in first and 'id="queue-contents"' not in await _text(api, "/queues")

    two_hours_ago = (utc_now().timestamp() - 7200) * 1000
    await redis_client.zadd(KEYS.jobs(""), {ids[0]: two_hours_ago})
    hour = (await api.get("/api/jobs", params={"within": "1h", "limit": 200})).json()
    assert ids[0] not in [j["job_id"] for j in hour["items"]] and hour["next"] is None
    assert len(hour["items"]) == len(ids) - 1
    day = (await api.get("/api/jobs", params={"within": "6h", "limit": 200})).json()
    assert ids[0] in [j["job_id"] for j in day["items"]]
    paged = (await api.get("/api/jobs", params={"within": "1h", "limit": 20})).json()
    assert len(paged["items"]) == 20 and paged["next"] is not None


async def test_the_chart_window_adds_what_is_new_and_counts_only_the_last_hour(
    redis_client: aioredis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = int(utc_now().timestamp() * 1000)
    await redis_client.xadd(
        KEYS.results(""), {"job_id": "old", "status": "completed"}, id=f"{now - 7_200_000}-0"
    )
    await redis_client.xadd(
        KEYS.results(""), {"job_id": "a", "status": "completed"}, id=f"{now - 1_800_000}-0"
    )
    window = ChartWindow()
    outcomes = (await window.read(redis_client, KEYS)).charts[0]
    assert outcomes.legend == [("completed", "completed 1")], "the entry of 2 h ago is left out"
    cancelled = JobFailed(job_id="b", message_id="b:cancelled", status="cancelled", error="x")
    await redis_client.xadd(
        KEYS.results(""),
        {"job_id": "b", "status": "failed", "message": cancelled.model_dump_json()},
    )
    # a handled hop's event carries its wait; a `received` one is not counted twice
    for status, wait in (("completed", 10.0), ("continued", 30.0), ("received", 500.0)):
        await redis_client.xadd(
            KEYS.events(""), {"worker": "planner", "status": status, "wait_ms": str(wait)}
        )
    later = await window.read(redis_client, KEYS)
    assert later.charts[0].legend == [("completed", "completed 1"), ("cancelled", "cancelled 1")]
    assert later.charts[1].legend == [("planner", "planner 20 ms")]
    assert later.partial_from is None
    monkeypatch.setattr(charts_module, "CHART_EVENTS", 3)
    for _ in range(4):  # a burst of more than one read takes: the window starts over
        await redis_client.xadd(
            KEYS.events(""), {"worker": "gasl", "status": "completed", "wait_ms": "5"}
        )
    burst = await window.read(redis_client, KEYS)
    assert burst.partial_from is not None
    assert [kind for kind, _ in burst.charts[1].legend] == ["gasl"]


async def test_one_live_requeue_per_job_and_the_same_idempotency_key_answers_the_same(
    api: httpx.AsyncClient,
) -> None:
    """No workers: a requeue stays queued, so live."""
    failed = (await api.post("/api/jobs", json={"prompt": "to fail"})).json()["job_id"]
    await api.post(f"/api/jobs/{failed}/cancel")
    keyed = {"Idempotency-Key": "retry-1"}
    at_once = await asyncio.gather(
        *[api.post(f"/api/jobs/{failed}/requeue", headers=keyed) for _ in range(3)],
        *[api.post(f"/api/jobs/{failed}/requeue") for _ in range(3)],
    )
    made = {answer.json()["job_id"] for answer in at_once if answer.status_code == 201}
    assert len(made) == 1, [answer.text for answer in at_once]
    [clone] = made
    refused = [answer for answer in at_once if answer.status_code != 201]
    assert all(answer.status_code == 409 for answer in refused)
    assert all(f"live requeue already: job {clone}" in a.json()["detail"] for a in refused)
    assert (await api.get(f"/api/jobs/{failed}")).json()["requeued_as"] == clone
    again = await api.post(f"/api/jobs/{failed}/requeue", headers=keyed)
    if again.status_code == 201:  # the keyed requests made the clone: the key answers it
        assert again.json()["job_id"] == clone
    else:
        assert again.status_code == 409
    listed = (await api.get("/api/jobs", params={"q": "to fail"})).json()["items"]
    assert len(listed) == 2, "the failed job and its one requeue"
    page = (await api.get(f"/jobs/{failed}")).text
    from_page = await api.post(f"/jobs/{failed}/requeue", data={"idempotency_key": "k2"})
    assert from_page.headers["location"] == f"/jobs/{failed}?note=requeue-live"
    assert 'name="idempotency_key"' not in page, "the requeue button shows on a failed job only"

    await api.post(f"/api/jobs/{clone}/cancel")
    second = await api.post(f"/api/jobs/{failed}/requeue", headers={"Idempotency-Key": "retry-2"})
    assert second.status_code == 201 and second.json()["job_id"] != clone
    replayed = await api.post(f"/api/jobs/{failed}/requeue", headers={"Idempotency-Key": "retry-2"})
    assert replayed.json()["job_id"] == second.json()["job_id"]
    assert (await api.get(f"/api/jobs/{failed}")).json()["requeued_as"] == second.json()["job_id"]
    too_long = await api.post(f"/api/jobs/{failed}/requeue", headers={"Idempotency-Key": "k" * 201})
    assert too_long.status_code == 422


async def test_a_page_note_is_the_servers_words_never_the_links(api: httpx.AsyncClient) -> None:
    planted = "Your session expired: log in at evil.example"
    for path in ("/jobs", "/dead", "/jobs/nope"):
        page = (await api.get(path, params={"note": planted})).text
        assert "evil.example" not in page and 'id="note"' not in page, path
    counted = (
        await api.get("/jobs", params={"note": "cancelled-many", "done": "3", "refused": "x"})
    ).text
    assert "cancelled 3, not cancelled 0 (finished, or unknown)" in counted
    queue = (await api.get("/dead", params={"note": "redriven", "queue": planted})).text
    assert "back on the its queue" in queue and "evil.example" not in queue
    named = (await api.get("/dead", params={"note": "redriven", "queue": "gasl"})).text
    assert "redriven: the message is back on the gasl queue" in named


async def test_a_document_answer_shows_the_words_of_every_block(
    api: httpx.AsyncClient, redis_client: aioredis.Redis
) -> None:
    """The page reads an element's words as the terminal does (services.generation.markdown's
    `said`): a code block the model wrote under `text` is shown, not an empty box."""
    job_id = (await api.post("/api/jobs", json={"prompt": "d", "desired_type": "document"})).json()[
        "job_id"
    ]
    sections = [
        ("code_block", {"language": "sql", "text": "SELECT 1"}),
        ("paragraph", {"code": "said under code"}),
        ("heading", {"level": 2, "code": "a heading under code"}),
        ("code_block", {"language": "sql", "source": "kept under another name"}),
        ("code_block", {"language": "sql"}),
    ]
    document = {
        "sections": [
            {"id": f"s{n}", "content_type": kind, "elements": [element]}
            for n, (kind, element) in enumerate(sections)
        ]
    }
    await redis_client.hset(
        KEYS.job(job_id), mapping={"status": "completed", "result": json.dumps(document)}
    )
    page = (await api.get(f"/jobs/{job_id}")).text
    assert "<pre><code>SELECT 1</code></pre>" in page
    assert "<p>said under code</p>" in page and "<h2>a heading under code</h2>" in page
    assert "kept under another name" in page
    assert "<pre><code></code></pre>" not in page


async def test_redrive_is_offered_only_where_the_redrive_would_work(
    api: httpx.AsyncClient, redis_client: aioredis.Redis
) -> None:
    """The page asks what the redrive checks first (infra/runtime/redrive.py's stays_dead):
    a graph that is not registered, a job that is not a failed one."""
    lost = await dead_letter(
        redis_client,
        KEYS,
        source="ingress",
        error="unknown graph",
        payload={"job": json.dumps({"prompt": "about films", "graph": "films"})},
    )
    fine = await dead_letter(
        redis_client,
        KEYS,
        source="ingress",
        error="a hiccup",
        payload={"job": json.dumps({"prompt": "about nothing"})},
    )
    running = (await api.post("/api/jobs", json={"prompt": "running"})).json()["job_id"]
    message = JobSubmitted(
        job_id=running, message_id=f"{running}:submitted", request=JobRequest(prompt="running")
    )
    held = await dead_letter(
        redis_client,
        KEYS,
        source="worker:intent",
        error="lost its lease",
        payload=message.model_dump(mode="json"),
        job_id=running,
    )
    page = (await api.get("/dead")).text
    rows = {d: page.split(f'data-dead="{d}"')[1].split("</tr>")[0] for d in (lost, fine, held)}
    assert "Redrive cannot work: no graph named &#39;films&#39;" in rows[lost]
    assert 'class="secondary redrive"' not in rows[lost]
    assert "its job is queued; only a failed job is reopened" in rows[held]
    assert 'class="secondary redrive"' not in rows[held]
    assert 'class="secondary redrive"' in rows[fine]
    for letter in (lost, held):
        refused = await api.post(f"/api/dead/{letter}/redrive")
        assert refused.status_code == 409
        said = (
            rows[letter].split('class="small cannot">Redrive cannot work: ')[1].split("</div>")[0]
        )
        assert said.replace("&#39;", "'") in refused.json()["detail"]
    assert (await api.post(f"/api/dead/{fine}/redrive")).status_code == 200


async def test_the_badge_says_live_only_of_a_page_that_updates(api: httpx.AsyncClient) -> None:
    for path in ("/graphs", "/api/docs", "/jobs?static=1"):
        page = (await api.get(path)).text
        assert 'id="live-indicator" data-state="snapshot"' in page, path
        assert "does not update by itself" in page and '<span class="label">as of ' in page
    for path in ("/jobs", "/dead", "/workers", "/queues"):
        page = (await api.get(path)).text
        assert 'id="live-indicator" data-state="connecting"' in page, path
    style = (await api.get("/static/style.css")).text
    assert 'content: "static"' not in style
