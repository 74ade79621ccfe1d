"""What the dashboard and the HTTP API read from Redis, each in a bounded number of round
trips whatever the number of jobs and events:

- jobs, newest first, from the index `postel:jobs` (a page is one ZREVRANK, one ZREVRANGE
  and one pipelined HMGET per batch; a filter reads at most SCAN_LIMIT records per page);
- one job's story: its record, its events (at most POSTEL_JOB_EVENTS_MAXLEN) and its HDT
  rounds, arranged as hops on a timeline, rounds with their commands, the AI loop's
  iterations and the validator's verdicts;
- the live worker processes with what each has handled, and the queues' depths.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, get_args

from arq.constants import in_progress_key_prefix, job_key_prefix, retry_key_prefix
from postel.infra.runtime.presence import TTL_S, Busy, live_workers
from postel.infra.runtime.settings import WORKER_NAMES
from postel.infra.store import keys
from postel.infra.store.calls import RecordedCall, last_calls
from postel.infra.store.connect import REDIS_UNAVAILABLE
from postel.infra.store.deadletter import summarise_validation
from postel.infra.store.events import HANDLED, Event, EventLog
from postel.infra.store.jobs import JobRecord, JobStatus, JobStore, MalformedJobRecord
from postel.infra.store.stores import GaslRound, GaslStateStore
from postel.infra.store.wire import loads
from postel.messages import JOB_ID_PATTERN, ExecutionRecord, FailureStatus, utc_now
from postel.services.planner.render import dumps
from postel.services.step import parse_command_lines
from pydantic import BaseModel, ValidationError
from redis.asyncio import Redis
from redis.exceptions import ResponseError

JOB_STATUSES: tuple[str, ...] = get_args(JobStatus)
FAILURES: tuple[str, ...] = get_args(FailureStatus)
STAGES: tuple[str, ...] = ("submit", *WORKER_NAMES, "done")
SCAN_LIMIT = 5_000
PAGE_LIMIT = 200
_FILTERED = 4
"""A filter reads the first four summary fields of every record (status, stage, title,
failure); the rest only of the matches."""
TIME_RANGES: dict[str, int] = {
    "15m": 15 * 60,
    "1h": 3600,
    "6h": 6 * 3600,
    "24h": 86400,
    "7d": 7 * 86400,
}
"""The jobs list's time ranges: jobs created within the last so many seconds."""
_BATCH = 200
_JOB_ID = re.compile(JOB_ID_PATTERN)
_SUMMARY_FIELDS = (
    "status",
    "stage",
    "title",
    "failure",
    "created_at",
    "updated_at",
    "finished_at",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "failed_llm_calls",
)
ROWS_SHOWN = 5
SOURCES_SHOWN = 12
HOPS_SHOWN = 400
CALLS_SHOWN = 30
_REDRIVE = re.compile(r":redrive(\d+)$")
"""A job's page shows its last CALLS_SHOWN model calls; the API has them all."""


class JobSummary(BaseModel):
    """A job as a list shows it: no request, no result."""

    job_id: str
    status: JobStatus
    stage: str
    title: str = ""
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None = None
    failure: str | None = None
    llm_calls: int = 0
    failed_llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class JobsPage(BaseModel):
    """Jobs newest first. `next` is the cursor of the following page (None at the end);
    `scanned` how many records this page read; `total` how many jobs the index holds."""

    items: list[JobSummary]
    next: str | None
    scanned: int
    total: int


def _text(value: bytes | str | None) -> str | None:
    if value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _cursor(value: str | None) -> tuple[float, str] | None:
    if not value:
        return None
    score, _, member = value.partition(":")
    try:
        return float(score), member
    except ValueError:
        raise ValueError(f"invalid cursor {value!r}: expected <score>:<job id>") from None


async def _index_after(
    redis: Redis, cursor: tuple[float, str] | None, count: int
) -> list[tuple[str, float]]:
    """Up to `count` (job id, score) of the index, newest first, after `cursor`. The cursor's
    job is found by rank, so jobs submitted meanwhile neither repeat nor hide entries; if it
    has left the index, its score serves instead. On a cluster, every lane's index read
    from the cursor's score and merged."""
    if len(keys.lanes()) > 1:
        return await _lanes_after(redis, cursor, count)
    if cursor is None:
        start = 0
    else:
        rank = await redis.zrevrank(keys.JOBS, cursor[1])
        if rank is None:
            found = await redis.zrevrangebyscore(
                keys.JOBS, f"({cursor[0]}", "-inf", start=0, num=count, withscores=True
            )
            return [(_text(m) or "", float(s)) for m, s in found]
        start = rank + 1
    found = await redis.zrevrange(keys.JOBS, start, start + count - 1, withscores=True)
    return [(_text(m) or "", float(s)) for m, s in found]


