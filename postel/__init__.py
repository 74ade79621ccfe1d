"""postel: an event-driven actor system for LLM pipelines that must not lose work.

The public surface is small: ask for a typed value with `reason()` (or `await areason()`),
or drive the system with `Client`; every error postel raises on purpose is a PostelError,
under one branch that says what the caller can do (`NotFound`, `InvalidInput`, `Conflict`,
`Refused`, `Unavailable`, ...).
Everything else lives in the layers below: `postel.messages` (the contract),
`postel.services` (pure logic), `postel.workers` (glue) and `postel.infra` (Redis, arq, CLI).
Importing one layer does not start the others.

Layer rule (tests/contract/test_layers.py): imports nothing of postel; imported by the
benchmarks. It names its public surface by strings, each imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_PUBLIC = {
    "Client": "postel.infra.client.client",
    "JobFailedError": "postel.infra.client.client",
    "JobAlreadyFinished": "postel.infra.runtime.cancel",
    "JobConflict": "postel.infra.runtime.submit",
    "PostelError": "postel.messages.errors",
    "GaslError": "postel.services.gasl.errors",
    "LLMError": "postel.services.llm.errors",
    "CoercionError": "postel.services.validation.errors",
    "LimitExceeded": "postel.messages.errors",
    # the branches of the error tree, by what the caller can do (messages/errors.py)
    **{
        name: "postel.messages.errors"
        for name in (
            "InvalidInput",
            "NotFound",
            "Conflict",
            "Refused",
            "Unavailable",
            "Denied",
            "Misconfigured",
            "TimedOut",
            "Failed",
        )
    },
    "areason": "postel.infra.client.reason",
    "reason": "postel.infra.client.reason",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'postel' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
