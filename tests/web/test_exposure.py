"""Every HTTP surface is safe to expose: the token on each (the worker's /metrics too), an
empty or short one refused at start on each, wrong tokens throttled per address, 401
for machine clients, the scheme in the OpenAPI document, slow clients disconnected, a cap on
connections and on live streams, job ids checked on every route, a desired type checked at
submission, and bidi controls shown, not obeyed, in pages. Real uvicorn on loopback, real
Redis; waits are bounded loops and the asserts count."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import httpx
import pytest
import redis.asyncio as aioredis
from click.testing import Result
from postel.infra.cli.support import EXIT_INPUT
from postel.infra.runtime.settings import Settings
from postel.infra.store.keys import Keyspace
from postel.infra.store.redis_server import free_port
from postel.infra.web.security import (
    LOGIN_TRIES,
    LOGIN_WINDOW_S,
    MIN_TOKEN_CHARS,
    Guard,
    Throttle,
)
from postel.infra.web.server import MetricsServer, WebError, WebServer
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""

TOKEN = "t0ken-0123456789abcdef"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
POLL_S = 0.1
POLLS = 200  # at most 20 s for something the server does within a second


@contextlib.asynccontextmanager
async def serving(settings: Settings, redis_url: str, **update: object) -> AsyncIterator[str]:
    async with WebServer(settings.model_copy(update=update), redis_url, "127.0.0.1", 0) as web:
        yield web.url.rstrip("/")


async def test_machine_clients_get_401_and_only_pages_redirect(
    redis_url: str, settings: Settings
) -> None:
    async with (
        serving(settings, redis_url, web_token=SecretStr(TOKEN)) as base,
        httpx.AsyncClient(base_url=base) as anonymous,
    ):
        for path in ("/api/jobs", "/api/openapi.json", "/metrics", "/static/app.js"):
            refused = await anonymous.get(path)
            assert refused.status_code == 401, path
            assert refused.headers["www-authenticate"] == "Bearer", path
        assert (await anonymous.get("/jobs")).status_code == 303
        for path in ("/api/jobs", "/metrics", "/static/app.js"):
            assert (await anonymous.get(path, headers=BEARER)).status_code == 200, path


async def test_the_openapi_document_declares_the_token_and_401(
    redis_url: str, settings: Settings
) -> None:
    async with serving(settings, redis_url) as base, httpx.AsyncClient(base_url=base) as api:
        document = (await api.get("/api/openapi.json")).json()
    schemes = document["components"]["securitySchemes"]
    assert {"type": "http", "scheme": "bearer"}.items() <= schemes["HTTPBearer"].items()
    assert schemes["APIKeyCookie"]["in"] == "cookie"
    operations = [op for item in document["paths"].values() for op in item.values()]
    assert len(operations) > 10
    for operation in operations:
        assert "401" in operation["responses"], operation["operationId"]
        assert {"HTTPBearer": []} in operation["security"], operation["operationId"]


async def test_the_worker_metrics_server_has_the_token_and_the_host_check(
    redis_url: str, settings: Settings
) -> None:
    guarded = settings.model_copy(update={"web_token": SecretStr(TOKEN)})
    port = free_port()
    async with (
        MetricsServer(guarded, redis_url, "127.0.0.1", port),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as scraper,
    ):
        refused = await scraper.get("/metrics")
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        assert (await scraper.get("/metrics", headers=BEARER)).status_code == 200
    port = free_port()
    async with (
        MetricsServer(settings, redis_url, "127.0.0.1", port),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as scraper,
    ):
        rebound = await scraper.get("/metrics", headers={"Host": "attacker.example"})
        assert rebound.status_code == 403
        assert (await scraper.get("/metrics")).status_code == 200
    with pytest.raises(WebError, match="needs a token"):
        MetricsServer(settings, redis_url, "0.0.0.0", free_port())


async def _held_open(host: str, port: int, first: bytes, trickle: bytes) -> bool:
    """Send `first`, then a byte of `trickle` at a time; True once the server hangs up."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(first)
        await writer.drain()
        for n in range(POLLS):
            try:
                if await asyncio.wait_for(reader.read(1024), POLL_S) == b"":
                    return True
            except TimeoutError:
                pass
            try:
                writer.write(trickle[n % len(trickle) : n % len(trickle) + 1])
                await writer.drain()
            except ConnectionError:
                return True
        return False
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def test_slow_header_and_slow_body_clients_are_disconnected(
    redis_url: str, settings: Settings
) -> None:
    async with serving(settings, redis_url, web_request_timeout_s=0.5) as base:
        port = int(base.rsplit(":", 1)[1])
        slow_header = b"GET /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        slow_body = (
            b"POST /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000\r\n\r\n"
        )
        hung_up = await asyncio.gather(
            *[_held_open("127.0.0.1", port, slow_header, b"X-Slow: y\r\n") for _ in range(10)],
            *[_held_open("127.0.0.1", port, slow_body, b'{"prompt": "') for _ in range(10)],
        )
        assert hung_up.count(True) == 20
        async with httpx.AsyncClient(base_url=base) as api:
            assert (await api.get("/api/jobs")).status_code == 200, "prompt clients are served"


