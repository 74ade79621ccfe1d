"""A worker process running relay stages, for the runtime's multi-process tests.

    python -m support.relay_worker NAME [NAME ...] [--slow SECONDS] [--ingress]
                                   [--stall-after-take SECONDS]

`--slow` makes each handler sleep first, so a test can kill the process mid-job.
`--ingress` also runs the ingress consumer. `--stall-after-take` makes the worker sleep
after it has taken a job from the queue and before arq starts the job (before postel's
handler renews the lease), so a test can kill the process in that window.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import signal

from postel.infra.runtime.actor import HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.logging import configure_logging
from postel.infra.runtime.runner import run_workers
from postel.infra.runtime.settings import Settings
from postel.infra.runtime.wake import PushWorker, TakenJob
from postel.messages import Envelope

from postel.testing.relay import RELAY_WORKERS


def slowed(spec: WorkerSpec, seconds: float) -> WorkerSpec:
    async def handle(message: Envelope, runtime: Runtime) -> HopOutcome:
        await asyncio.sleep(seconds)
        return await spec.handle(message, runtime)

    return dataclasses.replace(spec, handle=handle)


def stall_after_take(seconds: float) -> None:
    """Every job this process takes waits `seconds` before arq runs it."""
    run_taken = PushWorker.run_taken

    async def stalled(self: PushWorker, job: TakenJob) -> None:
        await asyncio.sleep(seconds)
        await run_taken(self, job)

    PushWorker.run_taken = stalled  # type: ignore[method-assign]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="+")
    parser.add_argument("--slow", type=float, default=0.0)
    parser.add_argument("--ingress", action="store_true")
    parser.add_argument("--stall-after-take", type=float, default=0.0)
    args = parser.parse_args()
    settings = Settings()
    configure_logging(settings.log_level, settings.log_format)
    specs = [s for s in RELAY_WORKERS if s.name in args.names]
    if args.slow:
        specs = [slowed(spec, args.slow) for spec in specs]
    if args.stall_after_take:
        stall_after_take(args.stall_after_take)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await run_workers(
        [s.name for s in specs],
        settings,
        settings.effective_redis_url,
        stop=stop,
        specs=specs,
        ingress=args.ingress,
    )


if __name__ == "__main__":
    asyncio.run(main())
