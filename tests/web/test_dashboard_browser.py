"""The dashboard's operator pages in a real headless Chromium (Debian's `chromium`, driven by
Playwright), over a system with every kind of job an operator meets: completed documents,
a job whose every model call failed (and its dead letter), one redriven to completion, one
in progress with its model call in flight, one cancelled, and poison dead letters. Every page
fits a 1024 px window without scrolling sideways; a plain `chromium --headless --screenshot`
of a live page ends. Screenshots at 1024 and 1400 px are saved under the test run's base
temporary directory, `screenshots/` (on several xdist workers, the worker's:
`popen-gwN/screenshots/`; docs/dashboard-*.png are these)."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis
from playwright.async_api import Browser, expect
from postel.infra.client.client import Client
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.runner import load_worker
from postel.infra.runtime.settings import Settings
from postel.infra.store.deadletter import dead_letter
from postel.infra.store.graphs import GraphRegistry
from postel.infra.store.keys import Keyspace
from postel.infra.web.server import WebServer
from postel.services.gasl.loaders import DEMO_GRAPH
from postel.services.llm import LLMRequest, ScriptedClient
from postel.services.prompts import Capability
from support.story_model import MAX_TOKENS, QUESTION, respond

from postel.testing.fake_model import FakeModel
from postel.testing.relay import RELAY_WORKERS

KEYS = Keyspace()
"""The names of the keys on the tests' Redis, one server."""

WIDTHS = (1024, 1400)
CUT_TEXT = """() => {
  // every element of the page whose text is wider than its box: it must show an ellipsis
  // and carry its whole text in a tooltip (its own title, or one around or inside it);
  // text that runs past its box into the next one is never right; a scroll box is
  const squeeze = (text) => text.replace(/\\s+/g, " ").trim();
  const found = [];
  for (const box of document.querySelectorAll("main *")) {
    if (box.closest("svg, .visually-hidden") || box.clientWidth === 0) continue;
    if (box.scrollWidth <= box.clientWidth + 1) continue;
    const style = getComputedStyle(box);
    if (style.overflowX === "auto" || style.overflowX === "scroll") continue;
    const text = squeeze(box.textContent);
    if (!text) continue;
    const name = box.tagName.toLowerCase() + (box.id ? "#" + box.id : "") +
      [...box.classList].map((c) => "." + c).join("");
    const past = box.scrollWidth - box.clientWidth;
    if (style.overflowX === "visible") {
      found.push(`${name} "${text.slice(0, 60)}" runs ${past} px past its box`);
      continue;
    }
    const tips = [box.closest("[title]"), ...box.querySelectorAll("[title]")].filter(Boolean);
    // an abbreviation (`6d6f71b…c3e1f0`) is of the whole: each part of it is in the tooltip
    const parts = text.split("…").map(squeeze).filter(Boolean);
    const whole = tips.some((tip) => parts.every((part) => squeeze(tip.title).includes(part)));
    if (style.textOverflow !== "ellipsis" || !whole) {
      const lacks = style.textOverflow !== "ellipsis" ? "an ellipsis" : "a tooltip of it all";
      found.push(`${name} "${text.slice(0, 60)}" is cut by ${past} px without ${lacks}`);
    }
  }
  return found;
}"""
"""What a page cuts or spills, in words (an empty list when nothing)."""
LONG_PROMPT = (
    "Summarise every report in the collection by author, topic and year, listing for each "
    "author the co-authors they wrote with most often and the topics those reports cover, "
    "with the counts, as a document with one section per author"
)


@dataclass
class Scenes:
    done: str
    failed: str
    redriven: str
    running: str
    cancelled: str
    release: asyncio.Event


@pytest.fixture
def failing_model() -> Iterator[FakeModel]:
    with FakeModel(lambda request: "unused") as fake:
        fake.set_faults(mode="500")
        yield fake


async def _finished(api: httpx.AsyncClient, job_id: str) -> dict[str, object]:
    async with asyncio.timeout(60):
        while (record := (await api.get(f"/api/jobs/{job_id}")).json())["status"] not in (
            "completed",
            "failed",
        ):
            await asyncio.sleep(0.1)
    return record