async def test_connections_past_the_limit_are_answered_503(
    redis_url: str, settings: Settings
) -> None:
    async with serving(settings, redis_url, web_max_connections=3) as base:
        port = int(base.rsplit(":", 1)[1])
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        for _reader, writer in held:
            writer.write(b"GET /api/jobs HTTP/1.1\r\n")  # headers not finished
            await writer.drain()
        async with httpx.AsyncClient(base_url=base) as api:
            assert (await api.get("/api/jobs")).status_code == 503
            for _reader, writer in held:
                writer.close()
            answers = []
            for _ in range(POLLS):
                answers.append((await api.get("/api/jobs")).status_code)
                if answers[-1] == 200:
                    break
                await asyncio.sleep(POLL_S)
            assert answers[-1] == 200, answers


async def test_live_streams_past_the_cap_get_429(redis_url: str, settings: Settings) -> None:
    async with (
        serving(settings, redis_url, web_max_streams=2) as base,
        httpx.AsyncClient(base_url=base, timeout=30) as api,
        contextlib.AsyncExitStack() as streams,
    ):
        for _ in range(2):
            opened = await streams.enter_async_context(api.stream("GET", "/api/events/stream"))
            assert opened.status_code == 200
        refused = await api.get("/api/events/stream")
        assert refused.status_code == 429 and refused.headers["retry-after"] == "5"
        assert "POSTEL_WEB_MAX_STREAMS" in refused.json()["detail"]
        await streams.aclose()
        statuses = []
        for _ in range(POLLS):
            async with api.stream("GET", "/api/jobs/nope/events/stream") as again:
                statuses.append(again.status_code)
            if statuses[-1] != 429:
                break
            await asyncio.sleep(POLL_S)
        assert statuses[-1] == 404, f"the slots were not given back: {statuses}"


