"""The HTTP API over real HTTP (uvicorn on a loopback port) against real Redis: submit and
follow a job's Server-Sent Events to completion, cancel a running job, redrive a dead letter
to completion, and the errors: 422 naming the field, 404, 409, 413, the token."""

from __future__ import annotations

import asyncio
import gzip
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import QueueSettings, Settings
from postel.infra.store.calls import record_commands
from postel.infra.store.deadletter import dead_letter, list_dead
from postel.infra.store.events import run_commands
from postel.infra.store.keys import Keyspace
from postel.infra.web.job_story import CALLS_SHOWN
from postel.infra.web.pages import TEXT_SHOWN
from postel.infra.web.server import WebError, WebServer
from postel.messages.limits import MAX_PAYLOAD_BYTES
from postel.services.gasl.loaders import DEMO_GRAPH
from postel.services.llm import ChatMessage, LLMRequest, LLMResponse
from postel.services.llm.call_log import LoggedCall
from postel.services.llm.models import Usage
from pydantic import SecretStr
from support.recording import Breakable, Recorder

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""
TOKEN = "t0ken-0123456789abcdef"
"""A web token of the length the server asks (MIN_TOKEN_CHARS)."""


async def sse(
    client: httpx.AsyncClient, path: str, **headers: str
) -> AsyncIterator[dict[str, Any]]:
    """The stream's events as {event, id, data} until the server ends it."""
    async with client.stream("GET", path, headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        current: dict[str, Any] = {}
        async for line in response.aiter_lines():
            if line == "":
                if current:
                    yield current
                current = {}
            elif line.startswith(":"):
                continue
            else:
                field, _, value = line.partition(": ")
                current[field] = json.loads(value) if field == "data" else value


async def test_submit_and_follow_the_event_stream_to_completion(
    relay_system: LocalSystem, api: httpx.AsyncClient, settings: Settings
) -> None:
    response = await api.post("/api/jobs", json={"prompt": "over http", "desired_type": "str"})
    assert response.status_code == 201
    job_id = response.json()["job_id"]
    assert response.json()["url"] == f"/jobs/{job_id}"
    received = []
    async with asyncio.timeout(20):
        async for message in sse(api, f"/api/jobs/{job_id}/events/stream"):
            received.append(message)
    assert received[-1]["event"] == "end"
    hops = [m["data"] for m in received if m["event"] == "hop"]
    assert hops[0]["status"] == "submitted" and hops[0]["worker"] == "web"
    assert hops[-1]["type"] == "job.completed"
    async with Client(relay_system.url, settings) as client:
        stored = await client.events.read(job_id)
    assert [m["id"] for m in received if m["event"] == "hop"] == [e.id for e in stored]
    record = (await api.get(f"/api/jobs/{job_id}")).json()
    assert (record["status"], record["result"]) == ("completed", "over http")
    # a reconnecting client gets only what it missed
    resumed = [
        m
        async for m in sse(
            api, f"/api/jobs/{job_id}/events/stream", **{"Last-Event-ID": stored[-2].id or ""}
        )
    ]
    assert [m["data"]["type"] for m in resumed if m["event"] == "hop"] == ["job.completed"]


async def test_cancel_a_running_job_over_http(
    redis_url: str, settings: Settings, api: httpx.AsyncClient, redis_client: aioredis.Redis
) -> None:
    recorder = Recorder(held="gasl")
    async with LocalSystem(settings, redis_url=redis_url, specs=recorder.specs()):
        job_id = (await api.post("/api/jobs", json={"prompt": "cancel me"})).json()["job_id"]
        async with asyncio.timeout(20):
            await recorder.entered.wait()
        cancelled = await api.post(f"/api/jobs/{job_id}/cancel")
        assert cancelled.status_code == 200
        assert (cancelled.json()["status"], cancelled.json()["failure"]) == ("failed", "cancelled")
        recorder.release.set()
        async with asyncio.timeout(20):
            async for message in sse(api, f"/api/jobs/{job_id}/events/stream"):
                if message["event"] == "hop" and message["data"]["status"] == "dropped":
                    break
        again = await api.post(f"/api/jobs/{job_id}/cancel")
        assert again.status_code == 409 and "already finished" in again.json()["detail"]
    # the gasl handler's outcome was refused: no later stage handled anything
    assert recorder.workers() == ["intent", "planner", "gasl"]
    assert await redis_client.zcard(KEYS.queue("generator")) == 0
    assert (await api.post("/api/jobs/nowhere/cancel")).status_code == 404


async def test_redrive_a_dead_letter_to_completion_over_http(
    redis_url: str, settings: Settings, api: httpx.AsyncClient
) -> None:
    breakable = Breakable(stage="generator")
    quick = settings.model_copy(update={"generator": QueueSettings(job_timeout=30, max_tries=1)})
    async with LocalSystem(quick, redis_url=redis_url, specs=breakable.specs()):
        job_id = (await api.post("/api/jobs", json={"prompt": "second chance"})).json()["job_id"]
        async with asyncio.timeout(20):
            async for _message in sse(api, f"/api/jobs/{job_id}/events/stream"):
                pass
        record = (await api.get(f"/api/jobs/{job_id}")).json()
        assert record["failure"] == "out_of_tries"
        page = (await api.get("/api/dead", params={"worker": "generator"})).json()
        [letter] = page["items"]
        assert letter["job_id"] == job_id and "backend is down" in letter["error"]
        assert (await api.get(f"/api/dead/{letter['id']}")).json()["raw"] == letter["raw"]
        breakable.broken = False
        redriven = await api.post(f"/api/dead/{letter['id']}/redrive")
        assert redriven.status_code == 200, redriven.text
        assert redriven.json()["message_id"] == f"{job_id}:gen:0:redrive1"
        async with asyncio.timeout(20):
            async for _message in sse(api, f"/api/jobs/{job_id}/events/stream"):
                pass
        record = (await api.get(f"/api/jobs/{job_id}")).json()
        assert (record["status"], record["result"]) == ("completed", "second chance")
        assert (await api.get("/api/dead")).json()["total"] == 0
        gone = await api.post(f"/api/dead/{letter['id']}/redrive")
        assert gone.status_code == 404


async def test_a_poison_dead_letter_stays_dead_with_409(
    api: httpx.AsyncClient, redis_client: aioredis.Redis
) -> None:
    entry = await dead_letter(
        redis_client, KEYS, source="worker:gasl", error="x", payload="not json"
    )
    refused = await api.post(f"/api/dead/{entry}/redrive")
    assert refused.status_code == 409
    assert "still cannot be decoded" in refused.json()["detail"]
    report = (await api.post("/api/dead/redrive", params={"worker": "gasl"})).json()
    assert report["redriven"] == [] and entry in report["refused"]
    assert (await list_dead(redis_client, KEYS)).total == 1


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"prompt": ""}, ["body", "prompt"], "at least 1 character"),
        ({}, ["body", "prompt"], "Field required"),
        ({"prompt": "x", "desired_type": "banana"}, ["body", "desired_type"], "banana"),
        ({"prompt": "x", "colour": "red"}, ["body", "colour"], "Extra inputs"),
        ({"prompt": "x", "options": {"max_rounds": 0}}, ["body", "options", "max_rounds"], ""),
        ({"prompt": "x", "graph": "nowhere"}, ["body", "graph"], "no graph named 'nowhere'"),
    ],
)
async def test_a_bad_body_gets_422_naming_the_field(
    api: httpx.AsyncClient, body: dict[str, Any], field: list[str], message: str
) -> None:
    response = await api.post("/api/jobs", json=body)
    assert response.status_code == 422
    errors = response.json()["detail"]
    assert any(e["loc"][: len(field)] == field and message in e["msg"] for e in errors), errors


