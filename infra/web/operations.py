"""What an operator does to jobs beyond following one, in the API and as the dashboard's
forms: requeue a failed job (a clone under a new id), cancel many jobs at once (dead letters
have their own room, dead_letters.py). Each form posts to the same operation as the API and
redirects back (303) with a note."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qsl

from fastapi import APIRouter, Depends, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse
from postel.infra.runtime.cancel import JobAlreadyFinished, cancel_job
from postel.infra.runtime.requeue import (
    IDEMPOTENCY_KEY_CHARS,
    Requeued,
    RequeueLive,
    RequeueRefused,
    requeue_job,
)
from postel.infra.store.graphs import GraphNotFound
from postel.infra.store.jobs import JobNotFound
from postel.infra.web.api import JobId, api_router
from postel.infra.web.charts import chart_window
from postel.infra.web.pages import TEMPLATES, noted
from postel.infra.web.pages import _form as form_fields
from postel.infra.web.security import safe_next
from postel.infra.web.state import WebState, web_state
from postel.messages import JOB_ID_PATTERN
from pydantic import BaseModel, Field, ValidationError

api = api_router()
pages = APIRouter(include_in_schema=False)
State = Annotated[WebState, Depends(web_state)]
CANCEL_AT_ONCE = 200
"""Jobs one cancel request may name."""
IdempotencyKey = Annotated[
    str | None,
    Header(
        max_length=IDEMPOTENCY_KEY_CHARS,
        description="The same key again answers the same requeue (a retry submits nothing).",
    ),
]


class CancelMany(BaseModel):
    job_ids: list[Annotated[str, Field(pattern=JOB_ID_PATTERN)]] = Field(
        min_length=1, max_length=CANCEL_AT_ONCE
    )


class CancelReport(BaseModel):
    """The jobs cancelled, and those that were not with the reason (finished, unknown)."""

    cancelled: list[str]
    refused: dict[str, str]


async def cancel_many(state: WebState, job_ids: list[str]) -> CancelReport:
    report = CancelReport(cancelled=[], refused={})
    for job_id in dict.fromkeys(job_ids):
        try:
            await cancel_job(state.pool, state.events, job_id, by="web")
            report.cancelled.append(job_id)
        except (JobNotFound, JobAlreadyFinished) as exc:
            report.refused[job_id] = str(exc)
    return report


@api.post("/jobs/cancel", response_model=CancelReport, tags=["jobs"])
async def cancel_jobs(body: CancelMany, state: State) -> CancelReport:
    """Cancel every job named (at most 200); finished or unknown ones are listed with why."""
    return await cancel_many(state, body.job_ids)


@api.post(
    "/jobs/{job_id}/requeue",
    response_model=Requeued,
    status_code=201,
    tags=["jobs"],
    responses={
        404: {"description": "no such job, or its graph is gone"},
        409: {"description": "not a failed job, or one with a live requeue; `detail` says why"},
    },
)
async def requeue(job_id: JobId, state: State, idempotency_key: IdempotencyKey = None) -> Requeued:
    """Run a failed job's request again under a new id; the records link to each other.
    While that requeue is queued or running, another is refused (409); the same
    Idempotency-Key again answers the same requeue."""
    return await requeue_job(
        state.pool, state.events, state.jobs, job_id, by="web", idempotency_key=idempotency_key
    )


@pages.post("/jobs/cancel")
async def cancel_many_from_page(request: Request) -> RedirectResponse:
    state = web_state(request)
    body = (await request.body()).decode(errors="replace")
    picked = [value for name, value in parse_qsl(body) if name == "job" and value]
    back = safe_next(dict(parse_qsl(body)).get("back"))
    if not picked:
        return RedirectResponse(noted(back.split("?")[0], "none-picked"), 303)
    try:
        chosen = CancelMany(job_ids=picked[:CANCEL_AT_ONCE])
    except ValidationError as exc:  # the form's field is `job`, one per job
        raise RequestValidationError(
            [{**error, "loc": ("body", "job", *error["loc"][1:])} for error in exc.errors()]
        ) from None
    report = await cancel_many(state, chosen.job_ids)
    done, refused = len(report.cancelled), len(report.refused)
    return RedirectResponse(
        noted(back.split("?")[0], "cancelled-many", done=done, refused=refused), 303
    )


@pages.post("/jobs/{job_id}/requeue")
async def requeue_from_page(request: Request, job_id: JobId) -> RedirectResponse:
    state = web_state(request)
    key = (await form_fields(request)).get("idempotency_key") or None
    if key is not None and len(key) > IDEMPOTENCY_KEY_CHARS:
        too_long = f"String should have at most {IDEMPOTENCY_KEY_CHARS} characters"
        raise RequestValidationError(
            [{"loc": ("body", "idempotency_key"), "msg": too_long, "type": "string_too_long"}]
        )
    try:
        done = await requeue_job(
            state.pool, state.events, state.jobs, job_id, by="web", idempotency_key=key
        )
    except JobNotFound:
        return RedirectResponse(noted(f"/jobs/{job_id}", "no-such-job"), 303)
    except GraphNotFound:
        return RedirectResponse(noted(f"/jobs/{job_id}", "graph-gone"), 303)
    except RequeueLive:
        return RedirectResponse(noted(f"/jobs/{job_id}", "requeue-live"), 303)
    except RequeueRefused:
        return RedirectResponse(noted(f"/jobs/{job_id}", "requeue-refused"), 303)
    return RedirectResponse(noted(done.url, "requeued"), 303)


@pages.get("/charts", response_class=HTMLResponse)
async def charts_fragment(request: Request) -> HTMLResponse:
    """The jobs page's charts alone, for the script to refresh."""
    state = web_state(request)
    window = chart_window(request.app.state)
    html = TEMPLATES.get_template("_charts.html").render(
        charts=await window.read(state.pool, state.keyspace)
    )
    return HTMLResponse(html)
