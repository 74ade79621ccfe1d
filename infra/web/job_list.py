"""The jobs list the dashboard and the API page through: jobs newest first from the index
`postel:jobs`, filtered by status, stage, failure kind, class, tenant, scheduled (deferred
and not yet due), text and age. A page is one ZREVRANK,
one ZREVRANGE and one pipelined HMGET per batch whatever the number of jobs; a filter reads
at most SCAN_LIMIT records per page (on a cluster, every lane's index, merged)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, get_args

from postel.infra.runtime.settings import WORKER_NAMES
from postel.infra.store.deadletter import summarise_validation
from postel.infra.store.jobs import JobStatus, MalformedJobRecord
from postel.infra.store.keys import Keyspace
from postel.messages import FailureStatus, ids, utc_now
from postel.messages.job import DEFAULT_PRIORITY, DEFAULT_TENANT, Priority
from pydantic import BaseModel, ValidationError
from redis.asyncio import Redis

JOB_STATUSES: tuple[str, ...] = get_args(JobStatus)
FAILURES: tuple[str, ...] = get_args(FailureStatus)
STAGES: tuple[str, ...] = ("submit", *WORKER_NAMES, "done")
SCAN_LIMIT = 5_000
PAGE_LIMIT = 200
_FILTERED = 7
"""A filter reads the first seven summary fields of every record (status, stage, title,
failure, priority, tenant, not_before); the rest only of the matches."""
TIME_RANGES: dict[str, int] = {
    "15m": 15 * 60,
    "1h": 3600,
    "6h": 6 * 3600,
    "24h": 86400,
    "7d": 7 * 86400,
}
"""The jobs list's time ranges: jobs created within the last so many seconds."""
_BATCH = 200
_SUMMARY_FIELDS = (
    "status",
    "stage",
    "title",
    "failure",
    "priority",
    "tenant",
    "not_before",
    "created_at",
    "updated_at",
    "finished_at",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "failed_llm_calls",
)


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
    priority: Priority = DEFAULT_PRIORITY
    tenant: str = DEFAULT_TENANT
    not_before: datetime | None = None
    llm_calls: int = 0
    failed_llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def scheduled(self) -> bool:
        return _scheduled(self.status, self.not_before)


def _scheduled(status: str, not_before: datetime | str | None) -> bool:
    """Deferred and not yet due: queued with its start still ahead."""
    if status != "queued" or not not_before:
        return False
    when = datetime.fromisoformat(not_before) if isinstance(not_before, str) else not_before
    return when > utc_now()


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


async def _index_after(
    redis: Redis, keyspace: Keyspace, cursor: tuple[float, str] | None, count: int
) -> list[tuple[str, float]]:
    """Up to `count` (job id, score) of the index, newest first, after `cursor`. The cursor's
    job is found by rank, so jobs submitted meanwhile neither repeat nor hide entries; if it
    has left the index, its score serves instead. On a cluster, every lane's index read
    from the cursor's score and merged."""
    if keyspace.clustered:
        return await _lanes_after(redis, keyspace, cursor, count)
    index = keyspace.jobs("")
    if cursor is None:
        start = 0
    else:
        rank = await redis.zrevrank(index, cursor[1])
        if rank is None:
            found = await redis.zrevrangebyscore(
                index, f"({cursor[0]}", "-inf", start=0, num=count, withscores=True
            )
            return [(_text(m) or "", float(s)) for m, s in found]
        start = rank + 1
    found = await redis.zrevrange(index, start, start + count - 1, withscores=True)
    return [(_text(m) or "", float(s)) for m, s in found]


async def _lanes_after(
    redis: Redis, keyspace: Keyspace, cursor: tuple[float, str] | None, count: int
) -> list[tuple[str, float]]:
    """`_index_after` over every lane's index: newest first, ties by id, as ZREVRANGE
    orders one index."""
    top = str(cursor[0]) if cursor else "+inf"
    async with redis.pipeline(transaction=False) as pipe:
        for lane in keyspace.lanes():
            # the cursor's score is read again: a job of another lane may share it
            pipe.zrevrangebyscore(
                keyspace.jobs(lane), top, "-inf", start=0, num=count + 1, withscores=True
            )
        answers = await pipe.execute()
    entries = [(_text(m) or "", float(s)) for answer in answers for m, s in answer]
    if cursor is not None:
        entries = [(m, s) for m, s in entries if (s, m) < (cursor[0], cursor[1])]
    return sorted(entries, key=lambda entry: (entry[1], entry[0]), reverse=True)[:count]


async def _index_size(redis: Redis, keyspace: Keyspace) -> int:
    async with redis.pipeline(transaction=False) as pipe:
        for lane in keyspace.lanes():
            pipe.zcard(keyspace.jobs(lane))
        return sum(await pipe.execute())


