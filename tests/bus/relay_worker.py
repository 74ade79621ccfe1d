"""A worker process running one relay stage, for the runtime's multi-process tests.

    python tests/bus/relay_worker.py NAME [--slow SECONDS]

`--slow` makes the handler sleep first, so a test can kill the process mid-job.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import signal

from postel.infra.actor import Outcome, Runtime, WorkerSpec
from postel.infra.logging import configure_logging
from postel.infra.relay import RELAY_WORKERS
from postel.infra.runner import run_workers
from postel.infra.settings import Settings
from postel.messages import Envelope


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
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await run_workers([spec.name], settings, settings.effective_redis_url, stop=stop, specs=[spec])


if __name__ == "__main__":
    asyncio.run(main())