async def _lanes_after(
    redis: Redis, cursor: tuple[float, str] | None, count: int
) -> list[tuple[str, float]]:
    """`_index_after` over every lane's index: newest first, ties by id, as ZREVRANGE
    orders one index."""
    top = str(cursor[0]) if cursor else "+inf"
    async with redis.pipeline(transaction=False) as pipe:
        for lane in keys.lanes():
            # the cursor's score is read again: a job of another lane may share it
            pipe.zrevrangebyscore(
                keys.jobs(lane), top, "-inf", start=0, num=count + 1, withscores=True
            )
        answers = await pipe.execute()
    entries = [(_text(m) or "", float(s)) for answer in answers for m, s in answer]
    if cursor is not None:
        entries = [(m, s) for m, s in entries if (s, m) < (cursor[0], cursor[1])]
    return sorted(entries, key=lambda entry: (entry[1], entry[0]), reverse=True)[:count]


async def _index_size(redis: Redis) -> int:
    async with redis.pipeline(transaction=False) as pipe:
        for lane in keys.lanes():
            pipe.zcard(keys.jobs(lane))
        return sum(await pipe.execute())


def _summary(job_id: str, values: list[Any]) -> JobSummary | None:
    data = dict(zip(_SUMMARY_FIELDS, (_text(v) for v in values), strict=True))
    if data["status"] is None:
        return None  # expired since it was indexed
    try:
        return JobSummary.model_validate(
            {"job_id": job_id, **{k: v for k, v in data.items() if v is not None}}
        )
    except ValidationError as exc:
        raise MalformedJobRecord(job_id, summarise_validation(exc)) from exc


async def _summaries(
    redis: Redis, matching: list[tuple[str, list[Any]]], *, complete: bool
) -> list[JobSummary]:
    """The jobs' summaries from the fields read while filtering when they were all read
    (`complete`), else from a second read of the matches only."""
    if not complete:
        async with redis.pipeline(transaction=False) as pipe:
            for job_id, _partial in matching:
                pipe.hmget(keys.job(job_id), _SUMMARY_FIELDS)
            rows = await pipe.execute()
        matching = [(job_id, row) for (job_id, _), row in zip(matching, rows, strict=True)]
    summaries = (_summary(job_id, values) for job_id, values in matching)
    return [job for job in summaries if job is not None]


def _matches(
    job_id: str,
    values: list[Any],
    status: str | None,
    stage: str | None,
    q: str | None,
    failure: str | None = None,
) -> bool:
    """The filter, on the raw fields (status, stage, title, failure first): a page that reads
    many records to find a few builds a model of the few only."""
    found_status, found_stage, title, found_failure = (_text(v) or "" for v in values[:_FILTERED])
    if status and found_status != status:
        return False
    if stage and found_stage != stage:
        return False
    if failure and found_failure != failure:
        return False
    return not q or q.lower() in job_id.lower() or q.lower() in title.lower()


async def list_jobs(
    redis: Redis,
    *,
    status: str | None = None,
    stage: str | None = None,
    q: str | None = None,
    before: str | None = None,
    limit: int = 50,
    failure: str | None = None,
    within_s: int | None = None,
) -> JobsPage:
    """A page of jobs, newest first, filtered by status, stage, failure kind, text in the id
    or title, and creation within the last `within_s` seconds. A `q` that is a job's exact
    id finds it directly, however old."""
    limit = max(1, min(limit, PAGE_LIMIT))
    total = await _index_size(redis)
    # only a well-formed id is looked up: "x:gen:0" would name another job's key
    is_id = q is not None and _JOB_ID.match(q) is not None
    if q and is_id and before is None and await redis.exists(keys.job(q)):
        values = await redis.hmget(keys.job(q), _SUMMARY_FIELDS)
        exact = _summary(q, values)
        if exact is not None and _matches(q, values, status, stage, None, failure):
            return JobsPage(items=[exact], next=None, scanned=1, total=total)
    cursor = _cursor(before)
    oldest_ms = (utc_now().timestamp() - within_s) * 1000 if within_s else None
    batch = _BATCH if status or stage or q or failure else limit
    found: list[JobSummary] = []
    scanned = 0
    exhausted = False
    while len(found) < limit and scanned < SCAN_LIMIT:
        entries = await _index_after(redis, cursor, batch)
        out_of_range = False
        if oldest_ms is not None and entries and entries[-1][1] < oldest_ms:
            # newest first: from the first entry older than the range on, all are
            entries = [entry for entry in entries if entry[1] >= oldest_ms]
            out_of_range = True
        if not entries:
            exhausted = True
            break
        # a filter reads the fields it looks at first, the rest for the matches only
        fields = _SUMMARY_FIELDS[:_FILTERED] if batch == _BATCH else _SUMMARY_FIELDS
        async with redis.pipeline(transaction=False) as pipe:
            for job_id, _score in entries:
                pipe.hmget(keys.job(job_id), fields)
            rows = await pipe.execute()
        matching: list[tuple[str, list[Any]]] = []
        for (job_id, score), values in zip(entries, rows, strict=True):
            scanned += 1
            cursor = (score, job_id)
            if values[0] is not None and _matches(job_id, values, status, stage, q, failure):
                matching.append((job_id, values))
                if len(found) + len(matching) == limit:
                    break
        found.extend(await _summaries(redis, matching, complete=fields == _SUMMARY_FIELDS))
        if len(found) < limit and (out_of_range or len(entries) < batch):
            exhausted = True
            break
    following = None if exhausted or cursor is None else f"{cursor[0]:.0f}:{cursor[1]}"
    return JobsPage(items=found, next=following, scanned=scanned, total=total)


