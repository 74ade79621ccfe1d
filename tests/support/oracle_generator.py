"""A generator worker process whose model is the oracle of a document, for the AI loop's
multi-process tests.

    python -m support.oracle_generator DOCUMENT.json MAX_TOKENS [--delay SECONDS]

`--delay` makes every model call take that long, so a test can kill the process in the
middle of an iteration.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from pathlib import Path

from postel.infra.runtime.logging import configure_logging
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.runner import load_worker, run_workers
from postel.infra.runtime.settings import Settings
from postel.services.llm import LLMRequest, ScriptedClient
from postel.services.prompts import Capability

from postel.testing.oracle import Oracle


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("document", type=Path)
    parser.add_argument("max_tokens", type=int)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    oracle = Oracle(json.loads(args.document.read_text()), args.max_tokens)

    async def respond(request: LLMRequest) -> str:
        await asyncio.sleep(args.delay)
        return oracle.full_text(request.prompt_text())

    settings = Settings()
    configure_logging(settings.log_level, settings.log_format)
    model = Model(ScriptedClient(responder=respond), Capability.STANDARD)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await run_workers(
        ["generator"],
        settings,
        settings.effective_redis_url,
        stop=stop,
        specs=[load_worker("generator")],
        resources={RESOURCE: model},
    )


if __name__ == "__main__":
    asyncio.run(main())
