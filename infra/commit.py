"""Commit once: a message's done marker and the records of its handling, atomically.

One Lua script sets `postel:done:<message_id>` if absent and, only then, runs the given
commands (event XADDs, the job record's HSET, the results stream). A handler that runs twice
therefore records its completion once, in one round trip.

One command is postel's own: `MARK_RUNNING key stage at` sets the job record to running at
`stage` unless the job already finished. Downstream messages are enqueued before the commit
(so a crash in between re-runs the handler instead of losing them), and a fast downstream
stage may finish the job first: its record must not be set back to running.
"""

from __future__ import annotations

import json

from redis.asyncio import Redis

from infra.events import Command

MARK_RUNNING = "MARK_RUNNING"

_SCRIPT = """
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1]) then
  for _, command in ipairs(cjson.decode(ARGV[2])) do
    if command[1] == 'MARK_RUNNING' then
      local status = redis.call('HGET', command[2], 'status')
      if status ~= 'completed' and status ~= 'failed' then
        redis.call('HSET', command[2], 'status', 'running', 'stage', command[3],
                   'updated_at', command[4])
      end
    else
      redis.call(unpack(command))
    end
  end
  return 1
end
return 0
"""


async def commit_once(redis: Redis, done_key: str, ttl_s: int, commands: list[Command]) -> bool:
    """True if this call committed; False if the message was already committed."""
    script = redis.register_script(_SCRIPT)
    committed = await script(keys=[done_key], args=[ttl_s, json.dumps(commands)])
    return bool(committed)
