"""The system as the workers and queues pages and the API show it: the live worker
processes with what each has handled, the queues' depths, and one queue's messages, each in
a few pipelined round trips whatever the number of processes and messages."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from arq.constants import in_progress_key_prefix, job_key_prefix, retry_key_prefix
from postel.infra.runtime.presence import TTL_S, Busy, live_workers
from postel.infra.runtime.settings import WORKER_NAMES
from postel.infra.store.connect import REDIS_UNAVAILABLE
from postel.infra.store.keys import Keyspace
from postel.infra.store.wire import loads
from postel.messages import utc_now
from pydantic import BaseModel
from redis.asyncio import Redis
from redis.exceptions import ResponseError


def _text(value: bytes | str | None) -> str | None:
    if value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else value


class WorkerView(BaseModel):
    """A live worker process: what it runs, what it has handled per kind, and when it was
    last seen (its presence is refreshed every few seconds)."""

    instance: str
    host: str
    pid: int
    workers: list[str]
    ingress: bool
    started_at: datetime
    last_seen: datetime
    handled: dict[str, int]
    last_handled: dict[str, datetime]
    busy: list[Busy] = []
    """The hops it is handling, as of its last presence refresh."""


async def workers_view(redis: Redis, keyspace: Keyspace) -> list[WorkerView]:
    presences = await live_workers(redis, keyspace)
    lanes = keyspace.lanes()
    async with redis.pipeline(transaction=False) as pipe:
        for lane in lanes:
            pipe.hgetall(keyspace.tally_handled(lane))
            pipe.hgetall(keyspace.tally_last(lane))
        for presence in presences:
            pipe.pttl(keyspace.worker(presence.instance))
        replies = await pipe.execute()
    tallies, ttls = replies[: 2 * len(lanes)], replies[2 * len(lanes) :]
    handled: dict[str, int] = {}
    last: dict[str, datetime] = {}
    for handled_raw, last_raw in zip(tallies[::2], tallies[1::2], strict=True):
        for k, v in handled_raw.items():
            handled[_text(k)] = handled.get(_text(k), 0) + int(v)
        for k, v in last_raw.items():
            stamp = datetime.fromisoformat(_text(v) or "")
            last[_text(k)] = max(stamp, last.get(_text(k), stamp))
    now = utc_now()
    views = []
    for presence, ttl_ms in zip(presences, ttls, strict=True):
        seen_ms_ago = max(TTL_S * 1000 - max(int(ttl_ms), 0), 0)
        views.append(
            WorkerView(
                instance=presence.instance,
                host=presence.host,
                pid=presence.pid,
                workers=presence.workers,
                ingress=presence.ingress,
                started_at=presence.started_at,
                last_seen=datetime.fromtimestamp(now.timestamp() - seen_ms_ago / 1000, tz=UTC),
                handled={
                    kind: handled.get(f"{presence.instance}/{kind}", 0) for kind in presence.workers
                },
                last_handled={
                    kind: stamp
                    for kind in presence.workers
                    if (stamp := last.get(f"{presence.instance}/{kind}")) is not None
                },
                busy=presence.busy,
            )
        )
    return views


class QueueView(BaseModel):
    """A worker kind's queue: messages waiting, and how long the oldest has waited (None
    when empty; negative when the first is deferred, as a retry is)."""

    worker: str
    depth: int
    oldest_wait_s: float | None


class TurnView(BaseModel):
    """One class and tenant on a worker kind's queue: messages ready in the queue (its
    window), held behind them (infra/store/turns.py), and how long the oldest has waited
    since it was sent (None when none was seen: the view reads the first TURNS_SCAN ready
    messages of each queue and the head of each held list)."""

    worker: str
    priority: str
    tenant: str
    ready: int
    held: int
    oldest_wait_s: float | None

    @property
    def depth(self) -> int:
        return self.ready + self.held


TURNS_SCAN = 50
"""Ready messages per queue (and lane) whose class, tenant and age the turns view reads."""


async def turns_view(redis: Redis, keyspace: Keyspace) -> list[TurnView]:
    """Every class and tenant waiting on every queue, busiest first, in three pipelined
    round trips."""
    now_ms = utc_now().timestamp() * 1000
    places = [(worker, lane) for worker in WORKER_NAMES for lane in keyspace.lanes()]
    async with redis.pipeline(transaction=False) as pipe:
        for worker, lane in places:
            pipe.hgetall(keyspace.turns(worker, lane))
            pipe.smembers(keyspace.held_turns(worker, lane))
            pipe.zrangebyscore(
                keyspace.queue(worker, lane), "-inf", int(now_ms), start=0, num=TURNS_SCAN
            )
        listed = await pipe.execute()
    held_lists = []
    async with redis.pipeline(transaction=False) as pipe:
        for n, (worker, lane) in enumerate(places):
            for turn in sorted(_text(t) or "" for t in listed[3 * n + 1]):
                held_lists.append((worker, turn))
                pipe.llen(keyspace.held(worker, lane, turn))
                pipe.lindex(keyspace.held(worker, lane, turn), 0)
            for member in listed[3 * n + 2]:
                pipe.get(job_key_prefix + (_text(member) or ""))
        found = await pipe.execute()
    heads = found[: 2 * len(held_lists)]
    async with redis.pipeline(transaction=False) as pipe:
        for head in heads[1::2]:
            pipe.get(job_key_prefix + (_text(head) or ""))
        head_payloads = await pipe.execute()
    rows: dict[tuple[str, str], list[Any]] = {}

    def row(worker: str, turn: str) -> list[Any]:
        return rows.setdefault((worker, turn), [0, 0, None])

    def seen(worker: str, raw: bytes | None, ready: bool) -> None:
        message = _message(raw)
        if not message:
            return
        entry = row(
            worker, f"{message.get('priority', 'normal')}|{message.get('tenant', 'default')}"
        )
        if ready:
            entry[0] += 1
        sent = message.get("created_at")
        if isinstance(sent, str):
            at = datetime.fromisoformat(sent).timestamp()
            entry[2] = at if entry[2] is None else min(entry[2], at)

    payloads = iter(found[2 * len(held_lists) :])
    for n, (worker, _lane) in enumerate(places):
        for _member in listed[3 * n + 2]:
            seen(worker, next(payloads), ready=True)
        for turn, count in listed[3 * n].items():
            entry = row(worker, _text(turn) or "")
            entry[0] = max(entry[0], int(count))
    for (worker, turn), length, raw in zip(held_lists, heads[::2], head_payloads, strict=True):
        row(worker, turn)[1] += int(length)
        seen(worker, raw, ready=False)
    now_s = now_ms / 1000
    views = [
        TurnView(
            worker=worker,
            priority=turn.partition("|")[0],
            tenant=turn.partition("|")[2],
            ready=ready,
            held=held,
            oldest_wait_s=None if sent is None else max(now_s - sent, 0.0),
        )
        for (worker, turn), (ready, held, sent) in rows.items()
        if ready or held
    ]
    return sorted(views, key=lambda view: (-view.depth, view.worker, view.priority, view.tenant))


def _message(raw: bytes | None) -> dict[str, Any]:
    if not raw:
        return {}
    args = loads(raw).get("a", [None])
    return args[0] if args and isinstance(args[0], dict) else {}


class QueuesView(BaseModel):
    queues: list[QueueView]
    turns: list[TurnView] = []
    """Each class's and tenant's messages waiting on each queue (`turns_view`)."""
    ingress_length: int
    ingress_pending: int
    dead_letters: int
    jobs: int


async def queues_view(redis: Redis, keyspace: Keyspace) -> QueuesView:
    lanes = keyspace.lanes()
    async with redis.pipeline(transaction=False) as pipe:
        for worker in WORKER_NAMES:
            for lane in lanes:
                pipe.zcard(keyspace.queue(worker, lane))
                pipe.zrange(keyspace.queue(worker, lane), 0, 0, withscores=True)
        pipe.xlen(keyspace.ingress)
        for lane in lanes:
            pipe.xlen(keyspace.dead_letters(lane))
            pipe.zcard(keyspace.jobs(lane))
        replies = await pipe.execute()
    now_ms = utc_now().timestamp() * 1000
    turns = await turns_view(redis, keyspace)
    queues = []
    per_worker = 2 * len(lanes)
    for n, worker in enumerate(WORKER_NAMES):
        answers = replies[n * per_worker : (n + 1) * per_worker]
        mine = [turn for turn in turns if turn.worker == worker]
        depth = sum(int(count) for count in answers[::2]) + sum(turn.held for turn in mine)
        waits = [turn.oldest_wait_s for turn in mine if turn.oldest_wait_s is not None]
        # a queue's front is due at its score: a class's advance puts a ready message's
        # score before it was sent, so its age is read from the message, not the score
        firsts = [float(first[0][1]) for first in answers[1::2] if first]
        oldest = max(waits) if waits else (now_ms - min(firsts)) / 1000 if firsts else None
        queues.append(QueueView(worker=worker, depth=depth, oldest_wait_s=oldest))
    totals = replies[len(WORKER_NAMES) * per_worker :]
    ingress_length = totals[0]
    dead, jobs = sum(totals[1::2]), sum(totals[2::2])
    pending = 0
    if ingress_length:
        try:
            summary = await redis.xpending(keyspace.ingress, keyspace.ingress_group)
            pending = int(summary["pending"])
        except REDIS_UNAVAILABLE:
            raise
        except ResponseError:  # no consumer group yet: nothing is pending
            pending = 0
    return QueuesView(
        queues=queues,
        turns=turns,
        ingress_length=int(ingress_length),
        ingress_pending=pending,
        dead_letters=int(dead),
        jobs=int(jobs),
    )


QUEUE_PAGE = 50
"""Messages a queue's page lists at once."""


