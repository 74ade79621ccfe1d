"""The unit tier: the store's Lua scripts and the actor's decisions, in this process, on
fakeredis, whose Lua runs through lupa (Lua 5.1, as Redis runs it). No server, no network,
no other process: what needs one is the integration tier's (docs/TESTING.md says which and
why). `pytest -m unit` runs this tier alone."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from pathlib import Path

import fakeredis
import pytest
from arq.connections import ArqRedis
from fakeredis.aioredis import FakeAsyncRedisConnection
from postel.infra.runtime.actor import Runtime
from postel.infra.runtime.settings import Settings
from postel.infra.store.keys import Keyspace
from redis.asyncio import ConnectionPool


def pytest_configure(config: pytest.Config) -> None:
    """Without lupa fakeredis cannot run a script: one clear line instead of a failure in
    every test of the tier."""
    if importlib.util.find_spec("lupa") is None:
        raise pytest.UsageError(
            "the unit tier runs Redis's Lua through lupa: pip install 'fakeredis[lua]' "
            "(the dev extra asks for it; ./scripts/test installs it)"
        )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.unit)


@pytest.fixture
def redis_url() -> str:
    raise pytest.UsageError("the unit tier runs on fakeredis: use `fake_pool`, not a server")


@pytest.fixture
async def fake_pool() -> AsyncIterator[ArqRedis]:
    """arq's pool (postel's Redis client) over a fresh in-process fakeredis server."""
    pool = ArqRedis(
        connection_pool=ConnectionPool(
            connection_class=FakeAsyncRedisConnection, server=fakeredis.FakeServer()
        )
    )
    yield pool
    await pool.aclose()


@pytest.fixture
def keyspace() -> Keyspace:
    return Keyspace()


@pytest.fixture
def runtime(fake_pool: ArqRedis, keyspace: Keyspace, settings: Settings) -> Runtime:
    return Runtime.create(fake_pool, keyspace, settings)
