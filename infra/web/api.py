"""The HTTP API under /api (its OpenAPI document is /api/openapi.json, rendered at /api/docs).

Request and response bodies are the pydantic models of messages/ and infra/: a job is
submitted with the same JobRequest as the ingress stream, and a bad body gets 422 naming
the field (a job id not of JOB_ID_PATTERN, a desired type with an unsupported JSON Schema,
an unknown status filter). Status codes: 201 submitted or graph added; a PostelError a route
raises gets its status from messages.errors.OUTCOMES (infra/web/errors.py): 404 no such job
or dead letter or graph, 409 cancelling a finished job, a job id already taken or a dead
letter that stays dead; 413 a body over MAX_PAYLOAD_BYTES (or a graph past a limit:
MAX_GRAPH_BYTES unpacked, POSTEL_GRAPH_MAX_*), 429 past POSTEL_WEB_MAX_STREAMS live streams,
401 without the token when one is configured (declared in the OpenAPI document).
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated

from fastapi import APIRouter, Depends, Header, HTTPException, Path, Query, Request
from fastapi.responses import StreamingResponse
from fastapi.security import APIKeyCookie, HTTPBearer
from postel.infra.runtime.cancel import cancel_job
from postel.infra.runtime.submit import ReservedJobId, submit_job
from postel.infra.store import lanes
from postel.infra.store.calls import RecordedCall, read_calls
from postel.infra.store.connect import REDIS_UNAVAILABLE
from postel.infra.store.events import Event
from postel.infra.store.graphs import (
    GraphFileError,
    GraphInfo,
    GraphNotFound,
    GraphRegistry,
    GraphTooLarge,
    InvalidGraphName,
)
from postel.infra.store.jobs import JobRecord, JobStatus
from postel.infra.store.lanes import LaneCursor
from postel.infra.store.outage import RideOut
from postel.infra.store.stores import GaslRound, GaslStateStore
from postel.infra.web.job_list import TIME_RANGES, JobsPage, list_jobs
from postel.infra.web.outage import UNREACHABLE
from postel.infra.web.security import COOKIE
from postel.infra.web.state import WebState, web_state
from postel.infra.web.system_view import QueuesView, WorkerView, queues_view, workers_view
from postel.messages import TERMINAL_TYPES, FailureStatus, JobRequest, ids
from postel.messages.job import TENANT_PATTERN, Priority
from postel.messages.limits import MAX_GRAPH_BYTES
from postel.services.gasl.engines.registry import Engine
from postel.services.validation import UnsupportedSchemaError
from pydantic import AfterValidator, BaseModel, ValidationError
from starlette.types import Receive, Scope, Send

# The guard (security.py) checks the token; these only declare it in the OpenAPI document.
_BEARER = HTTPBearer(
    auto_error=False, description="POSTEL_WEB_TOKEN, when the server has one: Bearer <token>"
)
_COOKIE = APIKeyCookie(
    name=COOKIE, auto_error=False, description="the cookie the login form sets (pages)"
)
UNAUTHORIZED = {"description": "missing or wrong token (only when POSTEL_WEB_TOKEN is set)"}


def api_router() -> APIRouter:
    """A router of /api routes, each declaring the token and its 401 (operations.py and
    dead_letters.py have one too)."""
    return APIRouter(
        prefix="/api",
        dependencies=[Depends(_BEARER), Depends(_COOKIE)],
        responses={401: UNAUTHORIZED},
    )


router = api_router()

State = Annotated[WebState, Depends(web_state)]


def _parsed(parse: Callable[[str], object]) -> AfterValidator:
    """A parameter checked by its parser in messages/ids.py (None passes: not given)."""

    def check(value: str | None) -> str | None:
        if value is not None:
            parse(value)
        return value

    return AfterValidator(check)


# Every id, cursor and stream position a route takes, each read by its one parser
# (messages/ids.py): a bad one is a 422 on every route, the API's and the pages'.
JobId = Annotated[
    str,
    Path(
        pattern=ids.JOB_ID_PATTERN,
        description="1-100 letters, digits, '.', '_' or '-'; anything else is 422",
    ),
    _parsed(ids.parse_job_id),
]
EntryId = Annotated[
    str,
    Path(pattern=ids.DEAD_LETTER_ID_PATTERN, description="a dead letter's id"),
    _parsed(ids.parse_dead_letter_id),
]
JobsCursor = Annotated[
    str | None,
    Query(description="The `next` cursor of a page."),
    _parsed(ids.parse_jobs_cursor),
]
DeadCursor = Annotated[
    str | None,
    Query(description="The `next` cursor of a page: a dead letter's id."),
    _parsed(ids.parse_dead_letter_id),
]
KEEPALIVE_S = 15.0
STREAM_RETRY_AFTER_S = 5
NOT_FOUND = {"description": "no such job or dead letter"}
TOO_LARGE = {"description": "the body is over MAX_PAYLOAD_BYTES"}
TOO_MANY_STREAMS = {"description": "POSTEL_WEB_MAX_STREAMS live streams are open already"}
_BLOCK_MS = 1000


class Submitted(BaseModel):
    job_id: str
    url: str


def _field_error(where: list[str], message: str, kind: str) -> HTTPException:
    return HTTPException(422, [{"loc": where, "msg": message, "type": kind}])


@router.post(
    "/jobs",
    status_code=201,
    response_model=Submitted,
    tags=["jobs"],
    responses={409: {"description": "the chosen job id is taken"}, 413: TOO_LARGE},
)
async def submit(
    request: JobRequest,
    state: State,
    job_id: Annotated[
        str | None,
        Query(
            description="Choose the id: the same request again returns the same job; a "
            "different request under a taken id is refused (409)."
        ),
    ] = None,
) -> Submitted:
    """Submit a job: the body is the same JobRequest the ingress stream takes."""
    try:
        new_id = await submit_job(
            state.pool,
            state.events,
            state.jobs,
            request,
            job_id,
            source="web",
            tenant=state.settings.web_tenant,
        )
    except GraphNotFound as exc:
        raise _field_error(["body", "graph"], str(exc), "unknown_graph") from exc
    except UnsupportedSchemaError as exc:
        raise _field_error(["body", "desired_type"], str(exc), "unsupported_schema") from exc
    except ValidationError as exc:
        raise _field_error(["query", "job_id"], _first_error(exc), "invalid_job_id") from exc
    except ReservedJobId as exc:
        raise _field_error(["query", "job_id"], str(exc), "reserved_job_id") from exc
    return Submitted(job_id=new_id, url=f"/jobs/{new_id}")


@router.get("/jobs", response_model=JobsPage, tags=["jobs"])
async def jobs(
    state: State,
    status: JobStatus | None = None,
    stage: str | None = None,
    q: Annotated[str | None, Query(description="Text in the job id or title.")] = None,
    before: JobsCursor = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    failure: Annotated[FailureStatus | None, Query(description="A failed job's kind.")] = None,
    within: Annotated[
        str | None,
        Query(description=f"Only jobs created within this long: {', '.join(TIME_RANGES)}."),
    ] = None,
    priority: Annotated[Priority | None, Query(description="Only jobs of this class.")] = None,
    tenant: Annotated[
        str | None, Query(description="Only this tenant's jobs.", pattern=TENANT_PATTERN)
    ] = None,
    scheduled: Annotated[
        bool | None,
        Query(description="true: only deferred jobs not yet due; false: none of those."),
    ] = None,
) -> JobsPage:
    """Jobs newest first, paged."""
    if within is not None and within not in TIME_RANGES:
        expected = ", ".join(TIME_RANGES)
        raise _field_error(["query", "within"], f"expected one of {expected}", "invalid_range")
    return await list_jobs(
        state.pool,
        state.keyspace,
        status=status,
        stage=stage,
        q=q,
        before=before,
        limit=limit,
        failure=failure,
        within_s=TIME_RANGES[within] if within else None,
        priority=priority,
        tenant=tenant,
        scheduled=scheduled,
    )


@router.get("/jobs/{job_id}", response_model=JobRecord, tags=["jobs"], responses={404: NOT_FOUND})
async def job(job_id: JobId, state: State) -> JobRecord:
    return await state.jobs.get(job_id)


@router.get("/jobs/{job_id}/events", response_model=list[Event], tags=["jobs"])
async def job_events(job_id: JobId, state: State) -> list[Event]:
    await job(job_id, state)
    return await state.events.read(job_id)


@router.get("/jobs/{job_id}/calls", response_model=list[RecordedCall], tags=["jobs"])
async def job_calls(job_id: JobId, state: State) -> list[RecordedCall]:
    """Every model call the job made, as the model received it and what it answered (empty
    when recording is off: POSTEL_RECORD_CALLS=false)."""
    await job(job_id, state)
    return await read_calls(state.pool, state.keyspace, job_id)


@router.get("/jobs/{job_id}/rounds", response_model=list[GaslRound], tags=["jobs"])
async def job_rounds(job_id: JobId, state: State) -> list[GaslRound]:
    """The job's HDT rounds with their full execution records (rows, provenance)."""
    await job(job_id, state)
    return await GaslStateStore(state.pool, state.keyspace, state.settings.job_ttl_s).rounds(job_id)


