"""Commands are packed by hiredis (infra/store/redis_packing.py), byte for byte as redis-py's own
packer would, with redis-py's errors for what Redis cannot take."""

from __future__ import annotations

import importlib

import pytest
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


def test_postel_processes_pack_with_hiredis() -> None:
    """Every connection is made through infra/store/connect.py, which installs the packer
    when it is imported."""
    importlib.import_module("postel.infra.store.connect")
    assert AbstractConnection.pack_command is redis_packing._pack_command


@pytest.mark.parametrize("args", COMMANDS, ids=lambda args: str(args[0]))
def test_packing_matches_redis_py(args: tuple[object, ...]) -> None:
    connection = Connection()
    packed = b"".join(connection.pack_command(*args))
    assert packed == b"".join(redis_packing._python_pack_command(connection, *args))


@pytest.mark.parametrize("value", [True, None, object()])
def test_what_redis_cannot_take_is_refused_as_redis_py_refuses_it(value: object) -> None:
    with pytest.raises(DataError):
        Connection().pack_command("SET", "key", value)