class QueuedMessage(BaseModel):
    """A message on a worker's queue: its job and type, when it is due (a retry waits for
    its backoff) and whether a worker has it now (`taken`: it stays queued until its commit)
    and on which try."""

    message_id: str
    job_id: str
    type: str
    due_at: datetime
    taken: bool
    tries: int


class QueuePage(BaseModel):
    worker: str
    items: list[QueuedMessage]
    offset: int
    depth: int

    @property
    def next_offset(self) -> int | None:
        following = self.offset + len(self.items)
        return following if following < self.depth else None


async def queue_page(redis: Redis, keyspace: Keyspace, worker: str, offset: int = 0) -> QueuePage:
    """The messages of `worker`'s queue in the order they are due, QUEUE_PAGE from
    `offset`, then those held behind their tenant's window (infra/store/turns.py; due when
    their turn comes, shown as due now): a ZRANGE, the held lists' lengths and ranges, and
    one pipelined read of their payloads, leases and tries."""
    offset = max(offset, 0)
    queue = keyspace.queue(worker)
    async with redis.pipeline(transaction=False) as pipe:
        pipe.zcard(queue)
        pipe.zrange(queue, offset, offset + QUEUE_PAGE - 1, withscores=True)
        pipe.smembers(keyspace.held_turns(worker))
        queued, members, held_turns = await pipe.execute()
    turns = sorted(_text(turn) or "" for turn in held_turns)
    async with redis.pipeline(transaction=False) as pipe:
        for turn in turns:
            pipe.llen(keyspace.held(worker, "", turn))
        lengths = [int(n) for n in await pipe.execute()]
    depth = int(queued) + sum(lengths)
    now_ms = utc_now().timestamp() * 1000
    start = max(offset - int(queued), 0)
    wanted = QUEUE_PAGE - len(members)
    async with redis.pipeline(transaction=False) as pipe:
        for turn, length in zip(turns, lengths, strict=True):
            if wanted > 0 and start < length:
                pipe.lrange(keyspace.held(worker, "", turn), start, start + wanted - 1)
                wanted -= min(length - start, wanted)
            start = max(start - length, 0)
        held = [item for found in await pipe.execute() for item in found]
    members = [*members, *((member, now_ms) for member in held)]
    ids = [_text(member) or "" for member, _score in members]
    async with redis.pipeline(transaction=False) as pipe:
        for arq_id in ids:
            pipe.get(job_key_prefix + arq_id)
            pipe.exists(in_progress_key_prefix + arq_id)
            pipe.get(retry_key_prefix + arq_id)
        replies = await pipe.execute()
    items = []
    for n, (arq_id, (_member, score)) in enumerate(zip(ids, members, strict=True)):
        raw, taken, tries = replies[3 * n : 3 * n + 3]
        args = loads(raw).get("a", [None]) if raw else [None]
        message = args[0] if args and isinstance(args[0], dict) else {}
        items.append(
            QueuedMessage(
                message_id=arq_id,
                job_id=str(message.get("job_id", "")),
                type=str(message.get("type", "?" if raw else "(payload gone)")),
                due_at=datetime.fromtimestamp(float(score) / 1000, tz=UTC),
                taken=bool(taken),
                tries=int(tries or 0),
            )
        )
    return QueuePage(worker=worker, items=items, offset=offset, depth=int(depth))