def event_time(event: Event) -> datetime | None:
    """When the entry was written: its stream id's milliseconds."""
    if not event.id:
        return None
    return datetime.fromtimestamp(int(event.id.split("-")[0]) / 1000, tz=UTC)


@dataclass
class Hop:
    """One message's handling: every event of its message id, folded."""

    message_id: str
    type: str
    worker: str
    stage: str
    status: str = "queued"
    attempts: int = 0
    instance: str = ""
    at: datetime | None = None
    started: datetime | None = None
    ended: datetime | None = None
    wait_ms: float = 0.0
    duration_ms: float = 0.0
    outcome: Event | None = None
    errors: list[str] = field(default_factory=list)
    offset_ms: float = 0.0
    bar_left: float = 0.0
    bar_wait: float = 0.0
    bar_run: float = 0.0
    running: bool = False
    """Taken by a worker and not finished: the hop in progress."""
    busy: Busy | None = None
    """What its worker process last said of it (its model calls, one in flight)."""

    @property
    def redrive(self) -> int:
        """Which redrive of a dead letter this message is (`<id>:redrive<n>`); 0 if none."""
        found = _REDRIVE.search(self.message_id)
        return int(found[1]) if found else 0

    @property
    def running_ms(self) -> float:
        return (utc_now() - self.started).total_seconds() * 1000 if self.started else 0.0


@dataclass
class CommandView:
    status: str
    count: int
    command: str
    duration_ms: float = 0.0
    rows: list[str] = field(default_factory=list)
    more_rows: int = 0
    sources: list[str] = field(default_factory=list)
    more_sources: int = 0
    error: str = ""
    written: str = ""


@dataclass
class RoundView:
    task_index: int
    round: int
    why: str = ""
    commands: list[CommandView] = field(default_factory=list)
    decision: str = ""
    rationale: str = ""
    gasl_ms: float = 0.0
    llm_calls: int = 0
    starts_from: int | None = None  # set when not the round before (after a pivot)
    abandoned: bool = False  # a later pivot went back past it


@dataclass
class JobStory:
    """`hops` is the whole timeline for a job of at most HOPS_SHOWN hops; a longer one shows
    its first and last hops and says how many are left out (`hops_hidden`, after
    `hops_hidden_at` hops)."""

    record: JobRecord
    events: list[Event]
    hops: list[Hop]
    hop_count: int
    hops_hidden: int
    hops_hidden_at: int
    plans: list[Event]
    rounds: list[RoundView]
    iterations: list[Event]
    verdicts: list[Event]
    span_ms: float
    document: list[dict[str, Any]] | None
    result_json: str
    calls: list[RecordedCall]
    call_count: int
    running: list[Hop]
    """The hops in progress now."""


