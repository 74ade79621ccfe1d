"""Secrets in a model endpoint's URL are never echoed (services/urls.py): a base URL with a
key in its query, and an API key, at an endpoint that fails (HTTP 500), so
the error path runs; the secret reaches the endpoint and nothing else: not the job's error,
its events, postel:results, any other Redis key, the logs, the dashboard, the API or /metrics.
The query survives the join with the completions path."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
import redis
import structlog
from postel.infra.cli.demo import model_line
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import Settings
from postel.infra.web.server import WebServer
from postel.services.llm import LLMRequest
from postel.services.llm.errors import LLMRequestRejected
from postel.services.llm.factory import LLMSettings
from postel.services.llm.models import ChatMessage
from postel.services.llm.openai import OpenAIClient, OpenAIConfig
from postel.services.redact import MASK, Redactor
from postel.services.urls import join_url, shown_url, url_secrets
from pydantic import SecretStr, ValidationError

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
    assert url_secrets(url) == ["user:secret", SECRET], "values under 4 characters are none"


@pytest.mark.parametrize(
    "url",
    [
        # unencoded: a URL parser reads part of the password as the host, the port or the path
        "redis://Zuser:Pa/Sw0rd@127.0.0.1:6379/0",
        "redis://:Pw@Sx:Wy/Rdq%x@127.0.0.1:6379/0",
        "redis://:Pw?Sx@127.0.0.1",
        "http://Zuser:Pa/Sw#rd@h/v1?api-key=Qk",
    ],
)
def test_no_part_of_the_user_info_is_shown_however_it_is_written(url: str) -> None:
    shown = shown_url(url)
    assert "@" not in shown and shown.endswith(("127.0.0.1:6379/0", "127.0.0.1", "h/v1")), shown
    userinfo = url.split("://")[1].rpartition("@")[0]
    for part in re.split(r"[:/@?#%]", userinfo):
        assert not part or part not in shown.split("://")[1], (part, shown)
    assert userinfo in url_secrets(url), "the whole user info is scrubbed from echoes"


def test_a_model_url_with_user_info_is_refused_naming_where_the_key_goes() -> None:
    """httpx would send user info as Basic auth in place of the key; postel refuses it, and
    the refusal shows nothing of the URL (docs/SECURITY.md, Model endpoint URLs)."""
    for make in (
        lambda url: Settings(llm_base_url=url),
        lambda url: Settings(generator={"llm_base_url": url}),
        lambda url: OpenAIConfig(base_url=url, model="m"),
        lambda url: LLMSettings(base_url=url),
    ):
        with pytest.raises(ValidationError) as refused:
            make("http://Zuser:Zpw9x@127.0.0.1:9/v1")
        said = str(refused.value)
        assert "POSTEL_LLM_API_KEY" in said and "user info" in said, said
        assert "Zuser" not in said and "Zpw9x" not in said, said
    base = {k: v for k, v in os.environ.items() if not k.startswith("POSTEL_")}
    env = {**base, "POSTEL_LLM_BASE_URL": "http://Zuser:Zpw9x@127.0.0.1:9/v1"}
    done = subprocess.run(
        [sys.executable, "-m", "postel", "worker", "intent"],
        env={**env, "POSTEL_REDIS_URL": "redis://127.0.0.1:9/0"},
        capture_output=True,
        text=True,
        timeout=120,  # a hang guard: a refused start exits at once
    )
    assert done.returncode == 2, done.stderr
    assert "POSTEL_LLM_API_KEY" in done.stderr and "Traceback" not in done.stderr
    assert "Zuser" not in done.stderr + done.stdout and "Zpw9x" not in done.stderr + done.stdout


class _Echo(BaseHTTPRequestHandler):
    """An endpoint that repeats the request's Authorization header: in a 401's message for
    `/fail/...`, in its answer's text otherwise, and as Basic auth of `user:<key>` too."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        sent = self.headers.get("authorization", "")
        key = sent.removeprefix("Bearer ")
        basic = base64.b64encode(f"user:{key}".encode()).decode()
        echoed = (
            f"you sent Authorization: {sent}; as Basic: {basic}; raw {{'authorization': '{sent}'}}"
        )
        if self.path.startswith("/fail/"):
            status, body = 401, {"error": {"message": echoed}}
        else:
            message = {"role": "assistant", "content": echoed}
            status, body = 200, {"choices": [{"message": message, "finish_reason": "stop"}]}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


async def test_an_echoed_credential_is_scrubbed_written_or_base64_encoded() -> None:
    key = "sk-Zq81-echoed-key"
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    request = LLMRequest(messages=[ChatMessage(role="user", content="hi")], max_tokens=8)
    encoded = [base64.b64encode(f"user:{key}".encode()).decode()[8:20], key]
    try:
        for path, ends in (("/fail/v1", "error"), ("/v1", "answer")):
            config = OpenAIConfig(base_url=f"http://127.0.0.1:{port}{path}", api_key=key, model="m")
            client = OpenAIClient(config)
            try:
                said = (await client.complete(request)).text
            except LLMRequestRejected as error:
                said = str(error)
            finally:
                await client.aclose()
            assert "you sent Authorization: " in said and "as Basic: " in said, (ends, said)
            assert not any(form in said for form in encoded), (ends, said)
            assert "Bearer" not in said, (ends, said)
    finally:
        server.shutdown()
        server.server_close()


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
    base = f"http://127.0.0.1:{failing_endpoint.port}/v1?api-key={SECRET}"
    configured = settings.model_copy(
        update={
            "llm_provider": "openai",
            "llm_base_url": base,
            "llm_api_key": SecretStr(SECRET),
            "llm_max_retries": 1,
        }
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


@pytest.mark.parametrize("before", ["", "u", "us", "user:", "Bearer x "])
def test_a_secret_is_scrubbed_base64_encoded_at_any_alignment(before: str) -> None:
    key = "sk-Zq81-any-alignment"
    redact = Redactor([key])
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        encoded = encode(f"{before}{key}!?".encode()).decode()
        scrubbed = redact(f"token {encoded} end")
        # of the key's encoding, at most a character at each end (shared with its
        # neighbours' bits) is left
        kept = scrubbed.removeprefix("token ").removesuffix(" end").split(MASK)
        assert len(kept) == 2 and len("".join(kept)) <= len(encoded) - len(key) * 4 // 3 + 2
    assert redact("Proxy-Authorization: Basic abc=") == f"Proxy-Authorization: {MASK}"
    assert redact('{"Authorization":"Bearer t0k"}') == '{"Authorization":"' + MASK + '"}'
    assert redact("no secret here") == "no secret here"