@router.post(
    "/jobs/{job_id}/cancel",
    response_model=JobRecord,
    tags=["jobs"],
    responses={404: NOT_FOUND, 409: {"description": "the job has already finished"}},
)
async def cancel(job_id: JobId, state: State) -> JobRecord:
    """Cancel a queued or running job (409 if it has finished)."""
    await cancel_job(state.pool, state.events, job_id, by="web")
    return await state.jobs.get(job_id)


@router.get(
    "/jobs/{job_id}/events/stream",
    tags=["jobs"],
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}, 429: TOO_MANY_STREAMS},
)
async def follow_job(
    job_id: JobId,
    request: Request,
    state: State,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """The job's events as Server-Sent Events (`event: hop`, data the event as JSON, id its
    stream id), past and future; `event: end` after the terminal event of a finished job.
    A reconnecting client sends Last-Event-ID and gets what it missed."""
    await job(job_id, state)

    async def ended(event: Event) -> bool:
        return event.type in TERMINAL_TYPES and (await state.jobs.get(job_id)).finished

    stream = state.keyspace.job_events(job_id)
    read = _stream_reader(state, stream, _stream_id(last_event_id or "0-0"))
    return _sse(state, _follow(state, request, stream, read, ended))


@router.get(
    "/events/stream",
    tags=["jobs"],
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}, 429: TOO_MANY_STREAMS},
)
async def follow_all(
    request: Request,
    state: State,
    since: Annotated[
        str | None, Query(description="Start after this event id (default: from now on).")
    ] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """Every job's events as Server-Sent Events (the dashboard's live feed). On a cluster an
    event's id is where every lane's stream stands (their ids joined by commas): a
    reconnecting client's Last-Event-ID resumes each lane where it was."""
    start = last_event_id or since or "$"
    cursor = None if start == "$" else _lane_cursor(start, state)
    return _sse(state, _follow(state, request, "every job's events", _lanes_reader(state, cursor)))


@router.get("/workers", response_model=list[WorkerView], tags=["system"])
async def workers(state: State) -> list[WorkerView]:
    return await workers_view(state.pool, state.keyspace)


@router.get("/queues", response_model=QueuesView, tags=["system"])
async def queues(state: State) -> QueuesView:
    return await queues_view(state.pool, state.keyspace)


def _registry(state: WebState) -> GraphRegistry:
    return GraphRegistry(state.pool, state.keyspace, storage=state.settings.graph_storage())


@router.get("/graphs", response_model=list[GraphInfo], tags=["graphs"])
async def graphs(state: State) -> list[GraphInfo]:
    return await _registry(state).list()


@router.put(
    "/graphs/{name}",
    status_code=201,
    response_model=GraphInfo,
    tags=["graphs"],
    responses={
        413: {
            "description": "the body is over MAX_PAYLOAD_BYTES, or the graph past "
            "a limit (MAX_GRAPH_BYTES unpacked, POSTEL_GRAPH_MAX_*)"
        }
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "A GraphML file; send it gzip-compressed (Content-Encoding: gzip) "
            "when it is larger than the body limit.",
            "content": {"application/xml": {"schema": {"type": "string", "format": "binary"}}},
        }
    },
)
async def add_graph(
    name: str,
    request: Request,
    state: State,
    engine: Annotated[Engine | None, Query(description="default: by the graph's size")] = None,
) -> GraphInfo:
    """Add a graph under NAME, or replace it with a new version. The body is streamed (and
    unpacked) into the store with bounded memory, and refused past a limit."""
    body = await request.body()  # within MAX_PAYLOAD_BYTES (security.py)
    registry = _registry(state)
    limits = registry.storage.limits
    unpacked = min(limits.max_bytes or MAX_GRAPH_BYTES, MAX_GRAPH_BYTES)
    try:
        return await registry.add_stream(
            name,
            io.BytesIO(body),
            source=f"{name}.graphml",
            engine=engine,
            limits=dataclasses.replace(limits, max_bytes=unpacked),
        )
    except InvalidGraphName as exc:
        raise _field_error(["path", "name"], str(exc), "invalid_name") from exc
    except GraphTooLarge as exc:
        raise HTTPException(413, str(exc)) from exc
    except GraphFileError as exc:
        raise _field_error(["body"], str(exc), "invalid_graph") from exc


