"""The dashboard: server-rendered pages (Jinja2 templates in templates/) and one small
script (static/app.js) that keeps them live. Each page's changing part is also served alone
as a fragment (`?fragment=1`); the script re-fetches it when the page's Server-Sent Events
stream reports an event, so the page updates without reloading and works, unrefreshed,
without JavaScript. Forms post to the same operations as the API (cancel here; requeue and
cancel many in operations.py; the dead letters' in dead_letters.py) and redirect back (303)
with a note: `?note=<key>` of NOTES, the server's own words, never text from the link.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from postel.infra.runtime.cancel import JobAlreadyFinished, cancel_job
from postel.infra.runtime.requeue import live_requeue
from postel.infra.runtime.settings import WORKER_NAMES
from postel.infra.store import lanes
from postel.infra.store.graphs import GraphRegistry
from postel.infra.store.jobs import JobNotFound
from postel.infra.web.api import JobId, JobsCursor
from postel.infra.web.charts import chart_window
from postel.infra.web.job_list import FAILURES, JOB_STATUSES, STAGES, TIME_RANGES, list_jobs
from postel.infra.web.job_story import job_story
from postel.infra.web.security import safe_next
from postel.infra.web.state import WebState, web_state
from postel.infra.web.system_view import queue_page, queues_view, workers_view
from postel.messages import ids, utc_now
from postel.messages.job import PRIORITIES, TENANT_PATTERN
from postel.services.generation.markdown import said

HERE = Path(__file__).parent
router = APIRouter(include_in_schema=False)
GLOBAL_STREAM = "/api/events/stream"
EVENTS_SHOWN = 300  # rows of the raw events table on a job's page; the API has them all


async def global_stream(state: WebState) -> str:
    """The live feed from the newest event at render time: nothing that happens between
    rendering the page and the script connecting is missed."""
    return _url(
        GLOBAL_STREAM,
        since=(await lanes.newest(state.pool, state.keyspace, state.keyspace.events)).text(),
    )


def _ms(value: float) -> str:
    if value < 1000:
        return f"{value:.0f} ms" if value >= 10 else f"{value:.1f} ms"
    seconds = value / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {int(seconds % 60)} s"


def _ago(value: datetime | None) -> str:
    if value is None:
        return ""
    seconds = (utc_now() - value).total_seconds()
    if seconds < 1:
        return "just now"
    if seconds < 60:
        return f"{seconds:.0f} s ago"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min ago"
    if seconds < 86400:
        return f"{seconds // 3600:.0f} h ago"
    return f"{seconds // 86400:.0f} d ago"


def _clock(value: datetime | None) -> str:
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S") if value else ""


def _clock_hm(value: datetime) -> str:
    return value.astimezone().strftime("%H:%M")


def _clock_hms(value: datetime) -> str:
    return value.astimezone().strftime("%H:%M:%S")


TEXT_SHOWN = 8_000
"""Characters of one prompt or answer a job's page shows; the API has the whole text."""


ID_SHOWN = 14
"""Characters of a job id a list shows: a longer one as its head and tail."""


def _short_id(value: str) -> str:
    """A long id as its head and tail (`6d6f71b…c3e1f0`): what tells two ids apart is often
    their end (`ingress-<ms>-<seq>`); the list's cell has the whole id as its tooltip."""
    return value if len(value) <= ID_SHOWN else f"{value[:7]}…{value[-(ID_SHOWN - 8) :]}"


def _clip(text: str) -> str:
    if len(text) <= TEXT_SHOWN:
        return text
    return f"{text[:TEXT_SHOWN]}\n… {len(text) - TEXT_SHOWN:,} more characters (the API has them)"


def _age_ms(value: datetime) -> float:
    return max((utc_now() - value).total_seconds() * 1000, 0.0)


def _until_ms(value: datetime) -> float:
    return max((value - utc_now()).total_seconds() * 1000, 0.0)


def _took(started: datetime, ended: datetime | None) -> str:
    return _ms(((ended or utc_now()) - started).total_seconds() * 1000)


BIDI_CONTROLS = "".join(map(chr, [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]))
"""Embeddings, overrides and isolates (U+202A..U+202E, U+2066..U+2069): raw in a page they
reorder what follows them, so a prompt could make the page show text it does not hold."""
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")
_SHOWN_BIDI = str.maketrans({c: f"<U+{ord(c):04X}>" for c in BIDI_CONTROLS})
_SHOWN_BIDI_MARKUP = str.maketrans({c: f"&lt;U+{ord(c):04X}&gt;" for c in BIDI_CONTROLS})


