"""The openai provider against a real HTTP server on localhost, scripted per test."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from postel.services.llm import (
    ChatMessage,
    LLMRateLimited,
    LLMRequest,
    LLMRequestRejected,
    LLMServerError,
    LLMTimeout,
    OpenAIClient,
    OpenAIConfig,
    RetryPolicy,
)
from postel.services.llm.budget import call_budget
from postel.services.llm.errors import LLMBadResponse, LLMConnectionError
from postel.services.llm.retry import parse_retry_after


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    hang_s: float = 0.0


def completion(
    text: str, finish_reason: str = "stop", usage: dict[str, int] | None = None
) -> Reply:
    body: dict[str, Any] = {
        "id": "cmpl-1",
        "object": "chat.completion",
        "model": "served-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return Reply(body=body)


class FakeServer:
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.release = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                server.requests.append(json.loads(self.rfile.read(length)))
                server.headers.append(dict(self.headers))
                reply = server.replies.pop(0) if server.replies else Reply(status=599)
                if reply.hang_s:
                    server.release.wait(reply.hang_s)
                    return
                payload = (
                    reply.body.encode()
                    if isinstance(reply.body, str)
                    else json.dumps(reply.body).encode()
                )
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

        return Handler

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    fake.start()
    yield fake
    fake.stop()


SECRET = "sk-test-0123456789abcdef"
FAST = RetryPolicy(max_attempts=3, backoff_initial=0.01, backoff_max=0.05, retry_after_max=2)
SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


def config(server: FakeServer, **overrides: object) -> OpenAIConfig:
    values: dict[str, object] = {
        "base_url": server.base_url,
        "api_key": SECRET,
        "model": "test-model",
        "timeout": 2.0,
        "retry": FAST,
    }
    values.update(overrides)
    return OpenAIConfig.model_validate(values)


def ask(text: str = "hello", **fields: object) -> LLMRequest:
    return LLMRequest.model_validate(
        {"messages": [ChatMessage(role="user", content=text)], **fields}
    )


async def test_success_reports_text_usage_and_sends_the_request(server: FakeServer) -> None:
    server.replies = [completion("hi there", usage={"prompt_tokens": 7, "completion_tokens": 2})]
    client = OpenAIClient(config(server))
    response = await client.complete(ask(max_tokens=50, temperature=0.3, stop=["END"]))
    await client.aclose()

    assert response.text == "hi there"
    assert response.finish_reason == "stop"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (7, 2)
    assert not response.usage.estimated
    assert response.model == "served-model"
    assert response.latency_ms > 0
    body = server.requests[0]
    assert body["model"] == "test-model"
    assert body["messages"] == [{"role": "user", "content": "hello"}]
    assert (body["max_tokens"], body["temperature"], body["stop"]) == (50, 0.3, ["END"])
    assert "response_format" not in body
    assert server.headers[0]["Authorization"] == f"Bearer {SECRET}"


async def test_missing_usage_is_estimated(server: FakeServer) -> None:
    server.replies = [completion("four words right here")]
    client = OpenAIClient(config(server))
    response = await client.complete(ask(model="other-model"))
    await client.aclose()
    assert response.usage.estimated
    assert response.usage.completion_tokens > 0 and response.usage.prompt_tokens > 0
    assert server.requests[0]["model"] == "other-model"


async def test_rate_limited_then_ok_waits_for_retry_after(server: FakeServer) -> None:
    server.replies = [
        Reply(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "0.3"}),
        completion("ok"),
    ]
    client = OpenAIClient(config(server))
    started = time.perf_counter()
    response = await client.complete(ask())
    waited = time.perf_counter() - started
    await client.aclose()
    assert response.text == "ok"
    assert len(server.requests) == 2
    assert waited >= 0.3  # the server's Retry-After, not the 10 ms backoff


async def test_rate_limited_on_every_attempt(server: FakeServer) -> None:
    server.replies = [Reply(status=429, body={"error": "busy"}) for _ in range(3)]
    client = OpenAIClient(config(server))
    with pytest.raises(LLMRateLimited, match=r"after 3 attempt.*HTTP 429: busy"):
        await client.complete(ask())
    await client.aclose()


async def test_repeated_server_errors_end_after_bounded_attempts(server: FakeServer) -> None:
    server.replies = [Reply(status=500, body={"detail": "boom"}) for _ in range(5)]
    client = OpenAIClient(config(server))
    with pytest.raises(LLMServerError, match=r"after 3 attempt.*HTTP 500: boom"):
        await client.complete(ask())
    await client.aclose()
    assert len(server.requests) == 3


async def test_server_error_then_ok(server: FakeServer) -> None:
    server.replies = [Reply(status=503, body="overloaded"), completion("fine")]
    client = OpenAIClient(config(server))
    assert (await client.complete(ask())).text == "fine"
    await client.aclose()


async def test_hang_past_timeout_is_llm_timeout(server: FakeServer) -> None:
    server.replies = [Reply(hang_s=5), Reply(hang_s=5)]
    client = OpenAIClient(
        config(server, timeout=0.3, retry=FAST.model_copy(update={"max_attempts": 2}))
    )
    # each attempt ended at the 0.3 s timeout, not the reply's 5 s hang
    with pytest.raises(LLMTimeout, match=r"after 2 attempt.*within 0\.3s"):
        await client.complete(ask())
    await client.aclose()
    assert len(server.requests) == 2


async def test_truncated_response_reports_length(server: FakeServer) -> None:
    server.replies = [completion('{"sections": [{"id": "a", "con', finish_reason="length")]
    client = OpenAIClient(config(server))
    response = await client.complete(ask(max_tokens=8))
    await client.aclose()
    assert response.finish_reason == "length"
    assert response.truncated
    assert response.text.endswith('"con')


async def test_bad_request_is_rejected_with_server_message_at_once(server: FakeServer) -> None:
    server.replies = [
        Reply(status=400, body={"error": {"message": "max_tokens is too large", "type": "x"}})
    ]
    client = OpenAIClient(config(server))
    with pytest.raises(LLMRequestRejected, match=r"HTTP 400.*max_tokens is too large") as info:
        await client.complete(ask())
    await client.aclose()
    assert info.value.status_code == 400
    assert info.value.server_message == "max_tokens is too large"
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("dialect", "expected"),
    [
        (
            "json_schema",
            {
                "type": "json_schema",
                "json_schema": {"name": "response", "schema": SCHEMA, "strict": True},
            },
        ),
        ("json_object", {"type": "json_object", "schema": SCHEMA}),
        ("none", None),
    ],
)
async def test_structured_output_dialects(
    server: FakeServer, dialect: str, expected: dict[str, object] | None
) -> None:
    server.replies = [completion('{"x": 1}')]
    client = OpenAIClient(config(server, structured_output=dialect))
    await client.complete(ask(json_schema=SCHEMA))
    await client.aclose()
    assert server.requests[0].get("response_format") == expected


@pytest.mark.parametrize(
    ("dialect", "field"),
    [("gbnf", "grammar"), ("guided_grammar", "guided_grammar"), ("none", None)],
)
async def test_a_grammar_is_sent_in_the_endpoints_field_instead_of_a_response_format(
    server: FakeServer, dialect: str, field: str | None
) -> None:
    server.replies = [completion('{"x": 1}')]
    client = OpenAIClient(config(server, structured_output="json_object", grammar=dialect))
    await client.complete(ask(json_schema=SCHEMA, grammar='root ::= "{}"'))
    await client.aclose()
    sent = server.requests[0]
    if field is None:  # an endpoint that takes no grammar gets the schema as before
        assert "grammar" not in sent and "guided_grammar" not in sent
        assert sent["response_format"]["type"] == "json_object"
    else:
        assert sent[field] == 'root ::= "{}"' and "response_format" not in sent


async def test_json_object_drops_open_items_llama_cpp_cannot_compile(server: FakeServer) -> None:
    schema = {
        "type": "object",
        "properties": {
            "anything": {"type": "array", "items": {}},
            "flags": {"type": "array", "items": True},
            "items": {},  # a property named "items" stays
            "names": {"type": "array", "items": {"type": "string"}},
        },
    }
    server.replies = [completion("{}"), completion("{}")]
    for dialect in ("json_object", "json_schema"):
        client = OpenAIClient(config(server, structured_output=dialect))
        await client.complete(ask(json_schema=schema))
        await client.aclose()
    sent = server.requests[0]["response_format"]["schema"]["properties"]
    assert sent == {
        "anything": {"type": "array"},
        "flags": {"type": "array"},
        "items": {},
        "names": {"type": "array", "items": {"type": "string"}},
    }
    assert server.requests[1]["response_format"]["json_schema"]["schema"] == schema


async def test_api_key_never_in_errors_or_reprs(server: FakeServer) -> None:
    server.replies = [Reply(status=401, body={"error": {"message": f"bad key {SECRET}"}})]
    cfg = config(server)
    client = OpenAIClient(cfg)
    with pytest.raises(LLMRequestRejected) as info:
        await client.complete(ask())
    await client.aclose()
    for text in (
        str(info.value),
        repr(info.value),
        info.value.server_message,
        repr(cfg),
        str(cfg),
        repr(client),
        cfg.model_dump_json(),
    ):
        assert SECRET not in text
    assert "bad key" in str(info.value)


async def test_non_completion_body_is_bad_response(server: FakeServer) -> None:
    server.replies = [Reply(body={"unexpected": True})]
    client = OpenAIClient(config(server))
    with pytest.raises(LLMBadResponse, match="without a chat completion"):
        await client.complete(ask())
    await client.aclose()


async def test_unreachable_server_is_connection_error() -> None:
    cfg = OpenAIConfig(base_url="http://127.0.0.1:9/v1", model="m", retry=FAST)
    client = OpenAIClient(cfg)
    with pytest.raises(LLMConnectionError, match="after 3 attempt"):
        await client.complete(ask())
    await client.aclose()


def test_retry_after_forms() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(format_datetime(now + timedelta(seconds=90), usegmt=True), now) == 90
    assert parse_retry_after(format_datetime(now - timedelta(seconds=5), usegmt=True), now) == 0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None
    assert FAST.delay(1, "3600") == FAST.retry_after_max
    assert FAST.delay(1, "3600", budget_left=10.0) == 3600  # the caller then fails at once


async def test_a_hang_ends_within_the_hop_budget_not_the_per_attempt_timeout(
    server: FakeServer,
) -> None:
    """Three attempts of 30 s each would take 90 s; the call's budget of 1 s wins."""
    server.replies = [Reply(hang_s=60), Reply(hang_s=60), Reply(hang_s=60)]
    client = OpenAIClient(config(server, timeout=30.0))
    with (
        call_budget(1.0),
        pytest.raises(LLMTimeout, match=r"time budget|no answer within") as failure,
    ):
        await client.complete(ask())
    await client.aclose()
    # the one attempt waited what the budget left (under 1 s), not its own 30 s
    assert "within 30s" not in str(failure.value)
    assert len(server.requests) == 1


async def test_a_retry_after_longer_than_the_budget_fails_at_once(server: FakeServer) -> None:
    server.replies = [
        Reply(status=429, body={"error": {"message": "slow down"}}, headers={"retry-after": "60"})
    ]
    policy = RetryPolicy(max_attempts=3, retry_after_max=120)
    client = OpenAIClient(config(server, retry=policy))
    # refused before waiting: the 60 s wait would outlast the 5 s budget
    with call_budget(5.0), pytest.raises(LLMRateLimited, match="after the hop's time budget"):
        await client.complete(ask())
    assert len(server.requests) == 1
    await client.aclose()


async def test_a_retry_after_within_the_budget_is_waited_for(server: FakeServer) -> None:
    server.replies = [
        Reply(status=429, body={}, headers={"retry-after": "0.2"}),
        completion("fine"),
    ]
    client = OpenAIClient(config(server))
    with call_budget(5.0):
        assert (await client.complete(ask())).text == "fine"
    await client.aclose()
