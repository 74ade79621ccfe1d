"""One worker process of `postel bench bus`: one stage of one side.

    python -m postel_bench.bus_worker SIDE STAGE --url URL --ready-key KEY --run RUN

Sides (bus.py compares them in one run):
- `postel`: the relay stage (postel/testing/relay.py) on postel's runtime, woken by pushes;
- `postel_poll`: the same relay stage and Actor on arq's own Worker polling every 5 ms, as
  postel ran before workers were woken by pushes (the "before" of the comparison: the
  baseline baselines/polling_worker.py);
- `arq_5ms` / `arq_default`: a bare arq function that enqueues the next stage, polling every
  5 ms / at arq's default settings (poll 0.5 s, 10 jobs at once); JSON serializer on all sides;
- `calls_recorded` / `calls_unrecorded`: the `postel` relay stage making one call to a
  scripted model per hop, with the job's calls recorded (the default) or not: what recording
  costs a hop.
Each process increments `KEY` once it runs. A bare stage returns its hop latency as the job's
result; its last stage pushes the job's key on `bench:bus:<RUN>:done`.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import signal
import time
from typing import Any

from arq import Worker
from arq.connections import ArqRedis, RedisSettings
from arq.worker import func
from postel.infra.runtime.actor import HopOutcome, Runtime, WorkerSpec
from postel.infra.runtime.logging import configure_logging
from postel.infra.runtime.runner import run_workers
from postel.infra.runtime.settings import Settings
from postel.infra.store.events import Metrics
from postel.infra.store.redis_packing import pack_with_hiredis
from postel.infra.store.wire import connect_arq, dumps
from postel.messages import Envelope
from postel.services.llm import ChatMessage, LLMRequest, MeteredClient, ScriptedClient

from postel.testing.relay import RELAY_WORKERS
from postel_bench.baselines.polling_worker import POLL_S, polling_relay_worker

STAGES = 5
SIDES = ("postel", "postel_poll", "arq_5ms", "arq_default", "calls_recorded", "calls_unrecorded")


def bare_queue(run: str, stage: int) -> str:
    return f"bench:bus:{run}:q:{stage}"


def bare_done(run: str) -> str:
    return f"bench:bus:{run}:done"


def _bare_worker(run: str, stage: int, url: str, options: dict[str, Any]) -> Worker:
    async def hop(ctx: dict[str, Any], key: str, sent_at: float) -> float:
        wait_ms = (time.time() - sent_at) * 1000
        pool: ArqRedis = ctx["redis"]
        if stage + 1 < STAGES:
            await pool.enqueue_job(
                "hop",
                key,
                time.time(),
                _queue_name=bare_queue(run, stage + 1),
                _job_id=f"{key}:{stage + 1}",
            )
        else:
            await pool.lpush(bare_done(run), key)
        return wait_ms

    return Worker(
        functions=[func(hop, name="hop")],
        queue_name=bare_queue(run, stage),
        redis_settings=RedisSettings.from_dsn(url),
        handle_signals=False,
        job_serializer=dumps,
        # plain JSON: postel's own reader takes only postel's job shape (function `handle`)
        job_deserializer=json.loads,
        log_results=False,
        **options,
    )


def _calling_a_model(spec: WorkerSpec) -> WorkerSpec:
    """The relay stage, asking a scripted model one short question per hop first."""
    model = ScriptedClient(responder=lambda request: "relayed")

    async def handle(message: Envelope, runtime: Runtime) -> HopOutcome:
        llm = MeteredClient(model, "standard")
        question = ChatMessage(role="user", content=f"relay {message.message_id}")
        await llm.complete(LLMRequest(messages=[question], max_tokens=16))
        outcome = await spec.handle(message, runtime)
        return dataclasses.replace(outcome, metrics=Metrics.of(outcome.metrics, llm.meter))

    return dataclasses.replace(spec, handle=handle)


async def serve(side: str, stage: int, url: str, ready_key: str, run: str) -> None:
    settings = Settings(redis_url=url)
    configure_logging(settings.log_level, settings.log_format)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    if side in ("postel", "calls_recorded", "calls_unrecorded"):
        ready = asyncio.Event()
        spec = RELAY_WORKERS[stage]
        if side != "postel":
            spec = _calling_a_model(spec)
            settings = settings.model_copy(update={"record_calls": side == "calls_recorded"})
        serving = asyncio.create_task(
            run_workers([spec.name], settings, url, stop=stop, ready=ready, specs=[spec])
        )
        await ready.wait()
        worker = None
    else:
        if side == "postel_poll":
            worker = await polling_relay_worker(RELAY_WORKERS[stage].name, url, settings)
        else:
            options = {"poll_delay": POLL_S} if side == "arq_5ms" else {}
            worker = _bare_worker(run, stage, url, options)
        serving = asyncio.create_task(worker.async_run())
    pool = await connect_arq(url)
    await pool.incr(ready_key)
    await pool.aclose()
    await asyncio.wait(
        [serving, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED
    )
    stop.set()
    if worker is not None:
        await worker.close()
    await asyncio.gather(serving, return_exceptions=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("side", choices=SIDES)
    parser.add_argument("stage", type=int, choices=range(STAGES))
    parser.add_argument("--url", required=True)
    parser.add_argument("--ready-key", required=True)
    parser.add_argument("--run", required=True)
    args = parser.parse_args()
    pack_with_hiredis()  # as `postel worker` does: every side's commands packed alike
    asyncio.run(serve(args.side, args.stage, args.url, args.ready_key, args.run))


if __name__ == "__main__":
    main()
