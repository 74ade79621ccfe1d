"""Who goes first in a queue: priority classes, with aging, and tenants by fair share.

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

**Tenants, fewest jobs in flight first.** Within a class, when a stage takes its next
message it serves the tenant with the fewest jobs in flight, and tenants with as many go in
turn. A job is in flight from its first take until it ends: the set `Keyspace.in_flight`
of its tenant (one per lane) holds its id from the take that finds it queued, its first
(`verdict`, infra/store/commit.py: one SADD, atomic with marking the job running), or the
redrive that reopens it (infra/runtime/redrive.py), until the script that ends it (a hop's
commit, a cancel, a poison message's dead letter: `LEAVE_IN_FLIGHT`, atomic with the
record's end) removes it. Set operations are idempotent, so a re-run take or a second end counts
nothing twice, and a worker killed mid-hop leaves its job in flight, as it is: its message
is due again when the lease lapses. A job whose record vanishes in flight (deleted by hand)
stays counted. This is max-min fairness over concurrency: with equal loads the earlier
message goes first, in turn; a tenant arriving with nothing in flight is served first at
every stage, ahead of a busy tenant's waiting messages (not of its running hops), until its
jobs in flight equal the others'. It orders tenants, never classes: which class a stage
serves next is the class of the first ready message in score order, as below, and only
which tenant of that class fills the turn is chosen (`FAIR_SHARE`).

**Windows.** Within a class, each tenant has at most `TENANT_WINDOW` messages in the
ready part of the queue; the rest wait in order in the tenant's held list
(`Keyspace.held`). When the take script takes one of a tenant's messages it moves the
tenant's next held message into the queue, scored as entering now: so a tenant with a
backlog of thousands re-enters behind every other tenant's waiting messages, and a queue's
ready part stays a few windows long, whatever the backlogs: the take reads it whole when it
must to find the lightest tenant's first message. The hash `Keyspace.turns` counts each
`<class>|<tenant>`'s ready messages, and so names the tenants a take chooses among; the commit
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
and lane. It counts a tenant's hops running in one stage, not its jobs in flight, so fair
share keeps its own count: a job waiting between stages holds no hop but is in flight.

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
local function class_and_tenant(payload)
  return string.match(payload, '"priority":"(%a+)"'), string.match(payload, '"tenant":"([^"]*)"')
end
local function pass_turn(queue, turns, held_prefix, payload, now)
  local class, tenant = class_and_tenant(payload)
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
  local _, tenant = class_and_tenant(payload)
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
"""Lua for the take script: `class_and_tenant` reads a message's class and tenant from its
payload (the envelope's fields come before any of the message's own); `pass_turn` gives a
taken job's turn;
`mend_turns` mends the counts when nothing could be taken while messages are held;
`running_set` says where a taken message counts against its tenant's cap in flight ('' for
no cap; nil when the tenant is at its cap: the message is not taken)."""

LEAVE_IN_FLIGHT = """
local function leave_in_flight(record, in_flight_prefix, job_id)
  local tenant = redis.call('HGET', record, 'tenant')
  if tenant then
    redis.call('SREM', in_flight_prefix .. tenant, job_id)
  end
end
"""
"""Lua: job `job_id`, whose record has just ended, is no longer in flight for its tenant (the
record's, as the take that counted it read it). Run by every script that ends a record: the
commit script (infra/store/commit.py) and the finish script (infra/store/jobs.py)."""

FAIR_SHARE = """
local function fair_share(turns, in_flight_prefix)
  local share = {loads = {}, capped = {}, live = {}, found = {}, slots = {}, slot = 1, seen = 0,
                 prefix = in_flight_prefix or ''}
  local counts = redis.call('HGETALL', turns)
  for i = 1, #counts, 2 do
    local class, tenant = string.match(counts[i], '^(%a+)|(.*)$')
    if class and tonumber(counts[i + 1]) > 0 then
      share.live[class] = share.live[class] or {}
      share.live[class][tenant] = true
    end
  end
  return share
end
local function load_of(share, tenant)
  local load = share.loads[tenant]
  if load == nil then
    load = 0
    if share.prefix ~= '' then
      load = redis.call('SCARD', share.prefix .. tenant)
    end
    share.loads[tenant] = load
  end
  return load
end
local function fair_found(share, id, payload)
  local class, tenant = class_and_tenant(payload)
  class, tenant = class or '', tenant or ''
  share.live[class] = share.live[class] or {}
  share.live[class][tenant] = true
  local turn = class .. '|' .. tenant
  local found = share.found[turn]
  if not found then
    found = {next = 1}
    share.found[turn] = found
  end
  share.seen = share.seen + 1
  found[#found + 1] = {id = id, payload = payload, tenant = tenant, order = share.seen}
  share.slots[#share.slots + 1] = class
end
local function fair_pick(share, final)
  while share.slot <= #share.slots do
    local class = share.slots[share.slot]
    local open = {}
    for tenant in pairs(share.live[class]) do
      if not share.capped[tenant] then
        local found = share.found[class .. '|' .. tenant]
        local head = found and found[found.next]
        if head or not final then
          open[#open + 1] = {tenant = tenant, head = head}
        end
      end
    end
    local best, best_load, unread_load = nil, nil, nil
    for _, choice in ipairs(open) do
      local load = #open > 1 and load_of(share, choice.tenant) or 0
      if choice.head == nil then
        if unread_load == nil or load < unread_load then
          unread_load = load
        end
      elseif best == nil or load < best_load
          or (load == best_load and choice.head.order < best.order) then
        best, best_load = choice.head, load
      end
    end
    if unread_load ~= nil and (best == nil or unread_load < best_load) then
      return nil
    end
    if best then
      return best
    end
    share.slot = share.slot + 1
  end
  return nil
end
local function fair_taken(share, picked, entered)
  local found = share.found[share.slots[share.slot] .. '|' .. picked.tenant]
  found.next = found.next + 1
  share.slot = share.slot + 1
  if share.loads[picked.tenant] ~= nil then
    share.loads[picked.tenant] = share.loads[picked.tenant] + entered
  end
end
local function fair_capped(share, picked)
  share.capped[picked.tenant] = true
end
local function fair_waiting(share)
  for turn, found in pairs(share.found) do
    local tenant = string.match(turn, '|(.*)$')
    if found[found.next] and not share.capped[tenant] then
      return true
    end
  end
  return false
end
"""
"""Lua for the take script: which ready message fills each free slot. The ready messages are
read in score order; each one read is a turn of its class (a slot) and a candidate of its
tenant (`fair_found`). `fair_pick` fills the first open slot with the first candidate, in
score order, of the slot's class's tenant with the fewest jobs in flight
(`Keyspace.in_flight`, read once per take with SCARD, and only when two or more tenants are
open), among the tenants with ready messages (the turns hash, and those read) that are not at
their cap; it answers nil while a lighter tenant's messages lie beyond what was read (unless
`final`: nothing more will be read), so the take reads on. With one tenant open no load is
read. `fair_taken` records a pick taken (`entered`: 1 if its job has just entered flight),
`fair_capped` one refused by the tenant's cap (its slot is filled by another), and
`fair_waiting` says whether a candidate read is left behind."""