@router.delete("/graphs/{name}", response_model=GraphInfo, tags=["graphs"])
async def remove_graph(name: str, state: State) -> GraphInfo:
    """Remove graph NAME everywhere (its store; workers drop it on their next use of a
    graph); 404 if there is none. Returns what it was."""
    return await _registry(state).remove(name)


def _lane_cursor(value: str, state: WebState) -> LaneCursor:
    """Stream ids, one per lane (or one for every lane)."""
    try:
        cursor = LaneCursor.parse(value, state.keyspace)
    except ValueError as exc:
        raise _field_error(["query", "since"], str(exc), "invalid_id") from None
    for entry_id in cursor.ids.values():
        _stream_id(entry_id)
    return cursor


Frames = list[tuple[str, Event]]
"""Events read from a stream, each with the SSE id a client resumes after."""


def _lanes_reader(state: WebState, cursor: LaneCursor | None) -> Callable[[], Awaitable[Frames]]:
    """Reads of every lane's events stream, merged (infra/store/lanes.py); from now on if
    `cursor` is None."""

    async def read() -> Frames:
        nonlocal cursor
        if cursor is None:  # from now on: where each lane ends, so nothing slips between
            cursor = await lanes.newest(state.pool, state.keyspace, state.keyspace.events)
        position = LaneCursor(dict(cursor.ids))
        frames: Frames = []
        for entry in await lanes.read_after(
            state.pool, state.keyspace.events, cursor, 200, _BLOCK_MS
        ):
            position.advance([entry])
            frames.append((position.text(), Event.from_entry(entry.id, entry.fields)))
        return frames

    return read