def _shown(value: Any) -> Any:
    """Every value a template writes, with each bidi control shown as `<U+202E>` instead of
    acting (plain text is autoescaped afterwards; markup gets the escaped form)."""
    if not isinstance(value, str) or _BIDI.search(value) is None:
        return value
    if isinstance(value, Markup):
        return Markup(str(value).translate(_SHOWN_BIDI_MARKUP))
    return value.translate(_SHOWN_BIDI)


TEMPLATES = Environment(
    loader=FileSystemLoader(HERE / "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
    finalize=_shown,
)
TEMPLATES.filters.update(
    ms=_ms,
    ago=_ago,
    clock=_clock,
    clip=_clip,
    short_id=_short_id,
    age_ms=_age_ms,
    until_ms=_until_ms,
    clock_hm=_clock_hm,
    clock_hms=_clock_hms,
    job_of=ids.job_of,
    said=said,
    message_key=ids.key_of,
)
TEMPLATES.globals.update(
    now=utc_now,
    took=_took,
    statuses=JOB_STATUSES,
    stages=STAGES,
    kinds=WORKER_NAMES,
    failures=FAILURES,
    time_ranges=TIME_RANGES,
    priorities=PRIORITIES,
)


NOTES: dict[str, str] = {
    "cancelled": "cancelled",
    "no-such-job": "no such job (it expired, or was never submitted)",
    "finished": "the job had finished already: nothing to cancel",
    "none-picked": "no job was picked",
    "cancelled-many": "cancelled {done}, not cancelled {refused} (finished, or unknown)",
    "requeued": "requeue of the failed job named below: its request runs again as this job",
    "requeue-refused": "not requeued: only a failed job that kept its request is requeued",
    "requeue-live": "not requeued: this job has a live requeue already (named below)",
    "graph-gone": "not requeued: the job's graph is gone (add it again first)",
    "redriven": "redriven: the message is back on the {queue} queue",
    "no-such-letter": "no such dead letter (redriven or discarded meanwhile)",
    "stays-dead": "the dead letter stays dead: its row says why",
    "redriven-many": "redriven {done}, stayed dead {refused} (their rows say why)",
    "discarded": "discarded dead letter",
    "discarded-many": "discarded {done} dead letter(s)",
}
"""What a form's redirect may say on the page it lands on (`?note=<key>`): a count in one is a
number from the link (`done`, `refused`), a queue one of the worker names."""
_NOTE_COUNTS = ("done", "refused")


def note_of(query: Mapping[str, str]) -> str | None:
    """The note a page's link names, in the server's words; None for none or an unknown one."""
    words = NOTES.get(query.get("note", ""))
    if words is None:
        return None
    counts = {name: query.get(name, "") for name in _NOTE_COUNTS}
    queue = query.get("queue", "")
    return words.format(
        **{name: int(v) if v.isdigit() and len(v) < 10 else 0 for name, v in counts.items()},
        queue=queue if queue in (*WORKER_NAMES, "ingress") else "its",
    )


def noted(path: str, note: str, **values: str | int) -> str:
    """`path` with one of NOTES and its values."""
    assert note in NOTES, note
    query = urlencode({"note": note, **{name: str(value) for name, value in values.items()}})
    return f"{path}{'&' if '?' in path else '?'}{query}"


def render(request: Request, name: str, **context: Any) -> HTMLResponse:
    """The page, or only its live part (`?fragment=1`) for the script to swap in."""
    state: WebState = web_state(request)
    fragment = request.query_params.get("fragment") == "1"
    template = TEMPLATES.get_template(f"_{name}.html" if fragment else f"{name}.html")
    html = template.render(
        request=request,
        section=name,
        token_required=state.token_required,
        note=note_of(request.query_params),
        **context,
    )
    return HTMLResponse(html)


def _url(path: str, **query: str | None) -> str:
    kept = {k: v for k, v in query.items() if v}
    return path + (f"?{urlencode(kept)}" if kept else "")


async def _form(request: Request) -> dict[str, str]:
    return dict(parse_qsl((await request.body()).decode(errors="replace")))


@router.get("/", response_class=HTMLResponse)
@router.get("/jobs", response_class=HTMLResponse)
async def jobs_page(
    request: Request,
    status: str | None = None,
    stage: str | None = None,
    q: str | None = None,
    before: JobsCursor = None,
    failure: str | None = None,
    within: str | None = None,
    priority: str | None = None,
    tenant: str | None = None,
    scheduled: str | None = None,
) -> HTMLResponse:
    state = web_state(request)
    q = (q or "").strip() or None
    failure = failure if failure in FAILURES else None
    within = within if within in TIME_RANGES else None
    priority = priority if priority in PRIORITIES else None
    tenant = tenant if tenant and re.match(TENANT_PATTERN, tenant) else None
    scheduled = scheduled if scheduled == "yes" else None
    chosen = {
        "failure": failure,
        "within_s": TIME_RANGES[within] if within else None,
        "priority": priority,
        "tenant": tenant,
        "scheduled": True if scheduled else None,
    }
    page = await list_jobs(
        state.pool, state.keyspace, status=status, stage=stage, q=q, before=before, **chosen
    )
    filters = {
        "status": status,
        "stage": stage,
        "q": q,
        "failure": failure,
        "within": within,
        "priority": priority,
        "tenant": tenant,
        "scheduled": scheduled,
    }
    return render(
        request,
        "jobs",
        page=page,
        filters=filters,
        here=_url("/jobs", **filters, before=before),
        charts=await chart_window(request.app.state).read(state.pool, state.keyspace),
        live_src=_url("/jobs", **filters, before=before, fragment="1"),
        next_url=_url("/jobs", **filters, before=page.next) if page.next else None,
        first_url=_url("/jobs", **filters) if before else None,
        stream=await global_stream(state),
    )


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
async def job_page(request: Request, job_id: JobId) -> Response:
    state = web_state(request)
    try:
        story = await job_story(state.pool, state.jobs, state.events, job_id)
    except JobNotFound:
        response = render(request, "missing", what=f"job {job_id}")
        response.status_code = 404
        return response
    return render(
        request,
        "job",
        story=story,
        job=story.record,
        requeue_key=uuid.uuid4().hex,
        live_requeue=await live_requeue(state.jobs, story.record),
        events_shown=EVENTS_SHOWN,
        live_src=_url(f"/jobs/{job_id}", fragment="1"),
        stream=f"/api/jobs/{job_id}/events/stream",
    )


@router.post("/jobs/{job_id}/cancel")
async def cancel_from_page(request: Request, job_id: JobId) -> RedirectResponse:
    state = web_state(request)
    try:
        await cancel_job(state.pool, state.events, job_id, by="web")
        note = "cancelled"
    except JobNotFound:
        note = "no-such-job"
    except JobAlreadyFinished:
        note = "finished"
    return RedirectResponse(noted(f"/jobs/{job_id}", note), 303)


@router.get("/workers", response_class=HTMLResponse)
async def workers_page(request: Request) -> HTMLResponse:
    state = web_state(request)
    workers = await workers_view(state.pool, state.keyspace)
    per_kind = {kind: [w for w in workers if kind in w.workers] for kind in WORKER_NAMES}
    per_kind["ingress"] = [w for w in workers if w.ingress]
    return render(
        request,
        "workers",
        workers=workers,
        per_kind=per_kind,
        live_src="/workers?fragment=1",
        stream=await global_stream(state),
        refresh_ms=5000,
    )


@router.get("/queues", response_class=HTMLResponse)
async def queues_page(request: Request, worker: str | None = None, offset: int = 0) -> HTMLResponse:
    state = web_state(request)
    worker = worker if worker in WORKER_NAMES else None
    shown = await queue_page(state.pool, state.keyspace, worker, offset) if worker else None
    return render(
        request,
        "queues",
        view=await queues_view(state.pool, state.keyspace),
        shown=shown,
        live_src=_url("/queues", worker=worker, offset=str(offset or ""), fragment="1"),
        stream=await global_stream(state),
        refresh_ms=5000,
    )


@router.get("/graphs", response_class=HTMLResponse)
async def graphs_page(request: Request) -> HTMLResponse:
    state = web_state(request)
    return render(request, "graphs", graphs=await GraphRegistry(state.pool, state.keyspace).list())


@router.get("/api/docs", response_class=HTMLResponse)
async def api_docs(request: Request) -> HTMLResponse:
    """The OpenAPI document as a page: every operation with its parameters, body and
    answers, rendered here (no script, nothing fetched from elsewhere)."""
    document = request.app.openapi()
    operations = [
        {"method": method.upper(), "path": path, **operation}
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    ]
    return render(request, "api_docs", document=document, operations=operations)


@router.get("/login", response_class=HTMLResponse)
async def login_page(
    request: Request, next: str | None = None, wrong: str | None = None
) -> Response:
    if not web_state(request).token_required:
        return RedirectResponse(safe_next(next), 303)
    css = (HERE / "static" / "style.css").read_text()
    return render(request, "login", next=safe_next(next), wrong=wrong == "1", css=css)


@router.post("/login")
async def login(request: Request) -> Response:
    state = web_state(request)
    form = await _form(request)
    target = safe_next(form.get("next"))
    if not state.token_required:
        return RedirectResponse(target, 303)
    guard = request.app.state.guard
    checked = guard.login(request.scope, form.get("token"))
    if isinstance(checked, Response):
        return checked
    if not checked:
        return RedirectResponse(_url("/login", next=target, wrong="1"), 303)
    response = RedirectResponse(target, 303)
    guard.set_cookie(response)
    return response
