"""Secrets in a model endpoint's URL are never echoed (services/urls.py): a base URL with a
password in its userinfo and a key in its query, at an endpoint that fails (HTTP 500), so
the error path runs; the secret reaches the endpoint and nothing else: not the job's error,
its events, postel:results, any other Redis key, the logs, the dashboard, the API or /metrics.
The query survives the join with the completions path."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import redis
import structlog
from postel.infra.cli.demo import model_line
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import Settings
from postel.infra.web.server import WebServer
from postel.services.urls import join_url, shown_url, url_secrets

from postel.testing.fake_model import FakeModel

SECRET = "secret"


def test_a_url_is_shown_without_userinfo_or_query() -> None:
    url = "http://user:secret@h:8080/v1?api-key=secret&x=1#frag"
    assert shown_url(url) == "http://h:8080/v1"
    assert shown_url("redis://:p%40ss@redis:6379/0") == "redis://redis:6379/0"
    assert shown_url("redis+sentinel://:pw@s1:26379,s2:26379/main") == (
        "redis+sentinel://s1:26379,s2:26379/main"
    )
    assert shown_url("unix:///run/redis.sock?db=0&password=secret") == "unix:///run/redis.sock"
    assert url_secrets(url) == [SECRET], "values shorter than 4 characters are no secret"


def test_a_path_is_joined_before_the_query() -> None:
    assert join_url("http://h/v1?api-key=X", "/chat/completions") == (
        "http://h/v1/chat/completions?api-key=X"
    )
    assert join_url("http://h/v1/", "chat/completions") == "http://h/v1/chat/completions"


def dump(url: str) -> str:
    """Every value of every key in the Redis at `url`, as text."""
    client = redis.Redis.from_url(url)
    parts: list[object] = []
    for key in client.scan_iter():
        kind = client.type(key).decode()
        read = {
            "string": client.get,
            "hash": client.hgetall,
            "list": lambda k: client.lrange(k, 0, -1),
            "set": client.smembers,
            "zset": lambda k: client.zrange(k, 0, -1),
            "stream": client.xrange,
        }[kind]
        parts.append((key, read(key)))
    client.close()
    return repr(parts)


@pytest.fixture
def failing_endpoint() -> Iterator[FakeModel]:
    with FakeModel(lambda request: "never answered") as fake:
        fake.set_faults(mode="500")
        yield fake


async def test_no_secret_of_the_endpoint_url_is_printed_or_stored(
    redis_url: str, settings: Settings, failing_endpoint: FakeModel
) -> None:
    base = f"http://user:{SECRET}@127.0.0.1:{failing_endpoint.port}/v1?api-key={SECRET}"
    configured = settings.model_copy(
        update={"llm_provider": "openai", "llm_base_url": base, "llm_max_retries": 1}
    )
    with structlog.testing.capture_logs() as logs:
        async with (
            LocalSystem(configured, redis_url=redis_url),
            Client(redis_url, configured) as client,
        ):
            job_id = await client.submit("get the total", type="float", text="total: 3")
            record = await client.wait(job_id, timeout=60)
            async with (
                WebServer(configured, redis_url, "127.0.0.1", 0) as web,
                httpx.AsyncClient(base_url=web.url, timeout=30) as http,
            ):
                pages = [
                    (await http.get(path)).text
                    for path in (f"/jobs/{job_id}", f"/api/jobs/{job_id}", "/jobs", "/metrics")
                ]
    assert record.failure == "llm_error"
    shown = f"http://127.0.0.1:{failing_endpoint.port}/v1/chat/completions"
    assert record.error is not None and shown in record.error, record.error
    assert failing_endpoint.stats().by_fault["500"] == 2, "asked at the right path, twice"
    assert failing_endpoint.last_query == f"api-key={SECRET}", "the query reached the endpoint"
    assert any(shown in str(entry) for entry in logs), "the retry was logged, with the URL..."
    assert SECRET not in str(logs), "...but not the secret"
    stored = dump(redis_url)
    assert shown in stored, "the error is stored (record, events, results)..."
    assert SECRET not in stored, "...with no secret in any key"
    assert all(SECRET not in page for page in pages)
    assert any(shown in page for page in pages[:2])
    assert model_line(configured) == f"model: default at {failing_endpoint.base_url}", "the demo"
