"""Who goes first in a queue: priority classes, with aging, and tenants served in turn.

Both live on arq's own queue, the sorted set a worker takes from in score order
(infra/runtime/wake.py); nothing else is read to choose (docs/ARCHITECTURE.md, "Who goes
first", says why).

**Classes, with aging.** A message enters its queue scored with when it enters, less its
class's advance (`CLASS_ADVANCE_MS`): interactive `2 x PRIORITY_GAP_MS`, normal
`PRIORITY_GAP_MS`, batch 0. The queue is read lowest score first, so a higher class goes
first, and a waiting message gains on every later arrival as time passes: the bound is that
**a message is taken before every message of a higher class that enters its queue more than
the classes' advance apart after it** (a batch message before any interactive one entering
more than 2 x PRIORITY_GAP_MS later), so under any load of higher classes it waits at most
that long plus the time to serve what entered before then. A later hop keeps the class: the
envelope carries it (`Envelope.derive`).

**Tenants, in turn.** Within a class, each tenant has at most `TENANT_WINDOW` messages in
the ready part of the queue; the rest wait in order in the tenant's held list
(`Keyspace.held`). When the take script takes one of a tenant's messages it moves the
tenant's next held message into the queue, scored as entering now: so a tenant with a
backlog of thousands re-enters behind every other tenant's waiting messages, and stages
serve tenants in turn (round robin, each turn up to the window) rather than in arrival
order. The hash `Keyspace.turns` counts each `<class>|<tenant>`'s ready messages; the commit
script (infra/store/commit.py) reads it as it enqueues (one HINCRBY), the take script gives
a turn back as it takes (one LPOP, and one HINCRBY when nothing is held). Everything a queue
needs is in the queue's lane (one hash slot on a Redis Cluster), so each lane is fair on its
own.

**A cap in flight (optional).** With POSTEL_TENANT_MAX_IN_FLIGHT (or a tenant's own in
POSTEL_TENANT_MAX_IN_FLIGHT_BY), the take script takes a tenant's message only while fewer
than the cap of the tenant's messages are running in the queue: the set
`Keyspace.running_prefix` + tenant holds the arq ids it took, and a member whose in-progress
key is gone (its hop ended, was retried, or its worker died and the lease lapsed) is dropped
as the set is read, so the count cannot drift. A message over the cap stays ready in the
queue, in its place, and is taken once a running one ends (the worker whose hop ended wakes
the queue). The set is in the queue's lane, so on a Redis Cluster the cap holds per stage
and lane.

A deferred message (`not_before`, a retry's backoff) is scored with when it falls due and
takes no turn of its tenant's window while it waits. Counts that drift (a ready message
removed by hand, not taken) are mended the next time a take finds nothing to take while
messages are held: it clears the counts and gives each held tenant a fresh window.
"""

from __future__ import annotations

from postel.messages.job import PRIORITIES, Priority

PRIORITY_GAP_MS = 5_000
"""How far ahead of the next class a message enters its queue: interactive 10 s ahead of
batch, normal 5 s."""

CLASS_ADVANCE_MS: dict[Priority, int] = {
    priority: (len(PRIORITIES) - 1 - rank) * PRIORITY_GAP_MS
    for rank, priority in enumerate(PRIORITIES)
}
"""How much earlier than its entry each class's message is scored."""

TENANT_WINDOW = 4
"""A tenant's ready messages per class in one queue (one lane's); the rest are held."""


def turn_of(priority: str, tenant: str) -> str:
    """The `<class>|<tenant>` a message takes turns as (a tenant name holds no `|`)."""
    return f"{priority}|{tenant}"


ADVANCE_LUA = (
    "local advance = {"
    + ", ".join(f"{priority} = {ms}" for priority, ms in CLASS_ADVANCE_MS.items())
    + "}\n"
)
"""Lua: the classes' advances, a table by class name."""

