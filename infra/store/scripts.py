"""A Lua script whose SHA is worked out once, when its module loads, and run on whichever
client a caller has: redis-py's `register_script` binds a script to one client and hashes
its text on every registration, which the commit and receive of every hop would pay."""

from __future__ import annotations

import hashlib
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import NoScriptError


class LuaScript:
    def __init__(self, text: str) -> None:
        self.text = text
        self.sha = hashlib.sha1(text.encode()).hexdigest()

    async def __call__(self, redis: Redis, keys: list[str], args: list[Any]) -> Any:
        """EVALSHA, and EVAL the first time a server (a restarted one, a new primary) has
        not seen the script: EVAL loads it for the next call."""
        try:
            return await redis.evalsha(self.sha, len(keys), *keys, *args)
        except NoScriptError:
            return await redis.eval(self.text, len(keys), *keys, *args)
