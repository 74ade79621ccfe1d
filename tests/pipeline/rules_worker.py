"""Worker processes of the given kinds with the rule-based model, for multi-process tests.

    python tests/pipeline/rules_worker.py KIND [KIND ...]

Sets `test:ready:<pid>` once its workers run."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).parent))

from rule_model import respond

from infra.logging import configure_logging
from infra.model import RESOURCE, Model
from infra.runner import run_workers
from infra.settings import Settings
from services.llm import ScriptedClient
from services.prompts import Capability


async def main() -> None:
    settings = Settings()
    configure_logging(settings.log_level, settings.log_format)
    url = settings.effective_redis_url
    stop, ready = asyncio.Event(), asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)

    async def announce() -> None:
        await ready.wait()
        client = aioredis.Redis.from_url(url)
        await client.set(f"test:ready:{os.getpid()}", 1, ex=600)
        await client.aclose()

    announcing = asyncio.create_task(announce())
    model = Model(ScriptedClient(responder=respond), Capability.STANDARD)
    await run_workers(
        sys.argv[1:], settings, url, stop=stop, ready=ready, resources={RESOURCE: model}
    )
    await announcing


if __name__ == "__main__":
    asyncio.run(main())