def _summary(keyspace: Keyspace, job_id: str, values: list[Any]) -> JobSummary | None:
    data = dict(zip(_SUMMARY_FIELDS, (_text(v) for v in values), strict=True))
    if data["status"] is None:
        return None  # expired since it was indexed
    try:
        return JobSummary.model_validate(
            {"job_id": job_id, **{k: v for k, v in data.items() if v is not None}}
        )
    except ValidationError as exc:
        raise MalformedJobRecord(job_id, keyspace.job(job_id), summarise_validation(exc)) from exc


async def _summaries(
    redis: Redis, keyspace: Keyspace, matching: list[tuple[str, list[Any]]], *, complete: bool
) -> list[JobSummary]:
    """The jobs' summaries from the fields read while filtering when they were all read
    (`complete`), else from a second read of the matches only."""
    if not complete:
        async with redis.pipeline(transaction=False) as pipe:
            for job_id, _partial in matching:
                pipe.hmget(keyspace.job(job_id), _SUMMARY_FIELDS)
            rows = await pipe.execute()
        matching = [(job_id, row) for (job_id, _), row in zip(matching, rows, strict=True)]
    summaries = (_summary(keyspace, job_id, values) for job_id, values in matching)
    return [job for job in summaries if job is not None]


@dataclass(frozen=True)
class JobFilter:
    """What a page of jobs must match; None matches anything."""

    status: str | None = None
    stage: str | None = None
    q: str | None = None
    failure: str | None = None
    priority: str | None = None
    tenant: str | None = None
    scheduled: bool | None = None

    @property
    def reads_records(self) -> bool:
        """Whether a job's record must be read to tell (the age alone needs none)."""
        return any(v is not None and v != "" for v in vars(self).values())


def _matches(job_id: str, values: list[Any], wanted: JobFilter) -> bool:
    """The filter, on the raw fields (status, stage, title, failure, priority, tenant,
    not_before first): a page that reads many records to find a few builds a model of the few
    only."""
    status, stage, title, failure, priority, tenant, not_before = (
        _text(v) or "" for v in values[:_FILTERED]
    )
    if wanted.status and status != wanted.status:
        return False
    if wanted.stage and stage != wanted.stage:
        return False
    if wanted.failure and failure != wanted.failure:
        return False
    if wanted.priority and (priority or DEFAULT_PRIORITY) != wanted.priority:
        return False
    if wanted.tenant and (tenant or DEFAULT_TENANT) != wanted.tenant:
        return False
    if wanted.scheduled is not None and _scheduled(status, not_before) != wanted.scheduled:
        return False
    q = wanted.q
    return not q or q.lower() in job_id.lower() or q.lower() in title.lower()


async def list_jobs(
    redis: Redis,
    keyspace: Keyspace,
    *,
    status: str | None = None,
    stage: str | None = None,
    q: str | None = None,
    before: str | None = None,
    limit: int = 50,
    failure: str | None = None,
    within_s: int | None = None,
    priority: str | None = None,
    tenant: str | None = None,
    scheduled: bool | None = None,
) -> JobsPage:
    """A page of jobs, newest first, filtered by status, stage, failure kind, class, tenant,
    whether scheduled, text in the id or title, and creation within the last `within_s`
    seconds. A `q` that is a job's exact id finds it directly, however old."""
    wanted = JobFilter(status, stage, q, failure, priority, tenant, scheduled)
    limit = max(1, min(limit, PAGE_LIMIT))
    total = await _index_size(redis, keyspace)
    # only a well-formed id is looked up: "x:gen:0" would name another job's key
    is_id = q is not None and ids.is_job_id(q)
    if q and is_id and before is None and await redis.exists(keyspace.job(q)):
        values = await redis.hmget(keyspace.job(q), _SUMMARY_FIELDS)
        exact = _summary(keyspace, q, values)
        if exact is not None and _matches(q, values, replace(wanted, q=None)):
            return JobsPage(items=[exact], next=None, scanned=1, total=total)
    cursor = ids.parse_jobs_cursor(before) if before else None
    oldest_ms = (utc_now().timestamp() - within_s) * 1000 if within_s else None
    batch = _BATCH if wanted.reads_records else limit
    found: list[JobSummary] = []
    scanned = 0
    exhausted = False
    while len(found) < limit and scanned < SCAN_LIMIT:
        entries = await _index_after(redis, keyspace, cursor, batch)
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
                pipe.hmget(keyspace.job(job_id), fields)
            rows = await pipe.execute()
        matching: list[tuple[str, list[Any]]] = []
        for (job_id, score), values in zip(entries, rows, strict=True):
            scanned += 1
            cursor = (score, job_id)
            if values[0] is not None and _matches(job_id, values, wanted):
                matching.append((job_id, values))
                if len(found) + len(matching) == limit:
                    break
        found.extend(
            await _summaries(redis, keyspace, matching, complete=fields == _SUMMARY_FIELDS)
        )
        if len(found) < limit and (out_of_range or len(entries) < batch):
            exhausted = True
            break
    following = None if exhausted or cursor is None else ids.jobs_cursor(*cursor)
    return JobsPage(items=found, next=following, scanned=scanned, total=total)