async def test_bodies_are_bounded_and_ids_checked(api: httpx.AsyncClient) -> None:
    not_json = await api.post(
        "/api/jobs", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert not_json.status_code == 422 and not_json.json()["detail"][0]["loc"][0] == "body"
    deep = "[" * 100 + "]" * 100
    nested = await api.post(
        "/api/jobs",
        content=f'{{"prompt": "x", "arguments": {{"a": {deep}}}}}'.encode(),
        headers={"content-type": "application/json"},
    )
    assert nested.status_code == 422 and "nesting limit is 64" in nested.json()["detail"][0]["msg"]
    huge = await api.post("/api/jobs", json={"prompt": "x" * (MAX_PAYLOAD_BYTES + 10)})
    assert huge.status_code == 413 and "size limit" in huge.json()["detail"]
    bad_id = await api.post("/api/jobs", params={"job_id": "no spaces"}, json={"prompt": "x"})
    assert bad_id.status_code == 422 and bad_id.json()["detail"][0]["loc"] == ["query", "job_id"]
    first = await api.post("/api/jobs", params={"job_id": "mine"}, json={"prompt": "x"})
    assert first.status_code == 201 and first.json()["job_id"] == "mine"
    again = await api.post("/api/jobs", params={"job_id": "mine"}, json={"prompt": "x"})
    assert again.status_code == 201 and again.json()["job_id"] == "mine", "idempotent"
    other = await api.post("/api/jobs", params={"job_id": "mine"}, json={"prompt": "y"})
    assert other.status_code == 409 and "different request" in other.json()["detail"]


async def test_a_missing_job_is_404_everywhere(api: httpx.AsyncClient) -> None:
    for path in (
        "/api/jobs/nope",
        "/api/jobs/nope/events",
        "/api/jobs/nope/rounds",
        "/api/jobs/nope/calls",
    ):
        response = await api.get(path)
        assert response.status_code == 404 and "no such job 'nope'" in response.json()["detail"]
    assert (await api.get("/api/jobs/nope/events/stream")).status_code == 404
    garbled = await api.get("/api/events/stream", params={"since": "yesterday"})
    assert garbled.status_code == 422 and "not a stream id" in garbled.text
    assert (await api.get("/api/dead/1-1")).status_code == 404
    assert (await api.get("/jobs/nope")).status_code == 404


async def test_jobs_are_listed_newest_first_in_pages_with_filters(
    relay_system: LocalSystem, api: httpx.AsyncClient
) -> None:
    ids = [
        (
            await api.post("/api/jobs", params={"job_id": f"list-{n}"}, json={"prompt": f"p {n}"})
        ).json()["job_id"]
        for n in range(7)
    ]
    async with Client(relay_system.url) as client:
        await client.wait_all(ids, timeout=20)
    first = (await api.get("/api/jobs", params={"limit": 3})).json()
    assert [j["job_id"] for j in first["items"]] == ["list-6", "list-5", "list-4"]
    assert first["total"] == 7 and first["next"]
    # a job submitted meanwhile does not shift the next page
    await api.post("/api/jobs", params={"job_id": "newcomer"}, json={"prompt": "late"})
    second = (await api.get("/api/jobs", params={"limit": 3, "before": first["next"]})).json()
    assert [j["job_id"] for j in second["items"]] == ["list-3", "list-2", "list-1"]
    assert (await api.get("/api/jobs", params={"q": "list-2"})).json()["items"][0]["title"] == "p 2"
    async with Client(relay_system.url) as client:
        await client.wait("newcomer", timeout=20)
    done = (await api.get("/api/jobs", params={"status": "completed", "limit": 50})).json()
    assert {j["job_id"] for j in done["items"]} == {*ids, "newcomer"}
    assert (await api.get("/api/jobs", params={"status": "failed"})).json()["items"] == []
    assert all(j["llm_calls"] == 0 and j["stage"] == "done" for j in done["items"])
    bad = await api.get("/api/jobs", params={"before": "not-a-cursor"})
    assert bad.status_code == 422


async def test_workers_queues_and_graphs(relay_system: LocalSystem, api: httpx.AsyncClient) -> None:
    job_id = (await api.post("/api/jobs", json={"prompt": "count me"})).json()["job_id"]
    async with Client(relay_system.url) as client:
        await client.wait(job_id, timeout=20)
    [process] = (await api.get("/api/workers")).json()
    assert process["workers"] == ["intent", "planner", "gasl", "generator", "validator"]
    assert all(process["handled"][kind] >= 1 for kind in process["workers"])
    queues = (await api.get("/api/queues")).json()
    assert next(q["worker"] for q in queues["queues"]) == "intent"
    assert all(q["depth"] == 0 and q["oldest_wait_s"] is None for q in queues["queues"])
    assert queues["jobs"] == 1
    packed = gzip.compress(DEMO_GRAPH.read_bytes())
    assert len(packed) < MAX_PAYLOAD_BYTES < DEMO_GRAPH.stat().st_size
    added = await api.put("/api/graphs/mmwr", content=packed, headers={"content-encoding": "gzip"})
    assert added.status_code == 201, added.text
    assert added.json()["nodes"] == 3261
    assert [g["name"] for g in (await api.get("/api/graphs")).json()] == ["mmwr"]
    bad = await api.put("/api/graphs/broken", content=b"<graphml>not really")
    assert (
        bad.status_code == 422 and "not a readable GraphML graph" in bad.json()["detail"][0]["msg"]
    )
    bad_name = await api.put("/api/graphs/no%20spaces", content=b"x")
    assert bad_name.status_code == 422 and bad_name.json()["detail"][0]["loc"] == ["path", "name"]


async def test_the_openapi_document_uses_the_contract_models(api: httpx.AsyncClient) -> None:
    document = (await api.get("/api/openapi.json")).json()
    body = document["paths"]["/api/jobs"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"]["$ref"].endswith("/JobRequest")
    assert {"/api/jobs/{job_id}/cancel", "/api/dead/{entry_id}/redrive"} <= set(document["paths"])
    docs = (await api.get("/api/docs")).text
    assert "/api/jobs/{job_id}/events/stream" in docs
    assert not re.search(r'(src|href)="(https?:)?//', docs), "nothing is loaded from elsewhere"


async def test_no_secret_is_ever_shown(
    redis_url: str, settings: Settings, relay_system: LocalSystem
) -> None:
    secret = "sk-do-not-show-4711"
    keyed = settings.model_copy(update={"llm_api_key": SecretStr(secret)})
    async with (
        WebServer(keyed, redis_url, "127.0.0.1", 0) as web,
        httpx.AsyncClient(base_url=web.url) as api,
    ):
        job_id = (await api.post("/api/jobs", json={"prompt": "anything"})).json()["job_id"]
        async with Client(redis_url) as client:
            await client.wait(job_id, timeout=20)
        pages = ["/", f"/jobs/{job_id}", "/workers", "/queues", "/dead", "/graphs", "/api/docs"]
        apis = [f"/api/jobs/{job_id}", f"/api/jobs/{job_id}/events", "/api/workers", "/api/jobs"]
        for path in pages + apis + ["/api/openapi.json"]:
            response = await api.get(path)
            assert response.status_code == 200, path
            assert secret not in response.text, path


async def test_the_token_is_checked_on_every_request(redis_url: str, settings: Settings) -> None:
    guarded = settings.model_copy(update={"web_token": SecretStr(TOKEN)})
    with pytest.raises(WebError, match="needs a token"):
        WebServer(settings, redis_url, "0.0.0.0", 0)
    async with WebServer(guarded, redis_url, "0.0.0.0", 0) as web:
        base = f"http://127.0.0.1:{web.port}"
        async with httpx.AsyncClient(base_url=base) as anonymous:
            for path in ("/api/jobs", "/api/workers", "/api/openapi.json", "/static/app.js"):
                assert (await anonymous.get(path)).status_code in (401, 303), path
            refused = await anonymous.post("/api/jobs", json={"prompt": "x"})
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
            wrong = await anonymous.get("/api/jobs", headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401
            page = await anonymous.get("/jobs/x?fragment=1")
            assert page.status_code == 303
            assert page.headers["location"] == "/login?next=%2Fjobs%2Fx%3Ffragment%3D1"
            login = await anonymous.get("/login")
            assert login.status_code == 200 and 'name="token"' in login.text
            bad_login = await anonymous.post("/login", data={"token": "nope", "next": "/queues"})
            assert bad_login.headers["location"].startswith("/login?next=%2Fqueues&wrong=1")
            good_login = await anonymous.post("/login", data={"token": TOKEN, "next": "//evil"})
            assert good_login.status_code == 303 and good_login.headers["location"] == "/"
            assert "httponly" in good_login.headers["set-cookie"].lower()
            assert (await anonymous.get("/queues")).status_code == 200, "the cookie now works"
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(base_url=base, headers=headers) as bearer:
            assert (await bearer.get("/api/jobs")).status_code == 200
            assert (await bearer.post("/api/jobs", json={"prompt": "x"})).status_code == 201
        async with httpx.AsyncClient(base_url=base) as linked:
            landing = await linked.get(f"/workers?token={TOKEN}")
            assert landing.status_code == 303 and landing.headers["location"] == "/workers"
            assert (await linked.get("/workers")).status_code == 200


async def test_loopback_answers_only_loopback_names_and_same_site_writes(
    web: WebServer, api: httpx.AsyncClient
) -> None:
    rebound = await api.get("/api/jobs", headers={"Host": "attacker.example:8040"})
    assert rebound.status_code == 403 and "loopback only" in rebound.json()["detail"]
    assert (
        await api.get("/api/jobs", headers={"Host": f"localhost:{web.port}"})
    ).status_code == 200
    cross = await api.post(
        "/api/jobs", json={"prompt": "x"}, headers={"Origin": "https://attacker.example"}
    )
    assert cross.status_code == 403 and "cross-site" in cross.json()["detail"]
    same = await api.post(
        "/api/jobs", json={"prompt": "x"}, headers={"Origin": f"http://127.0.0.1:{web.port}"}
    )
    assert same.status_code == 201
    page = await api.get("/jobs")
    assert "default-src 'self'" in page.headers["content-security-policy"]


async def test_a_job_whose_record_expired_is_skipped_and_the_others_keep_their_fields(
    api: httpx.AsyncClient, redis_client: aioredis.Redis
) -> None:
    for name in ("old", "expired", "new"):
        await api.post("/api/jobs", params={"job_id": name}, json={"prompt": f"prompt of {name}"})
    await redis_client.delete(KEYS.job("expired"))  # its TTL ran out; the index still has it
    for params in ({}, {"status": "queued"}, {"q": "prompt of"}):
        page = (await api.get("/api/jobs", params=params)).json()
        assert [(j["job_id"], j["title"]) for j in page["items"]] == [
            ("new", "prompt of new"),
            ("old", "prompt of old"),
        ], params


async def test_a_jobs_model_calls_are_on_its_page_escaped_clipped_and_all_in_the_api(
    redis_url: str, settings: Settings, api: httpx.AsyncClient
) -> None:
    """The page shows the last CALLS_SHOWN calls, each prompt and answer escaped (a model's
    words are hostile input) and clipped to TEXT_SHOWN characters; the API returns them all
    in full."""
    hostile = "<script>alert('calls')</script>"
    long_prompt = "a" * (TEXT_SHOWN + 500)
    calls = [
        LoggedCall(
            "generator",
            "talk:gen:0",
            n,
            LLMRequest(messages=[ChatMessage(role="user", content=long_prompt)], max_tokens=9),
            LLMResponse(
                text=f"{hostile} answer {n}",
                finish_reason="stop",
                usage=Usage(prompt_tokens=3, completion_tokens=4),
                model="m",
                latency_ms=12.5,
            ),
        )
        for n in range(CALLS_SHOWN + 5)
    ]
    async with Client(redis_url, settings) as client:
        await client.submit("x", job_id="talk")
        await run_commands(client.pool, record_commands(KEYS, calls, "talk", 3600))
    listed = await api.get("/api/jobs/talk/calls")
    assert listed.status_code == 200 and len(listed.json()) == CALLS_SHOWN + 5
    assert listed.json()[0]["request"]["messages"][0]["content"] == long_prompt
    page = (await api.get("/jobs/talk")).text
    assert f"Model calls · {CALLS_SHOWN + 5} (the last {CALLS_SHOWN} shown)" in page
    assert page.count('<tr class="call"') == CALLS_SHOWN
    assert f"answer {CALLS_SHOWN + 4}" in page and "answer 4<" not in page
    assert hostile not in page and "&lt;script&gt;alert(" in page
    assert "a" * (TEXT_SHOWN + 1) not in page and "500 more characters" in page


async def test_graph_upload_engine_limits_and_remove(
    api: httpx.AsyncClient, redis_url: str
) -> None:
    """The upload streams through the limits (a bomb of parallel edges: 413 naming the
    setting, nothing stored), takes an engine, and DELETE frees the graph."""
    edges = "".join('<edge source="a" target="b"/>' for _ in range(10_001))
    bomb = (
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns"><graph edgedefault="directed">'
        f'<node id="a"/><node id="b"/>{edges}</graph></graphml>'
    ).encode()
    refused = await api.put(
        "/api/graphs/bomb", content=gzip.compress(bomb), headers={"content-encoding": "gzip"}
    )
    assert refused.status_code == 413 and "POSTEL_GRAPH_MAX_PARALLEL" in refused.json()["detail"]
    assert (await api.get("/api/graphs")).json() == []
    packed = gzip.compress(DEMO_GRAPH.read_bytes())
    added = await api.put(
        "/api/graphs/mmwr",
        params={"engine": "ladybug"},
        content=packed,
        headers={"content-encoding": "gzip"},
    )
    assert added.status_code == 201 and added.json()["engine"] == "ladybug", added.text
    unknown = await api.put("/api/graphs/x", params={"engine": "neo4j"}, content=packed)
    assert unknown.status_code == 422
    removed = await api.delete("/api/graphs/mmwr")
    assert removed.status_code == 200 and removed.json()["version"] == 1
    assert (await api.get("/api/graphs")).json() == []
    assert (await api.delete("/api/graphs/mmwr")).status_code == 404
    client = aioredis.Redis.from_url(redis_url)
    try:
        assert await client.keys("postel:graphs*") == []
    finally:
        await client.aclose()
