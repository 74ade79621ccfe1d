"""A Redis outage seen from the web server and the command line: 503 with Retry-After on the
API, a plain page saying so on the dashboard, no traceback in the log; the server serves
again once Redis is back; the CLI names the configured URL it cannot reach."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import redis
import structlog
from postel.infra.runtime.settings import Settings
from postel.infra.store.redis_server import free_port
from postel.infra.web.outage import UNREACHABLE
from postel.infra.web.server import WebServer


def redis_server(port: int, directory: Path) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [
            *("redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""),
            *("--appendonly", "no", "--dir", str(directory)),
        ],
        stdout=subprocess.DEVNULL,
    )
    for _ in range(400):
        try:
            if redis.Redis(port=port).ping():
                return process
        except redis.ConnectionError:
            time.sleep(0.05)
    pytest.fail("redis-server did not start after 400 polls")


async def test_an_outage_is_a_503_with_retry_after_and_no_traceback(
    settings: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    servers = [redis_server(port, tmp_path)]
    try:
        with structlog.testing.capture_logs() as logged:
            async with (
                WebServer(settings, url, "127.0.0.1", 0) as web,
                httpx.AsyncClient(base_url=web.url, timeout=30) as http,
            ):
                assert (await http.get("/api/queues")).status_code == 200
                servers[0].kill()
                servers[0].wait(10)
                for path in ("/api/jobs", "/api/queues", "/api/workers", "/api/jobs/x", "/metrics"):
                    answer = await http.get(path)
                    assert answer.status_code == 503, (path, answer.text)
                    assert answer.headers["retry-after"] == "2"
                    assert answer.json() == {"detail": UNREACHABLE}
                page = await http.get("/")
                assert page.status_code == 503 and UNREACHABLE in page.text
                assert page.headers["content-type"].startswith("text/html")
                servers.append(redis_server(port, tmp_path))
                assert (await http.get("/api/queues")).status_code == 200
    finally:
        for server in servers:
            server.kill()
            server.wait(10)
    assert any(e["event"] == "redis unreachable; answering 503" for e in logged)
    assert not [e for e in logged if "exc_info" in e or e.get("log_level") == "error"]
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


def test_the_cli_names_the_configured_url_it_cannot_reach() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    env = {k: v for k, v in os.environ.items() if not k.startswith("POSTEL_")}
    env.update(POSTEL_REDIS_URL=url, POSTEL_LOG_LEVEL="WARNING")
    done = subprocess.run(
        [sys.executable, "-m", "postel", "status", "some-job"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3
    [message] = [line for line in done.stderr.splitlines() if line.startswith("postel: ")]
    assert message.startswith(f"postel: cannot reach Redis at {url} (POSTEL_REDIS_URL): ")
    assert "POSTEL_REDIS_URL set?" not in message and ".." not in message
