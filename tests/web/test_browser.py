"""The dashboard in a real headless Chromium (Debian's `chromium`, driven by Playwright):
a job submitted through the API appears and completes live, its page shows its hops,
rounds, iterations and repairs, a job is cancelled and a dead letter redriven from the
pages. Every page may load only from the server itself (no CDN). Screenshots are saved
under the test run's base temporary directory, `screenshots/` (on several xdist workers, the
worker's: `popen-gwN/screenshots/`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, Page, expect
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.settings import QueueSettings, Settings
from postel.infra.web.server import WebServer
from support.recording import Breakable, Recorder
from support.story_model import MAX_TOKENS, QUESTION

LIVE_S = 60_000  # ms Playwright waits for a live update


@pytest.fixture
async def page(browser: Browser, web: WebServer) -> AsyncIterator[Page]:
    """A tab that fails the test if the page loads anything from elsewhere, or logs an
    error (a script error, a refused resource)."""
    context = await browser.new_context(viewport={"width": 1360, "height": 900})
    tab = await context.new_page()
    foreign: list[str] = []
    errors: list[str] = []
    origin = web.url.rstrip("/")
    tab.on("request", lambda r: None if r.url.startswith(origin) else foreign.append(r.url))
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.on("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
    yield tab
    await context.close()
    assert foreign == [], "everything comes from the server itself"
    assert errors == []


async def test_a_job_appears_completes_live_and_its_page_tells_its_story(
    story_system: LocalSystem,
    web: WebServer,
    api: httpx.AsyncClient,
    page: Page,
    browser: Browser,
    screenshots: Path,
) -> None:
    await page.goto(web.url + "jobs")
    await expect(page.locator("#live-indicator")).to_have_attribute("data-state", "live")
    await page.evaluate("window.loadedOnce = true")
    submitted = await api.post(
        "/api/jobs",
        json={
            "prompt": QUESTION,
            "desired_type": "document",
            "graph": "mmwr",
            "options": {"max_tokens": MAX_TOKENS},
        },
    )
    job_id = submitted.json()["job_id"]
    row = page.locator(f'tr[data-job="{job_id}"]')
    await expect(row).to_be_visible(timeout=LIVE_S)
    # the job's own page, opened while it runs, follows it too
    job_tab = await (await browser.new_context(viewport={"width": 1360, "height": 900})).new_page()
    await job_tab.goto(web.url + f"jobs/{job_id}")
    await expect(row).to_have_attribute("data-status", "completed", timeout=LIVE_S)
    await expect(row.locator(".pill")).to_have_text("completed")
    assert await page.evaluate("window.loadedOnce") is True, "updated without reloading"
    await page.screenshot(path=str(screenshots / "jobs.png"))

    await expect(job_tab.locator("#job-status")).to_have_text("completed", timeout=LIVE_S)
    assert "running for" not in await job_tab.locator(".facts").inner_text()
    await job_tab.context.close()

    await row.locator("a").click()
    await expect(page.locator("#job-heading")).to_contain_text(job_id)
    hops = page.locator(".timeline .row.hop")
    workers = await hops.evaluate_all("rows => rows.map(r => r.dataset.worker)")
    assert {"intent", "planner", "gasl", "generator", "validator"} <= set(workers)
    assert await page.locator(".timeline .bar.run.gasl").count() == 2
    rounds = page.locator("#rounds .round")
    await expect(rounds).to_have_count(2)
    first, second = rounds.nth(0), rounds.nth(1)
    await expect(first.locator(".commands .pill")).to_have_text(["error"])
    await expect(first.locator(".decision")).to_contain_text("refine")
    await expect(second.locator(".commands tbody tr")).to_have_count(6)
    await expect(second.locator(".commands .pill").nth(2)).to_have_text("success")
    await expect(second.locator(".commands td.num").nth(2)).to_have_text("371")
    await expect(second.locator(".decision")).to_contain_text("complete")
    await second.locator("details summary").first.click()
    await expect(second.locator("details .sources code").first).to_be_visible()
    iterations = page.locator("#iterations tbody tr")
    await expect(iterations).to_have_count(3)
    await expect(iterations.nth(1)).to_contain_text("length")
    await expect(iterations.nth(1)).to_contain_text("continues")
    verdicts = page.locator("#verdicts tbody tr")
    await expect(verdicts.locator(".pill")).to_have_text(["repair", "accepted"])
    await expect(verdicts.nth(0)).to_contain_text("at least 3 sections")
    await expect(page.locator("#result h1")).to_have_text("Who writes together in the MMWR reports")
    calls = page.locator("#calls tr.call")
    llm_calls = int(await page.locator("#llm-calls").inner_text())
    await expect(calls).to_have_count(llm_calls)
    stages = await calls.evaluate_all("rows => rows.map(r => r.dataset.stage)")
    assert {"intent", "planner", "generator"} <= set(stages)
    await page.locator("#calls details summary").first.click()
    await expect(page.locator("#calls details pre.answer").first).to_contain_text(
        "detectedLanguage"
    )
    # in one step: the live part may be swapped between a locator's lookup and its action
    await page.evaluate("document.getElementById('calls').scrollIntoView()")
    await page.screenshot(path=str(screenshots / "calls.png"))
    await page.evaluate("window.scrollTo(0, 0)")
    await page.screenshot(path=str(screenshots / "job.png"))
    await page.screenshot(path=str(screenshots / "job-full.png"), full_page=True)
    await page.set_viewport_size({"width": 1360, "height": 1640})
    await page.screenshot(path=str(screenshots / "dashboard.png"))  # docs/OPERATIONS.md's picture
    for name in ("workers", "queues", "graphs"):
        await page.goto(web.url + name)
        await page.screenshot(path=str(screenshots / f"{name}.png"))
    await expect(page.locator("#graphs-table")).to_contain_text("mmwr")


async def test_cancel_a_job_from_its_page(
    redis_url: str,
    settings: Settings,
    web: WebServer,
    api: httpx.AsyncClient,
    page: Page,
    screenshots: Path,
) -> None:
    recorder = Recorder(held="planner")
    async with LocalSystem(settings, redis_url=redis_url, specs=recorder.specs()):
        job_id = (await api.post("/api/jobs", json={"prompt": "stop me"})).json()["job_id"]
        async with asyncio.timeout(20):
            await recorder.entered.wait()
        await page.goto(web.url + f"jobs/{job_id}")
        await expect(page.locator("#job-status")).to_have_text("running")
        await page.locator("#cancel").click()
        await expect(page.locator("#job-status")).to_have_text("failed · cancelled")
        await expect(page.locator("#note")).to_have_text("cancelled")
        await expect(page.locator("#failure .error")).to_have_text("cancelled by web")
        await expect(page.locator("#cancel")).to_have_count(0)
        recorder.release.set()
        # the planner's outcome, refused after the job's end, is recorded after it: reload

        async def dropped_recorded() -> bool:
            events = (await api.get(f"/api/jobs/{job_id}/events")).json()
            return any(event["status"] == "dropped" for event in events)

        async with asyncio.timeout(20):
            while not await dropped_recorded():
                await asyncio.sleep(0.05)
        await page.reload()
        dropped = page.locator('.timeline .row.hop[data-status="dropped"]')
        await expect(dropped).to_have_count(1)
        await page.screenshot(path=str(screenshots / "cancelled.png"), full_page=True)
    assert recorder.workers() == ["intent", "planner"], "nothing after the cancel was handled"


async def test_redrive_a_dead_letter_from_the_page(
    redis_url: str,
    settings: Settings,
    web: WebServer,
    api: httpx.AsyncClient,
    page: Page,
    screenshots: Path,
) -> None:
    breakable = Breakable(stage="validator")
    quick = settings.model_copy(update={"validator": QueueSettings(job_timeout=30, max_tries=1)})
    async with LocalSystem(quick, redis_url=redis_url, specs=breakable.specs()):
        job_id = (await api.post("/api/jobs", json={"prompt": "try again"})).json()["job_id"]
        await page.goto(web.url + "dead")
        row = page.locator("#dead-table tbody tr")
        await expect(row).to_have_count(1, timeout=LIVE_S)
        await expect(row).to_contain_text("the validator's backend is down")
        await expect(row).to_contain_text(job_id)
        await page.screenshot(path=str(screenshots / "dead.png"))
        breakable.broken = False
        await row.locator("button.redrive").click()
        await expect(page.locator("#note")).to_have_text(
            "redriven: the message is back on the validator queue"
        )
        await expect(page.locator("#dead-table")).to_have_count(0)
        await page.goto(web.url + f"jobs/{job_id}")
        await expect(page.locator("#job-status")).to_have_text("completed", timeout=LIVE_S)
        await expect(page.locator('.timeline .row.hop[data-status="dead_lettered"]')).to_have_count(
            1
        )
        await expect(page.locator("#result")).to_contain_text("try again")


async def test_bidi_controls_in_a_prompt_show_as_marks_in_the_browser(
    web: WebServer, api: httpx.AsyncClient, page: Page, screenshots: Path
) -> None:
    """A prompt with a right-to-left override would show "pay 001 ot" reversed text; the
    page shows the override as a mark instead, in the order the prompt holds."""
    prompt = "pay \u202e001 ot Alice\u202c today"
    await api.post("/api/jobs", params={"job_id": "rtl"}, json={"prompt": prompt})
    await page.goto(web.url + "jobs/rtl")
    subtitle = await page.locator(".subtitle").inner_text()
    assert subtitle == "pay <U+202E>001 ot Alice<U+202C> today"
    listed = await page.goto(web.url + "jobs")
    assert listed is not None and listed.ok
    assert "<U+202E>001 ot Alice" in await page.locator('tr[data-job="rtl"]').inner_text()
    await page.screenshot(path=str(screenshots / "bidi.png"))