@pytest.fixture
async def scenes(
    redis_url: str,
    settings: Settings,
    api: httpx.AsyncClient,
    failing_model: FakeModel,
    redis_client: aioredis.Redis,
    quick_presence: float,
) -> AsyncIterator[Scenes]:
    """The system in the state the pages are looked at in; its workers stay up (the running
    job's model call waits for `release`)."""
    broken = settings.model_copy(
        update={
            "llm_provider": "openai",
            "llm_base_url": failing_model.base_url,
            "llm_max_retries": 2,
        }
    )
    specs = [load_worker("intent"), *RELAY_WORKERS[1:]]
    async with LocalSystem(broken, redis_url=redis_url, specs=specs):
        down = [
            (await api.post("/api/jobs", json={"prompt": prompt})).json()["job_id"]
            for prompt in ("What changed in the 2023 reports?", "Who wrote most in 2022?")
        ]
        for job_id in down:
            await _finished(api, job_id)
    await dead_letter(
        redis_client,
        KEYS,
        source="worker:gasl",
        error="undecodable message: the payload is not a JSON object",
        payload="<html>502 Bad Gateway</html>",
    )
    await dead_letter(
        redis_client,
        KEYS,
        source="worker:planner",
        error="invalid message: job_id: Field required",
        payload={"type": "task.planned", "message_id": "x:task:0"},
    )
    async with Client(redis_url, settings) as client:
        await GraphRegistry(client.pool, client.keyspace).add("mmwr", DEMO_GRAPH)
    hold, release = asyncio.Event(), asyncio.Event()

    async def model(request: LLMRequest) -> str:
        if hold.is_set():
            await release.wait()
        return respond(request)

    story = Model(ScriptedClient(responder=model), Capability.STANDARD)
    async with LocalSystem(settings, redis_url=redis_url, resources={RESOURCE: story}):
        document = {
            "desired_type": "document",
            "graph": "mmwr",
            "options": {"max_tokens": MAX_TOKENS},
        }
        done = (await api.post("/api/jobs", json={"prompt": QUESTION, **document})).json()
        dead = (await api.get("/api/dead", params={"worker": "intent"})).json()["items"]
        redriven = await api.post(f"/api/dead/{dead[-1]['id']}/redrive")
        assert redriven.status_code == 200, redriven.text
        await _finished(api, done["job_id"])
        await _finished(api, dead[-1]["job_id"])
        hold.set()
        running = (await api.post("/api/jobs", json={"prompt": QUESTION, **document})).json()
        cancelled = (await api.post("/api/jobs", json={"prompt": LONG_PROMPT})).json()
        await api.post(f"/api/jobs/{cancelled['job_id']}/cancel")
        async with asyncio.timeout(30):  # the worker reports its model call every beat
            while "model-call-in-flight" not in (await api.get(f"/jobs/{running['job_id']}")).text:
                await asyncio.sleep(0.2)
        failed = next(job_id for job_id in down if job_id != dead[-1]["job_id"])
        for n in range(2):  # two ingress jobs, whose ids differ only at the end
            await redis_client.xadd(KEYS.ingress, {"job": json.dumps({"prompt": f"ingress {n}"})})
        async with asyncio.timeout(30):
            while len((await api.get("/api/jobs", params={"q": "ingress-"})).json()["items"]) < 2:
                await asyncio.sleep(0.1)
        yield Scenes(
            done["job_id"],
            failed,
            dead[-1]["job_id"],
            running["job_id"],
            cancelled["job_id"],
            release,
        )
        release.set()