def _fold(events: list[Event]) -> list[Hop]:
    hops: dict[str, Hop] = {}
    for event in events:
        key = f"{event.message_id}|end" if event.stage == "done" else event.message_id
        hop = hops.get(key)
        when = event_time(event)
        if hop is None:
            hop = hops[key] = Hop(event.message_id, event.type, event.worker, event.stage, at=when)
        given_up = hop.status == "dead_lettered" and event.status == "completed"
        if given_up:  # the commit that failed the job after the dead letter: it stays dead
            hop.ended = when
            continue
        hop.status = event.status
        hop.instance = event.instance if event.status == "received" else hop.instance
        if event.status == "received":
            hop.attempts += 1
            hop.worker = event.worker
            hop.wait_ms = event.wait_ms if hop.started is None else hop.wait_ms
            hop.started = hop.started or when
        elif event.status in ("completed", "continued", "failed", "dropped", "dead_lettered"):
            hop.ended = when
            hop.duration_ms = max(hop.duration_ms, event.duration_ms)
            if when is not None and hop.started is not None and event.duration_ms:
                # a quick hop's `received` is written with its end (infra/runtime/
                # arrival.py): it began its duration before it ended
                began = when - timedelta(milliseconds=event.duration_ms)
                hop.started = min(hop.started, began)
            if event.status in HANDLED and event.stage != "done":
                hop.outcome = event
        if event.error:
            hop.errors.append(event.error)
    return list(hops.values())


def _place(hops: list[Hop], start: datetime, end: datetime) -> float:
    """Percent positions of each hop's wait and run on the job's time line; a hop in progress
    runs to `end` (now, for a running job)."""
    span_ms = max((end - start).total_seconds() * 1000, 1.0)
    for hop in hops:
        began = hop.started or hop.at
        if began is None:
            continue
        offset = (began - start).total_seconds() * 1000
        hop.offset_ms = offset
        waited = min(hop.wait_ms, max(offset, 0.0))
        if hop.running:
            ran = (end - began).total_seconds() * 1000
        else:
            ran = hop.duration_ms or (
                (hop.ended - began).total_seconds() * 1000 if hop.ended is not None else 0.0
            )
            hop.duration_ms = ran  # a dead letter's event carries none: its bar's length
        hop.bar_left = max(0.0, (offset - waited) / span_ms * 100)
        hop.bar_wait = waited / span_ms * 100
        hop.bar_run = min(ran / span_ms * 100, 100.0 - hop.bar_left - hop.bar_wait)
    return span_ms


def _task_and_round(message_id: str) -> tuple[int, int] | None:
    """`<job>:gasl:<task>:<round>` and `<job>:gasl-done:<task>:<round>` name their round."""
    parts = message_id.split(":")
    if len(parts) >= 4 and parts[-3] in ("gasl", "gasl-done"):
        try:
            return int(parts[-2]), int(parts[-1])
        except ValueError:
            return None
    return None


def _command_view(record: ExecutionRecord) -> CommandView:
    return CommandView(
        status=record.status,
        count=record.count,
        command=record.command,
        duration_ms=record.duration_ms,
        rows=[dumps(row) for row in record.rows[:ROWS_SHOWN]],
        more_rows=max(record.count - ROWS_SHOWN, 0) if record.rows else 0,
        sources=record.provenance[:SOURCES_SHOWN],
        more_sources=max(len(record.provenance) - SOURCES_SHOWN, 0),
        error=record.error or "",
        written=str(record.detail.get("written", "")),
    )


def _rounds(hops: list[Hop], stored: list[GaslRound]) -> list[RoundView]:
    views: dict[tuple[int, int], RoundView] = {}
    for hop in hops:
        where = _task_and_round(hop.message_id)
        if where is None or hop.outcome is None:
            continue
        view = views.setdefault(where, RoundView(*where))
        if hop.worker == "gasl":
            view.commands = [
                CommandView(status, count, command)
                for status, count, command in parse_command_lines(hop.outcome.commands)
            ]
            view.gasl_ms = hop.duration_ms
        elif hop.worker == "planner":
            view.decision = hop.outcome.decision
            view.rationale = hop.outcome.rationale
        view.llm_calls += hop.outcome.llm_calls
    for executed in stored:
        view = views.setdefault(
            (executed.task_index, executed.round), RoundView(executed.task_index, executed.round)
        )
        view.why = executed.plan.why
        view.commands = [_command_view(record) for record in executed.records]
        if executed.base_round is not None and executed.base_round != executed.round - 1:
            view.starts_from = executed.base_round
    for (task, round_), view in views.items():
        if view.starts_from is not None:
            # the rounds a pivot went back past were given up
            for skipped in range(view.starts_from + 1, round_):
                if (task, skipped) in views:
                    views[(task, skipped)].abandoned = True
    return [views[key] for key in sorted(views)]


def _document(result: Any) -> list[dict[str, Any]] | None:
    if isinstance(result, dict) and isinstance(result.get("sections"), list):
        return [s for s in result["sections"] if isinstance(s, dict)]
    return None


