"""One job's story, as its page shows it: its record, its events (at most
POSTEL_JOB_EVENTS_MAXLEN) and its HDT rounds, arranged as hops on a timeline, rounds with
their commands, the AI loop's iterations and the validator's verdicts, and the hops in
progress with what their worker processes say of them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from postel.infra.runtime.presence import Busy, live_workers
from postel.infra.store.calls import RecordedCall, last_calls
from postel.infra.store.events import HANDLED, Event, EventLog
from postel.infra.store.jobs import JobRecord, JobStore
from postel.infra.store.keys import Keyspace
from postel.infra.store.stores import GaslRound, GaslStateStore
from postel.messages import ExecutionRecord, ids, utc_now
from postel.services.planner.render import dumps
from postel.services.step import parse_command_lines
from redis.asyncio import Redis

ROWS_SHOWN = 5
SOURCES_SHOWN = 12
HOPS_SHOWN = 400
CALLS_SHOWN = 30
"""A job's page shows its last CALLS_SHOWN model calls; the API has them all."""


def event_time(event: Event) -> datetime | None:
    """When the entry was written: its stream id's milliseconds."""
    if not event.id:
        return None
    return datetime.fromtimestamp(int(event.id.split("-")[0]) / 1000, tz=UTC)


@dataclass
class HopView:
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
        return ids.redrive_of(self.message_id)[1]

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
    hops: list[HopView]
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
    running: list[HopView]
    """The hops in progress now."""


def _fold(events: list[Event]) -> list[HopView]:
    hops: dict[str, HopView] = {}
    for event in events:
        key = f"{event.message_id}|end" if event.stage == "done" else event.message_id
        hop = hops.get(key)
        when = event_time(event)
        if hop is None:
            hop = hops[key] = HopView(
                event.message_id, event.type, event.worker, event.stage, at=when
            )
        # the commit that failed the job after the dead letter (`failed`; `completed` in
        # streams written before) ends the hop: it stays dead, and ran for the time it says
        given_up = hop.status == "dead_lettered" and event.status in ("completed", "failed")
        if given_up:
            hop.ended = when
            hop.duration_ms = max(hop.duration_ms, event.duration_ms)
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


def _place(hops: list[HopView], start: datetime, end: datetime) -> float:
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


def _rounds(hops: list[HopView], stored: list[GaslRound]) -> list[RoundView]:
    views: dict[tuple[int, int], RoundView] = {}
    for hop in hops:
        where = ids.gasl_round_of(hop.message_id)
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
    stored = await GaslStateStore(redis, jobs.keyspace, jobs.ttl_s).rounds(job_id)
    hops = _fold(history)
    call_count, calls = await last_calls(redis, jobs.keyspace, job_id, CALLS_SHOWN)
    start = record.created_at
    # to the last event: a message dropped after the job finished ends later than the job
    stamps = [t for t in (record.finished_at, event_time(history[-1]) if history else None) if t]
    end = max(stamps) if record.finished_at is not None else max([*stamps, utc_now()])
    if not record.finished:
        busy = await _busy(redis, jobs.keyspace)
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


async def _busy(redis: Redis, keyspace: Keyspace) -> dict[str, Busy]:
    """What each live worker process last said it is handling, by message id."""
    live = await live_workers(redis, keyspace)
    return {busy.message_id: busy for p in live for busy in p.busy}