async def test_every_page_fits_1024_px_cuts_nothing_silently_and_is_captured_at_1024_and_1400(
    scenes: Scenes, web: WebServer, browser: Browser, screenshots: Path
) -> None:
    pages = {
        "jobs": "jobs",
        "job-running": f"jobs/{scenes.running}",
        "job-failed": f"jobs/{scenes.failed}",
        "job-redriven": f"jobs/{scenes.redriven}",
        "job-done": f"jobs/{scenes.done}",
        "job-cancelled": f"jobs/{scenes.cancelled}",
        "dead": "dead",
        "queues": "queues?worker=intent",
        "workers": "workers",
        "graphs": "graphs",
        "api": "api/docs",
    }
    live = {"job-failed": "done", "job-redriven": "done", "job-done": "done"}
    live |= {"job-cancelled": "done", "graphs": "snapshot", "api": "snapshot"}
    cut: list[str] = []
    for width in WIDTHS:
        context = await browser.new_context(viewport={"width": width, "height": 900})
        tab = await context.new_page()
        tab.on("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
        for name, path in pages.items():
            await tab.goto(web.url + path)
            await expect(tab.locator("#live-indicator")).to_have_attribute(
                "data-state", live.get(name, "live")
            )
            overflow = await tab.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, f"{name} scrolls sideways by {overflow} px at {width} px"
            cut += [f"{name} at {width} px: {what}" for what in await tab.evaluate(CUT_TEXT)]
            await tab.screenshot(path=str(screenshots / f"{name}-{width}.png"), full_page=True)
        await context.close()
    assert cut == [], "\n".join(cut)
    listing = await browser.new_context(viewport={"width": 1400, "height": 900})
    tab = await listing.new_page()
    await tab.goto(web.url + "jobs?q=ingress-")
    shown = await tab.locator("#jobs-table td.c-job code").all_inner_texts()
    assert len(shown) == 2 and len(set(shown)) == 2, f"two ingress jobs read alike: {shown}"
    await listing.close()


async def test_what_each_page_says_in_the_browser(
    scenes: Scenes, web: WebServer, browser: Browser
) -> None:
    context = await browser.new_context(viewport={"width": 1024, "height": 900})
    tab = await context.new_page()
    tab.on("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
    await tab.goto(web.url + f"jobs/{scenes.running}")
    now = tab.locator("#now")
    await expect(now).to_contain_text("intent")
    await expect(now).to_contain_text("attempt 1")
    await expect(tab.locator("#model-call-in-flight")).to_be_visible()
    await expect(tab.locator(".timeline .bar.run.in-progress")).to_have_count(1)
    seconds = await now.locator(".since").inner_text()
    await expect(now.locator(".since")).not_to_have_text(seconds, timeout=10_000)

    await tab.goto(web.url + f"jobs/{scenes.failed}")
    await expect(tab.locator("#failed-llm-calls")).to_have_text("3")
    await expect(tab.locator("#job-status .pill.llm_error")).to_be_visible()
    await tab.locator("#requeue").click()
    await expect(tab.locator("#note")).to_contain_text("requeue of the failed job named below")
    await expect(tab.locator("#requeued-from")).to_have_text(scenes.failed)

    await tab.goto(web.url + f"jobs/{scenes.redriven}")
    await expect(tab.locator(".timeline .pill.redriven")).to_have_text("redrive 1")
    await expect(tab.locator(".timeline .bar.run.redriven")).to_have_count(1)

    await tab.goto(web.url + "dead")
    rows = tab.locator("#dead-table tbody tr")
    await expect(rows).to_have_count(3)
    poison = rows.filter(has_text="502 Bad Gateway")
    await expect(poison.locator(".cannot")).to_contain_text("it is not JSON")
    await expect(poison.locator("button.redrive")).to_have_count(0)
    model = rows.filter(has_text="failed after 3 attempt(s)")
    await expect(model.locator(".model-attempts")).to_have_text("model ×3")
    await expect(model.locator("button.redrive")).to_have_count(1)
    await poison.locator("button.discard").click()
    await expect(tab.locator("#note")).to_contain_text("discarded dead letter")
    await expect(tab.locator("#dead-table tbody tr")).to_have_count(2)

    await tab.goto(web.url + "jobs?failure=cancelled")
    await expect(tab.locator("#jobs-table tbody tr")).to_have_count(1)
    await expect(tab.locator("#jobs-table .pill.cancelled")).to_be_visible()
    await tab.goto(web.url + "jobs")
    await expect(tab.locator("#chart-outcomes rect.k-completed")).not_to_have_count(0)
    await expect(tab.locator("#chart-latency polyline")).not_to_have_count(0)
    await expect(tab.locator("#chart-tokens rect")).not_to_have_count(0)
    picked = tab.locator(f'input[name="job"][value="{scenes.running}"]')
    await picked.check()
    await tab.locator("#cancel-picked").click()
    await expect(tab.locator("#note")).to_contain_text("cancelled 1")
    await context.close()


@pytest.mark.parametrize(
    ("page", "waiting"),
    [
        ("running", []),
        ("jobs", []),
        # a virtual time budget waits for the network to go quiet: a live page never does,
        # so it is captured as ?static=1 (tests/web: without it, this hangs)
        ("running?static=1", ["--virtual-time-budget=3000"]),
        ("jobs?static=1", ["--virtual-time-budget=3000"]),
    ],
)
async def test_a_plain_headless_screenshot_of_a_live_page_ends(
    scenes: Scenes, web: WebServer, tmp_path: Path, page: str, waiting: list[str], chromium: str
) -> None:
    path = page.replace("running", f"jobs/{scenes.running}")
    shot = tmp_path / "shot.png"
    command = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1400,900",
        *waiting,
        f"--screenshot={shot}",
        web.url + path,
    ]
    try:
        ended = await asyncio.to_thread(
            subprocess.run, command, capture_output=True, timeout=90, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"chromium --headless --screenshot of {path} did not end")
    assert ended.returncode == 0, ended.stderr.decode(errors="replace")[-2000:]
    assert shot.stat().st_size > 10_000


async def test_a_static_page_has_no_live_updates(scenes: Scenes, api: httpx.AsyncClient) -> None:
    live = (await api.get(f"/jobs/{scenes.running}")).text
    still = (await api.get(f"/jobs/{scenes.running}", params={"static": "1"})).text
    assert "/static/app.js" in live and "/static/app.js" not in still
    assert 'id="now"' in still, "the same page, only not live"