def _stream_reader(state: WebState, stream: str, last: str) -> Callable[[], Awaitable[Frames]]:
    """Reads of one stream after `last` (`$`: from now on)."""

    async def read() -> Frames:
        nonlocal last
        if last == "$":  # from now on: the newest entry's id, so nothing slips between reads
            newest = await state.pool.xrevrange(stream, count=1)
            last = newest[0][0].decode() if newest else "0-0"
        frames: Frames = []
        for _stream, entries in await state.pool.xread({stream: last}, block=_BLOCK_MS, count=200):
            for entry_id, fields in entries:
                event = Event.from_entry(entry_id, fields)
                last = event.id or last
                frames.append((last, event))
        return frames

    return read


def _stream_id(value: str) -> str:
    """A stream entry id (`<ms>-<seq>`), or `$` for from now on."""
    if value == "$":
        return value
    try:
        return ids.parse_stream_id(value)
    except ids.InvalidId as exc:
        raise _field_error(["query", "since"], str(exc), "invalid_id") from None


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"


class _HeldStream(StreamingResponse):
    """A live event stream that holds one of the server's stream slots until it ends."""

    def __init__(self, state: WebState, body: AsyncIterator[str]) -> None:
        super().__init__(
            body,
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
        self._state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._state.streams_open -= 1


def _sse(state: WebState, body: AsyncIterator[str]) -> StreamingResponse:
    """Each live stream holds a Redis connection: past POSTEL_WEB_MAX_STREAMS, 429."""
    cap = state.settings.web_max_streams
    if state.streams_open >= cap:
        raise HTTPException(
            429,
            f"{cap} live event streams are open, the most this server serves "
            "(POSTEL_WEB_MAX_STREAMS); try again later",
            headers={"Retry-After": str(STREAM_RETRY_AFTER_S)},
        )
    state.streams_open += 1
    return _HeldStream(state, body)


async def _follow(
    state: WebState,
    request: Request,
    what: str,
    read: Callable[[], Awaitable[Frames]],
    ended: Callable[[Event], Awaitable[bool]] | None = None,
) -> AsyncIterator[str]:
    """What `read` returns, as SSE frames, until the client goes or `ended` says the last
    event was the end. A Redis outage (a restart, a failover) does not end the stream:
    reading is retried with backoff, a comment line telling the client why it waits, and
    resumes after the last entry read."""
    quiet_s = 0.0
    reconnect = RideOut(f"live stream {what}")
    while not await request.is_disconnected() and not state.stopping.is_set():
        try:
            frames = await read()
        except REDIS_UNAVAILABLE as exc:
            yield f": {UNREACHABLE}\n\n"
            await reconnect.failed(exc)
            continue
        reconnect.succeeded()
        if not frames:
            quiet_s += _BLOCK_MS / 1000
            if quiet_s >= KEEPALIVE_S:
                quiet_s = 0.0
                yield ": keepalive\n\n"
            continue
        quiet_s = 0.0
        for frame_id, event in frames:
            yield f"id: {frame_id}\nevent: hop\ndata: {event.model_dump_json()}\n\n"
            if ended is not None and await _riding_out(reconnect, ended, event):
                yield "event: end\ndata: {}\n\n"
                return
        await asyncio.sleep(0)


async def _riding_out(
    reconnect: RideOut, check: Callable[[Event], Awaitable[bool]], event: Event
) -> bool:
    while True:
        try:
            return await check(event)
        except REDIS_UNAVAILABLE as exc:
            await reconnect.failed(exc)
