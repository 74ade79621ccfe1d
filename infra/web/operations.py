"""What an operator does to jobs beyond following one, in the API and as the dashboard's
forms: requeue a failed job (a clone under a new id), cancel many jobs at once (dead letters
have their own room, dead_letters.py). Each form posts to the same operation as the API and
redirects back (303) with a note."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qsl

from fastapi import APIRouter, Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse
from postel.infra.runtime.cancel import JobAlreadyFinished, cancel_job
from postel.infra.runtime.requeue import Requeued, RequeueRefused, requeue_job
from postel.infra.store.graphs import GraphNotFound
from postel.infra.store.jobs import JobNotFound
from postel.infra.web.api import JobId, api_router
from postel.infra.web.charts import chart_window
from postel.infra.web.pages import TEMPLATES
from postel.infra.web.pages import _url as url
from postel.infra.web.security import safe_next
from postel.infra.web.state import WebState, web_state
from postel.messages import JOB_ID_PATTERN
from pydantic import BaseModel, Field, ValidationError

api = api_router()
pages = APIRouter(include_in_schema=False)
State = Annotated[WebState, Depends(web_state)]
CANCEL_AT_ONCE = 200
"""Jobs one cancel request may name."""


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
        409: {"description": "not a failed job; `detail` says why"},
    },
)
async def requeue(job_id: JobId, state: State) -> Requeued:
    """Run a failed job's request again under a new id; the records link to each other."""
    return await requeue_job(state.pool, state.events, state.jobs, job_id, by="web")


@pages.post("/jobs/cancel")
async def cancel_many_from_page(request: Request) -> RedirectResponse:
    state = web_state(request)
    body = (await request.body()).decode(errors="replace")
    picked = [value for name, value in parse_qsl(body) if name == "job" and value]
    back = safe_next(dict(parse_qsl(body)).get("back"))
    if not picked:
        return RedirectResponse(url(back.split("?")[0], note="no job was picked"), 303)
    try:
        chosen = CancelMany(job_ids=picked[:CANCEL_AT_ONCE])
    except ValidationError as exc:  # the form's field is `job`, one per job
        raise RequestValidationError(
            [{**error, "loc": ("body", "job", *error["loc"][1:])} for error in exc.errors()]
        ) from None
    report = await cancel_many(state, chosen.job_ids)
    note = f"cancelled {len(report.cancelled)}"
    if report.refused:
        note += f", not cancelled {len(report.refused)}: " + "; ".join(
            list(report.refused.values())[:3]
        )
    return RedirectResponse(url(back.split("?")[0], note=note), 303)


@pages.post("/jobs/{job_id}/requeue")
async def requeue_from_page(request: Request, job_id: JobId) -> RedirectResponse:
    state = web_state(request)
    try:
        done = await requeue_job(state.pool, state.events, state.jobs, job_id, by="web")
    except (JobNotFound, RequeueRefused, GraphNotFound) as exc:
        return RedirectResponse(url(f"/jobs/{job_id}", note=str(exc)), 303)
    return RedirectResponse(url(done.url, note=f"requeue of job {job_id}"), 303)


@pages.get("/charts", response_class=HTMLResponse)
async def charts_fragment(request: Request) -> HTMLResponse:
    """The jobs page's charts alone, for the script to refresh."""
    state = web_state(request)
    window = chart_window(request.app.state)
    html = TEMPLATES.get_template("_charts.html").render(
        charts=await window.read(state.pool, state.keyspace)
    )
    return HTMLResponse(html)
