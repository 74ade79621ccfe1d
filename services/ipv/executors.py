"""The executor registry: an executor type name -> what runs the PROCESS phase for it.

An executor is an async callable taking the CallContext and returning the raw output that
VALIDATE then coerces. Two types are known:
  "llm"          the default: generation by a model. Registered by the workers at start-up,
                 because reaching a model needs infra, which services may not import.
  "coerce_only"  no model at all: the call's `value` argument (or else its prompt) is the raw
                 output, so a caller can use postel only to read "1.299,99 €" as a float.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the context module imports DEFAULT_EXECUTOR from here
    from postel.services.ipv.context import CallContext

Executor = Callable[["CallContext"], Awaitable[Any]]

DEFAULT_EXECUTOR = "llm"


class UnknownExecutorError(LookupError):
    """No executor is registered under the requested name."""


_registry: dict[str, Executor] = {}


def register_executor(name: str, executor: Executor, *, replace: bool = False) -> Executor:
    """Register `executor` under `name`; registering a taken name needs `replace=True`."""
    if not name or not name.strip():
        raise ValueError("an executor needs a non-empty name")
    if not callable(executor):
        raise TypeError(f"executor {name!r} must be callable, got {type(executor).__name__}")
    if name in _registry and not replace and _registry[name] is not executor:
        raise ValueError(f"executor {name!r} is already registered; pass replace=True")
    _registry[name] = executor
    return executor


def get_executor(name: str) -> Executor:
    try:
        return _registry[name]
    except KeyError:
        known = ", ".join(sorted(_registry)) or "none"
        hint = " (the workers register it at start-up)" if name == DEFAULT_EXECUTOR else ""
        raise UnknownExecutorError(
            f"no executor registered for {name!r}{hint}; registered: {known}"
        ) from None


def unregister_executor(name: str) -> None:
    """Remove `name` (used by tests and by workers shutting down); unknown names are ignored."""
    _registry.pop(name, None)


def executor_names() -> list[str]:
    return sorted(_registry)


async def run_executor(ctx: CallContext) -> Any:
    """PROCESS: run the executor the context names and return its raw output."""
    return await get_executor(ctx.executor_type)(ctx)


async def coerce_only(ctx: CallContext) -> Any:
    return ctx.arguments.get("value", ctx.arguments.get("prompt"))


register_executor("coerce_only", coerce_only)
