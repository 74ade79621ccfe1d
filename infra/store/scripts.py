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
        """EVALSHA, after SCRIPT LOAD where a server (a restarted one, a new primary) has not
        seen the script: the two commands the minimal ACL grants (infra/store/access.py)."""
        try:
            return await redis.evalsha(self.sha, len(keys), *keys, *args)
        except NoScriptError:
            await redis.script_load(self.text)
            return await redis.evalsha(self.sha, len(keys), *keys, *args)
