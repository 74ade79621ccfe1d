"""A worker process running one relay stage, for the runtime's multi-process tests.

    python tests/bus/relay_worker.py NAME [--slow SECONDS]

`--slow` makes the handler sleep first, so a test can kill the process mid-job. Once its
workers run, the process sets `test:ready:<pid>` so a test can wait for every replica.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import signal

import redis.asyncio as aioredis

from infra.actor import Outcome, Runtime, WorkerSpec
from infra.logging import configure_logging
from infra.relay import RELAY_WORKERS
from infra.runner import run_workers
from infra.settings import Settings
from messages import Envelope


def slowed(spec: WorkerSpec, seconds: float) -> WorkerSpec:
    async def handle(message: Envelope, runtime: Runtime) -> Outcome:
        await asyncio.sleep(seconds)
        return await spec.handle(message, runtime)

    return dataclasses.replace(spec, handle=handle)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("name")
    parser.add_argument("--slow", type=float, default=0.0)
    args = parser.parse_args()
    settings = Settings()
    configure_logging(settings.log_level, settings.log_format)
    spec = next(s for s in RELAY_WORKERS if s.name == args.name)
    if args.slow:
        spec = slowed(spec, args.slow)
    stop, ready = asyncio.Event(), asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    url = settings.effective_redis_url

    async def announce() -> None:
        await ready.wait()
        client = aioredis.Redis.from_url(url)
        await client.set(f"test:ready:{os.getpid()}", 1, ex=600)
        await client.aclose()

    announcing = asyncio.create_task(announce())
    await run_workers([spec.name], settings, url, stop=stop, ready=ready, specs=[spec])
    await announcing


if __name__ == "__main__":
    asyncio.run(main())