async def job_story(redis: Redis, jobs: JobStore, events: EventLog, job_id: str) -> JobStory:
    """Everything the job's page shows (JobNotFound for an unknown job)."""
    record = await jobs.get(job_id)
    history = await events.read(job_id)
    stored = await GaslStateStore(redis, jobs.ttl_s).rounds(job_id)
    hops = _fold(history)
    call_count, calls = await last_calls(redis, job_id, CALLS_SHOWN)
    start = record.created_at
    # to the last event: a message dropped after the job finished ends later than the job
    stamps = [t for t in (record.finished_at, event_time(history[-1]) if history else None) if t]
    end = max(stamps) if record.finished_at is not None else max([*stamps, utc_now()])
    if not record.finished:
        busy = await _busy(redis)
        for hop in hops:
            if hop.status == "received" and hop.ended is None:
                hop.running = True
                hop.busy = busy.get(hop.message_id)
    span_ms = _place(hops, start, end)
    handled = [h.outcome for h in hops if h.outcome is not None]
    hidden = max(len(hops) - HOPS_SHOWN, 0)
    head = HOPS_SHOWN // 4
    shown = [*hops[:head], *hops[head + hidden :]] if hidden else hops
    return JobStory(
        record=record,
        events=history,
        hops=shown,
        hop_count=len(hops),
        hops_hidden=hidden,
        hops_hidden_at=head,
        plans=[
            e
            for e in handled
            if e.worker == "planner" and e.type in ("intent.analyzed", "task.planned")
        ],
        rounds=_rounds(hops, stored),
        iterations=[e for e in handled if e.worker == "generator"],
        verdicts=[e for e in handled if e.worker == "validator" and e.decision],
        span_ms=span_ms,
        document=_document(record.result),
        result_json=json.dumps(record.result, indent=2, ensure_ascii=False),
        calls=calls,
        call_count=call_count,
        running=[hop for hop in hops if hop.running],
    )


async def _busy(redis: Redis) -> dict[str, Busy]:
    """What each live worker process last said it is handling, by message id."""
    return {busy.message_id: busy for p in await live_workers(redis) for busy in p.busy}


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


async def workers_view(redis: Redis) -> list[WorkerView]:
    presences = await live_workers(redis)
    lanes = keys.lanes()
    async with redis.pipeline(transaction=False) as pipe:
        for lane in lanes:
            pipe.hgetall(keys.tally_handled(lane))
            pipe.hgetall(keys.tally_last(lane))
        for presence in presences:
            pipe.pttl(keys.worker(presence.instance))
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


class QueuesView(BaseModel):
    queues: list[QueueView]
    ingress_length: int
    ingress_pending: int
    dead_letters: int
    jobs: int


async def queues_view(redis: Redis) -> QueuesView:
    lanes = keys.lanes()
    async with redis.pipeline(transaction=False) as pipe:
        for worker in WORKER_NAMES:
            for lane in lanes:
                pipe.zcard(keys.queue(worker, lane))
                pipe.zrange(keys.queue(worker, lane), 0, 0, withscores=True)
        pipe.xlen(keys.INGRESS)
        for lane in lanes:
            pipe.xlen(keys.dead_letters(lane))
            pipe.zcard(keys.jobs(lane))
        replies = await pipe.execute()
    now_ms = utc_now().timestamp() * 1000
    queues = []
    per_worker = 2 * len(lanes)
    for n, worker in enumerate(WORKER_NAMES):
        answers = replies[n * per_worker : (n + 1) * per_worker]
        depth = sum(int(count) for count in answers[::2])
        firsts = [float(first[0][1]) for first in answers[1::2] if first]
        oldest = (now_ms - min(firsts)) / 1000 if firsts else None
        queues.append(QueueView(worker=worker, depth=depth, oldest_wait_s=oldest))
    totals = replies[len(WORKER_NAMES) * per_worker :]
    ingress_length = totals[0]
    dead, jobs = sum(totals[1::2]), sum(totals[2::2])
    pending = 0
    if ingress_length:
        try:
            summary = await redis.xpending(keys.INGRESS, keys.INGRESS_GROUP)
            pending = int(summary["pending"])
        except REDIS_UNAVAILABLE:
            raise
        except ResponseError:  # no consumer group yet: nothing is pending
            pending = 0
    return QueuesView(
        queues=queues,
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


async def queue_page(redis: Redis, worker: str, offset: int = 0) -> QueuePage:
    """The messages of `worker`'s queue in the order they are due, QUEUE_PAGE from
    `offset`: one ZRANGE and one pipelined read of their payloads, leases and tries."""
    offset = max(offset, 0)
    queue = keys.queue(worker)
    async with redis.pipeline(transaction=False) as pipe:
        pipe.zcard(queue)
        pipe.zrange(queue, offset, offset + QUEUE_PAGE - 1, withscores=True)
        depth, members = await pipe.execute()
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
