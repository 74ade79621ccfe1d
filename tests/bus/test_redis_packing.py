"""Commands are packed by hiredis (infra/store/redis_packing.py), byte for byte as redis-py's own
packer would, with redis-py's errors for what Redis cannot take; the packer is installed by
the processes that carry hops (`postel worker`, `postel up`), never by importing postel."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from postel.infra.store import redis_packing
from redis.asyncio.connection import AbstractConnection, Connection
from redis.exceptions import DataError

COMMANDS = [
    ("SET", "key", "value"),
    ("CLIENT SETNAME", "postel"),
    (b"CONFIG GET", b"maxmemory"),
    ("SET", "key", 1.5),
    ("SET", "key", 10**20),
    ("SET", "key", -7),
    ("SET", "key", "é😀"),
    ("XADD", "stream", "*", "field", b"\x00\xff"),
    ("EVALSHA", "a" * 40, 1, "k", "x" * 100_000),
]

IMPORT_EVERYTHING = """
import importlib, pkgutil
from redis.asyncio.connection import AbstractConnection
before = AbstractConnection.pack_command
imported = 0
for room in ("postel", "postel.messages", "postel.services", "postel.workers", "postel.infra"):
    package = importlib.import_module(room)
    for module in pkgutil.walk_packages(package.__path__, room + "."):
        if module.name != "postel.__main__":
            importlib.import_module(module.name)
            imported += 1
print(imported)
assert AbstractConnection.pack_command is before, AbstractConnection.pack_command
"""


def test_importing_postel_leaves_redis_py_as_it_was() -> None:
    """An application that imports postel (every module of it) keeps redis-py's packer."""
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERYTHING],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 100, "every module of postel was imported"


@pytest.fixture
def unpacked(monkeypatch: pytest.MonkeyPatch) -> None:
    """redis-py's own packer for the test, and again after it, whatever the test installs."""
    monkeypatch.setattr(AbstractConnection, "pack_command", redis_packing._python_pack_command)


def test_postel_worker_packs_with_hiredis(unpacked: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from postel.infra.cli.main import main
    from postel.infra.runtime import runner

    seen = []

    async def run_workers(*args: object, **kwargs: object) -> None:
        seen.append(AbstractConnection.pack_command)

    monkeypatch.setattr(runner, "run_workers", run_workers)
    monkeypatch.setenv("POSTEL_REDIS_URL", "redis://127.0.0.1:1/0")
    result = CliRunner().invoke(main, ["worker", "planner"])
    assert result.exit_code == 0, result.output
    assert seen == [redis_packing._pack_command]


def test_postel_up_packs_with_hiredis(unpacked: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from postel.infra.cli.main import main
    from postel.infra.runtime import local_system
    from postel.messages.errors import Unavailable

    seen = []

    class NoSystem:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        async def start(self) -> None:
            seen.append(AbstractConnection.pack_command)
            raise Unavailable("no system in this test")

        async def stop(self) -> None:
            pass

    monkeypatch.setattr(local_system, "LocalSystem", NoSystem)
    monkeypatch.delenv("POSTEL_REDIS_URL", raising=False)
    result = CliRunner().invoke(main, ["up", "--no-web"])
    assert seen == [redis_packing._pack_command], result.output


@pytest.mark.parametrize("args", COMMANDS, ids=lambda args: str(args[0]))
def test_packing_matches_redis_py(args: tuple[object, ...]) -> None:
    connection = Connection()
    packed = b"".join(redis_packing._pack_command(connection, *args))
    assert packed == b"".join(redis_packing._python_pack_command(connection, *args))


@pytest.mark.parametrize("value", [True, None, object()])
def test_what_redis_cannot_take_is_refused_as_redis_py_refuses_it(value: object) -> None:
    with pytest.raises(DataError):
        redis_packing._pack_command(Connection(), "SET", "key", value)
