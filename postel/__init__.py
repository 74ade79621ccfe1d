"""postel: an event-driven actor system for LLM pipelines that must not lose work.

The public surface is small: ask for a typed value with `reason()` (or `await areason()`),
or drive the system with `Client`. Everything else lives in the layers below and may change:
`postel.messages` (the contract), `postel.services` (pure logic), `postel.workers` (glue) and
`postel.infra` (Redis, arq, CLI).
"""

from postel.infra.client import Client, JobFailedError
from postel.infra.reason import areason, reason

__all__ = ["Client", "JobFailedError", "areason", "reason"]
