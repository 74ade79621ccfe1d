"""The web server on a free loopback port over the test's Redis, and the systems its tests
watch: the relay workers, or the five real workers walking the story model's job."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, async_playwright
from postel.infra.client.client import Client
from postel.infra.runtime import presence
from postel.infra.runtime.local_system import LocalSystem
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.settings import Settings
from postel.infra.store.graphs import GraphRegistry
from postel.infra.web.server import WebServer
from postel.services.gasl.loaders import DEMO_GRAPH
from postel.services.llm import LLMRequest, ScriptedClient
from postel.services.prompts import Capability
from support.story_model import respond

MODEL_DELAY_S = 0.25


@pytest.fixture
async def web(redis_url: str, settings: Settings) -> AsyncIterator[WebServer]:
    async with WebServer(settings, redis_url, "127.0.0.1", 0) as server:
        yield server


@pytest.fixture
async def api(web: WebServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=web.url, timeout=30) as client:
        yield client


@pytest.fixture
async def story_system(redis_url: str, settings: Settings) -> AsyncIterator[LocalSystem]:
    """All five real workers with the story model, and the bundled graph as `mmwr`."""
    async with Client(redis_url, settings) as client:
        await GraphRegistry(client.pool, client.keyspace).add("mmwr", DEMO_GRAPH)

    async def thoughtful(request: LLMRequest) -> str:
        await asyncio.sleep(MODEL_DELAY_S)  # long enough to watch the job live
        return respond(request)

    model = Model(ScriptedClient(responder=thoughtful), Capability.STANDARD)
    async with LocalSystem(settings, redis_url=redis_url, resources={RESOURCE: model}) as system:
        yield system


@pytest.fixture
def quick_presence(monkeypatch: pytest.MonkeyPatch) -> float:
    """The in-process workers refresh their presence every 0.2 s, not every BEAT_S (5 s): a
    test waiting for a page to show a model call in flight waits a beat, not up to 5 s."""
    monkeypatch.setattr(presence, "BEAT_S", 0.2)
    return presence.BEAT_S


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
"""Debian's chromium, which the browser tests drive through Playwright (never a download)."""


@pytest.fixture
def chromium() -> str:
    """The browser's path, for a test that runs it as a plain command."""
    return CHROMIUM


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.getbasetemp() / "screenshots"
    directory.mkdir(exist_ok=True)
    return directory


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        yield launched
        await launched.close()
