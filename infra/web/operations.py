"""What an operator does beyond one job or one dead letter, in the API and as the dashboard's
forms: discard dead letters (one, or all a filter matches). Each form posts to the same
operation as the API and redirects back (303) with a note."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import RedirectResponse
from postel.infra.runtime.redrive import Discarded, discard, discard_matching
from postel.infra.store.deadletter import DeadLetterNotFound
from postel.infra.web.pages import _form as form_fields
from postel.infra.web.pages import _url as url
from postel.infra.web.security import safe_next
from postel.infra.web.state import WebState, web_state

api = APIRouter(prefix="/api")
pages = APIRouter(include_in_schema=False)
State = Annotated[WebState, Depends(web_state)]


@api.delete(
    "/dead/{entry_id}",
    response_model=Discarded,
    tags=["dead letters"],
    responses={404: {"description": "no such dead letter"}},
)
async def discard_one(entry_id: str, state: State) -> Discarded:
    """Drop a dead letter for good, recorded as a `discarded` event."""
    try:
        return await discard(state.pool, state.events, entry_id, by="web")
    except DeadLetterNotFound as exc:
        raise HTTPException(404, str(exc)) from exc


@api.post("/dead/discard", response_model=Discarded, tags=["dead letters"])
async def discard_all(
    state: State, worker: str | None = None, error: str | None = None
) -> Discarded:
    """Discard every dead letter the filters match (all of them without a filter)."""
    return await discard_matching(state.pool, state.events, by="web", worker=worker, error=error)


@pages.post("/dead/{entry_id}/discard")
async def discard_from_page(request: Request, entry_id: str) -> RedirectResponse:
    state = web_state(request)
    back = safe_next((await form_fields(request)).get("back")).split("?")[0]
    try:
        await discard(state.pool, state.events, entry_id, by="web")
        note = f"discarded dead letter {entry_id}"
    except DeadLetterNotFound as exc:
        note = str(exc)
    return RedirectResponse(url(back, note=note), 303)


@pages.post("/dead/discard")
async def discard_all_from_page(request: Request) -> RedirectResponse:
    state = web_state(request)
    form = await form_fields(request)
    worker, error = form.get("worker") or None, form.get("error") or None
    done = await discard_matching(state.pool, state.events, by="web", worker=worker, error=error)
    note = f"discarded {len(done.discarded)} dead letter{'' if len(done.discarded) == 1 else 's'}"
    return RedirectResponse(url("/dead", worker=worker, error=error, note=note), 303)