async def test_job_ids_are_checked_on_every_route(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    other_key = "j1:gen:t1:anchor"
    await redis_client.set(KEYS.job(other_key), "not a job record")
    async with serving(settings, redis_url) as base, httpx.AsyncClient(base_url=base) as api:
        for method, path in [
            ("GET", "/api/jobs/{}"),
            ("GET", "/api/jobs/{}/events"),
            ("GET", "/api/jobs/{}/calls"),
            ("GET", "/api/jobs/{}/rounds"),
            ("GET", "/api/jobs/{}/events/stream"),
            ("POST", "/api/jobs/{}/cancel"),
            ("GET", "/jobs/{}"),
            ("POST", "/jobs/{}/cancel"),
        ]:
            answer = await api.request(method, path.format(other_key))
            assert answer.status_code == 422, (method, path, answer.text)
        for path in ("/api/dead/x:1", "/api/dead/1-1:x"):
            assert (await api.get(path)).status_code == 422, path
        assert (await api.post("/api/dead/nope/redrive")).status_code == 422
        found = await api.get("/api/jobs", params={"q": other_key})
        assert found.status_code == 200 and found.json()["items"] == []
        bogus = await api.get("/api/jobs", params={"status": "bogus"})
        assert bogus.status_code == 422 and bogus.json()["detail"][0]["loc"] == [
            "query",
            "status",
        ]
    assert await redis_client.get(KEYS.job(other_key)) == b"not a job record"


async def test_a_bad_desired_type_is_refused_before_anything_is_written(
    redis_url: str, settings: Settings, redis_client: aioredis.Redis
) -> None:
    bad = {"type": "object", "properties": {"a": {"type": "nosuchtype"}}}
    async with serving(settings, redis_url) as base, httpx.AsyncClient(base_url=base) as api:
        refused = await api.post("/api/jobs", json={"prompt": "x", "desired_type": bad})
        assert refused.status_code == 422
        [error] = refused.json()["detail"]
        assert error["loc"] == ["body", "desired_type"]
        assert "unknown JSON Schema type ['nosuchtype'] at $.a" in error["msg"]
        nested = {"kind": "list", "items": {"type": "array", "items": {"oneOf": []}}}
        refused = await api.post("/api/jobs", json={"prompt": "x", "desired_type": nested})
        assert refused.status_code == 422 and "unsupported JSON Schema keyword 'oneOf'" in (
            refused.text
        )
    assert await redis_client.keys("postel:job*") == []
    assert await redis_client.keys("postel:q:*") == []


async def test_bidi_controls_in_a_prompt_are_shown_not_obeyed(
    redis_url: str, settings: Settings
) -> None:
    controls = "".join(map(chr, [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]))
    prompt = f"pay {controls} 100 to Alice"
    async with serving(settings, redis_url) as base, httpx.AsyncClient(base_url=base) as api:
        submitted = await api.post("/api/jobs", json={"prompt": prompt}, params={"job_id": "rtl"})
        assert submitted.status_code == 201
        for path in ("/jobs/rtl", "/jobs"):
            page = (await api.get(path)).text
            assert not set(controls) & set(page), path
            assert "&lt;U+202E&gt;" in page and "&lt;U+2069&gt;" in page, path
        assert (await api.get("/api/jobs/rtl")).json()["request"]["prompt"] == prompt


@pytest.mark.parametrize("token", ["", "x" * (MIN_TOKEN_CHARS - 1)])
def test_an_empty_or_short_token_is_refused_on_every_surface(
    redis_url: str, settings: Settings, token: str, in_process: Callable[..., Result]
) -> None:
    weak = settings.model_copy(update={"web_token": SecretStr(token)})
    for host in ("127.0.0.1", "0.0.0.0"):
        with pytest.raises(WebError, match="POSTEL_WEB_TOKEN is set but"):
            WebServer(weak, redis_url, host, 0)
        with pytest.raises(WebError, match="POSTEL_WEB_TOKEN is set but"):
            MetricsServer(weak, redis_url, host, free_port())
    env = {"POSTEL_WEB_TOKEN": token, "POSTEL_EMBEDDED_PORT": str(free_port())}
    for command in (
        ["web", "--host", "0.0.0.0", "--port", "0"],
        ["web", "--port", "0"],
        ["up", "--web-port", "0"],
        ["worker", "intent", "--metrics-port", str(free_port()), "--metrics-host", "0.0.0.0"],
    ):
        refused = in_process(*command, env=env)
        assert refused.exit_code == EXIT_INPUT, (command, refused.output)
        assert "POSTEL_WEB_TOKEN is set but" in refused.output, command
        assert f"needs {MIN_TOKEN_CHARS} characters at least" in refused.output, command


async def test_wrong_tokens_are_throttled_per_client_address(
    redis_url: str, settings: Settings
) -> None:
    async with (
        serving(settings, redis_url, web_token=SecretStr(TOKEN)) as base,
        httpx.AsyncClient(base_url=base) as guesser,
    ):
        for n in range(LOGIN_TRIES):
            wrong = await guesser.post("/login", data={"token": f"guess-{n:016}", "next": "/"})
            assert wrong.status_code == 303 and "wrong=1" in wrong.headers["location"], n
        for offered in (
            guesser.post("/login", data={"token": TOKEN, "next": "/"}),
            guesser.get("/api/jobs", headers=BEARER),
            guesser.get(f"/jobs?token={TOKEN}"),
        ):
            throttled = await offered
            assert throttled.status_code == 429, throttled.text
            assert 0 < int(throttled.headers["retry-after"]) <= LOGIN_WINDOW_S
    now = [0.0]
    guard = Guard(
        Starlette(routes=[Route("/api/x", lambda request: PlainTextResponse("in"))]),
        token=TOKEN,
        loopback_only=False,
        throttle=Throttle(clock=lambda: now[0]),
    )

    def client(address: str) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=guard, client=(address, 5000))
        return httpx.AsyncClient(transport=transport, base_url="http://postel")

    async with client("10.0.0.1") as guesser, client("10.0.0.2") as neighbour:
        for n in range(LOGIN_TRIES):
            wrong = {"Authorization": f"Bearer guess-{n:016}"}
            assert (await guesser.get("/api/x", headers=wrong)).status_code == 401
        assert (await guesser.get("/api/x", headers=BEARER)).status_code == 429
        assert (await guesser.get("/api/x")).status_code == 401, "no token offered: no try"
        assert (await neighbour.get("/api/x", headers=BEARER)).text == "in", "another address"
        now[0] += LOGIN_WINDOW_S
        assert (await guesser.get("/api/x", headers=BEARER)).text == "in", "the window passed"
