"""Worker processes of the given kinds with the rule-based model, for multi-process tests.

python -m support.rules_worker KIND [KIND ...]
"""

from __future__ import annotations

import asyncio
import signal
import sys

from postel.infra.runtime.logging import configure_logging
from postel.infra.runtime.model import RESOURCE, Model
from postel.infra.runtime.runner import run_workers
from postel.infra.runtime.settings import Settings
from postel.services.llm import ScriptedClient
from postel.services.prompts import Capability

from support.rule_model import respond


async def main() -> None:
    settings = Settings()
    configure_logging(settings.log_level, settings.log_format)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    model = Model(ScriptedClient(responder=respond), Capability.STANDARD)
    await run_workers(
        sys.argv[1:],
        settings,
        settings.effective_redis_url,
        stop=stop,
        resources={RESOURCE: model},
    )


if __name__ == "__main__":
    asyncio.run(main())
