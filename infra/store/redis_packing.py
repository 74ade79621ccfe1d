"""Commands packed by hiredis: redis-py 5's asyncio connections pack every command in Python.

A hop's commit sends about a hundred arguments (the messages, their events, the job record's
fields), and packing them argument by argument in Python cost a fifth of a worker's CPU per
hop. redis-py's synchronous connections already pack with hiredis when it is installed; its
asyncio ones do not (redis-py 6 does, but arq pins redis-py below 6), so postel gives them the
same packer. An argument hiredis does not take (a memoryview, or a bool or None, which redis-py
refuses with DataError) goes through redis-py's own packer, so errors stay redis-py's.

Installing it changes redis-py for the whole process, so no import does: the process entry
points that carry hops call `pack_with_hiredis()` when they start (`postel worker`, `postel
up`, infra/cli/serve.py; the worker processes of `postel bench bus`). An
application that embeds postel keeps redis-py as it found it unless it calls it itself.
"""

from __future__ import annotations

from typing import Any

import hiredis
from redis.asyncio.connection import AbstractConnection

_python_pack_command = AbstractConnection.pack_command


def _pack_command(self: AbstractConnection, *args: Any) -> list[bytes]:
    name = args[0]
    if isinstance(name, str):
        args = (*name.encode().split(), *args[1:])
    elif isinstance(name, bytes) and b" " in name:
        args = (*name.split(), *args[1:])
    try:
        return [hiredis.pack_command(args)]
    except TypeError:
        return _python_pack_command(self, *args)


def pack_with_hiredis() -> None:
    """Make every asyncio Redis connection of this process pack commands with hiredis."""
    AbstractConnection.pack_command = _pack_command  # type: ignore[method-assign]