ENQUEUE = f"""
local function enqueue(queue, job_id, score, wake, turns, turn, held, held_turns, tokens_max)
  if turn ~= '' and redis.call('HINCRBY', turns, turn, 1) > {TENANT_WINDOW} then
    redis.call('HINCRBY', turns, turn, -1)
    redis.call('RPUSH', held, job_id)
    redis.call('SADD', held_turns, turn)
    return
  end
  redis.call('ZADD', queue, score, job_id)
  if redis.call('LPUSH', wake, '1') > tonumber(tokens_max) then
    redis.call('LTRIM', wake, 0, tokens_max - 1)
  end
end
"""
"""Lua: put a queued message in its queue, or in its tenant's held list when the tenant's
window is full (`turn` '' for a message that takes no turn: a deferred one)."""

GIVE_TURN = (
    ADVANCE_LUA
    + """
local function redis_now()
  local clock = redis.call('TIME')
  return tonumber(clock[1]) * 1000 + math.ceil(tonumber(clock[2]) / 1000)
end
local function give_turn(queue, turns, held, turn, class, now)
  local next_id = redis.call('LPOP', held)
  if next_id then
    redis.call('ZADD', queue, now - advance[class], next_id)
    return 1
  end
  if redis.call('HINCRBY', turns, turn, -1) < 0 then
    redis.call('HDEL', turns, turn)
  end
  return 0
end
"""
)
"""Lua: a taken message gives its `<class>|<tenant>`'s turn to the next held message, which
enters the queue at `now`; with none held, the tenant's count drops by one. The take script
runs it for each job it takes; a hop taken by arq's own Worker runs it in its receive
(infra/store/commit.py)."""

TAKE_TURNS = (
    GIVE_TURN
    + f"""
local function pass_turn(queue, turns, held_prefix, payload, now)
  local class = string.match(payload, '"priority":"(%a+)"')
  local tenant = string.match(payload, '"tenant":"([^"]*)"')
  if not (class and advance[class] and tenant) then
    return 0
  end
  local turn = class .. '|' .. tenant
  return give_turn(queue, turns, held_prefix .. turn, turn, class, now)
end
local caps = nil
local function running_set(payload, in_progress_prefix, running_prefix, cap_all, caps_json)
  cap_all, caps_json = cap_all or '', caps_json or ''
  if cap_all == '' and caps_json == '' then
    return ''
  end
  local tenant = string.match(payload, '"tenant":"([^"]*)"')
  if not tenant then
    return ''
  end
  if caps == nil then
    caps = caps_json ~= '' and cjson.decode(caps_json) or {{}}
  end
  local cap = tonumber(caps[tenant] or cap_all)
  if not cap then
    return ''
  end
  local running = running_prefix .. tenant
  for _, id in ipairs(redis.call('SMEMBERS', running)) do
    if redis.call('EXISTS', in_progress_prefix .. id) == 0 then
      redis.call('SREM', running, id)
    end
  end
  if redis.call('SCARD', running) >= cap then
    return nil
  end
  return running
end
local function mend_turns(queue, turns, held_turns, held_prefix, now)
  local moved = 0
  redis.call('DEL', turns)
  for _, turn in ipairs(redis.call('SMEMBERS', held_turns)) do
    local class = string.match(turn, '^(%a+)|')
    local ids = advance[class] and redis.call('LPOP', held_prefix .. turn, {TENANT_WINDOW})
    if ids then
      local scored = {{}}
      for _, id in ipairs(ids) do
        scored[#scored + 1] = now - advance[class]
        scored[#scored + 1] = id
      end
      redis.call('ZADD', queue, unpack(scored))
      redis.call('HSET', turns, turn, #ids)
      moved = moved + #ids
    end
    if redis.call('EXISTS', held_prefix .. turn) == 0 then
      redis.call('SREM', held_turns, turn)
    end
  end
  return moved
end
"""
)
"""Lua for the take script: `pass_turn` reads a taken job's class and tenant from its
payload (the envelope's fields come before any of the message's own) and gives its turn;
`mend_turns` mends the counts when nothing could be taken while messages are held;
`running_set` says where a taken message counts against its tenant's cap in flight ('' for
no cap; nil when the tenant is at its cap: the message is not taken)."""
