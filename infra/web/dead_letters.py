"""Every dead-letter action, in the API and on the dashboard: list them (filtered by worker
and error text, paged), show one with its payload, redrive one or all a filter matches
(infra/runtime/redrive.py), discard one or all. Each form posts to the same operation as
the API and redirects back (303) with a note."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from postel.infra.runtime.redrive import (
    Discarded,
    Redriven,
    RedriveRefused,
    RedriveReport,
    discard,
    discard_matching,
    redrive,
    redrive_matching,
    stays_dead,
)
from postel.infra.store.deadletter import (
    DeadLetter,
    DeadLetterNotFound,
    DeadPage,
    get_dead,
    list_dead,
)
from postel.infra.web.api import NOT_FOUND, DeadCursor, EntryId, api_router
from postel.infra.web.pages import _form as form_fields
from postel.infra.web.pages import _url as url
from postel.infra.web.pages import global_stream, noted, render
from postel.infra.web.security import safe_next
from postel.infra.web.state import WebState, web_state

api = api_router()
pages = APIRouter(include_in_schema=False)
State = Annotated[WebState, Depends(web_state)]


@api.get("/dead", response_model=DeadPage, tags=["dead letters"])
async def dead(
    state: State,
    worker: str | None = None,
    error: Annotated[str | None, Query(description="Text the error contains.")] = None,
    before: DeadCursor = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> DeadPage:
    """Dead letters newest first, paged."""
    return await list_dead(
        state.pool, state.keyspace, before=before, limit=limit, worker=worker, error=error
    )


@api.get(
    "/dead/{entry_id}", response_model=DeadLetter, tags=["dead letters"], responses={404: NOT_FOUND}
)
async def dead_letter(entry_id: EntryId, state: State) -> DeadLetter:
    return await get_dead(state.pool, state.keyspace, entry_id)


@api.post(
    "/dead/{entry_id}/redrive",
    response_model=Redriven,
    tags=["dead letters"],
    responses={404: NOT_FOUND, 409: {"description": "it stays dead; `detail` says why"}},
)
async def redrive_one(entry_id: EntryId, state: State) -> Redriven:
    """Send a dead letter back as a new attempt (409 with the reason if it stays dead)."""
    return await redrive(state.pool, state.events, entry_id, by="web")


@api.post("/dead/redrive", response_model=RedriveReport, tags=["dead letters"])
async def redrive_all(
    state: State, worker: str | None = None, error: str | None = None
) -> RedriveReport:
    """Redrive every dead letter the filters match; the refused ones stay, with reasons."""
    return await redrive_matching(state.pool, state.events, by="web", worker=worker, error=error)


@api.delete(
    "/dead/{entry_id}",
    response_model=Discarded,
    tags=["dead letters"],
    responses={404: {"description": "no such dead letter"}},
)
async def discard_one(entry_id: EntryId, state: State) -> Discarded:
    """Drop a dead letter for good, recorded as a `discarded` event."""
    return await discard(state.pool, state.events, entry_id, by="web")


@api.post("/dead/discard", response_model=Discarded, tags=["dead letters"])
async def discard_all(
    state: State, worker: str | None = None, error: str | None = None
) -> Discarded:
    """Discard every dead letter the filters match (all of them without a filter)."""
    return await discard_matching(state.pool, state.events, by="web", worker=worker, error=error)


@pages.get("/dead", response_class=HTMLResponse)
async def dead_page(
    request: Request,
    worker: str | None = None,
    error: str | None = None,
    before: DeadCursor = None,
) -> HTMLResponse:
    state = web_state(request)
    error = (error or "").strip() or None
    page = await list_dead(state.pool, state.keyspace, before=before, worker=worker, error=error)
    filters = {"worker": worker, "error": error}
    return render(
        request,
        "dead",
        page=page,
        stays_dead={d.id: await stays_dead(state.pool, state.keyspace, d) for d in page.items},
        filters=filters,
        live_src=url("/dead", **filters, before=before, fragment="1"),
        next_url=url("/dead", **filters, before=page.next) if page.next else None,
        first_url=url("/dead", **filters) if before else None,
        here=url("/dead", **filters, before=before),
        stream=await global_stream(state),
    )


@pages.post("/dead/{entry_id}/redrive")
async def redrive_from_page(request: Request, entry_id: EntryId) -> RedirectResponse:
    state = web_state(request)
    back = safe_next((await form_fields(request)).get("back")).split("?")[0]
    try:
        done = await redrive(state.pool, state.events, entry_id, by="web")
    except DeadLetterNotFound:
        return RedirectResponse(noted(back, "no-such-letter"), 303)
    except RedriveRefused:
        return RedirectResponse(noted(back, "stays-dead"), 303)
    return RedirectResponse(noted(back, "redriven", queue=done.worker), 303)


@pages.post("/dead/redrive")
async def redrive_all_from_page(request: Request) -> RedirectResponse:
    state = web_state(request)
    form = await form_fields(request)
    worker, error = form.get("worker") or None, form.get("error") or None
    report = await redrive_matching(state.pool, state.events, by="web", worker=worker, error=error)
    counts = {"done": len(report.redriven), "refused": len(report.refused)}
    back = url("/dead", worker=worker, error=error)
    return RedirectResponse(noted(back, "redriven-many", **counts), 303)


@pages.post("/dead/{entry_id}/discard")
async def discard_from_page(request: Request, entry_id: EntryId) -> RedirectResponse:
    state = web_state(request)
    back = safe_next((await form_fields(request)).get("back")).split("?")[0]
    try:
        await discard(state.pool, state.events, entry_id, by="web")
    except DeadLetterNotFound:
        return RedirectResponse(noted(back, "no-such-letter"), 303)
    return RedirectResponse(noted(back, "discarded"), 303)


@pages.post("/dead/discard")
async def discard_all_from_page(request: Request) -> RedirectResponse:
    state = web_state(request)
    form = await form_fields(request)
    worker, error = form.get("worker") or None, form.get("error") or None
    done = await discard_matching(state.pool, state.events, by="web", worker=worker, error=error)
    back = url("/dead", worker=worker, error=error)
    return RedirectResponse(noted(back, "discarded-many", done=len(done.discarded)), 303)
