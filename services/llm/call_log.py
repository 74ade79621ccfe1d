"""The model calls one hop makes, in the order it makes them.

The runtime opens a log around each handler run (`logging_calls`); every call made through a
handler's metered client is appended to it, with the hop's message id and the call's ordinal
within the hop; a provider counts each attempt that failed (`count_failed_attempt`). The
runtime stores the log with the hop's commit, so a handler that runs twice
(its worker died) has its calls recorded once, from the run that committed; a replay serves
each recorded answer to the call with the same message id and ordinal.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

from postel.services.llm.models import LLMRequest, LLMResponse


@dataclass(frozen=True)
class LoggedCall:
    stage: str
    message_id: str
    ordinal: int
    request: LLMRequest
    response: LLMResponse
    capability: str = ""
    """The prompt style of the model asked (services/prompts' Capability), when known."""


@dataclass
class CallLog:
    """One hop's calls. `stage` is the worker, `message_id` the message it handles."""

    stage: str
    message_id: str
    calls: list[LoggedCall] = field(default_factory=list)
    failed: int = 0
    """Attempts that reached for the model and got no usable answer (an HTTP 5xx, 429, a
    timeout, a refused connection): not in `calls`, counted so a hop whose every call
    failed does not look as if it made none."""

    def next_ordinal(self) -> int:
        return len(self.calls)

    def append(self, request: LLMRequest, response: LLMResponse, capability: str = "") -> None:
        call = LoggedCall(
            self.stage, self.message_id, self.next_ordinal(), request, response, capability
        )
        self.calls.append(call)


_CURRENT: ContextVar[CallLog | None] = ContextVar("postel_llm_call_log", default=None)


@contextlib.contextmanager
def logging_calls(stage: str, message_id: str) -> Iterator[CallLog]:
    """Calls made inside this block (threads started from it included) go to the log."""
    log = CallLog(stage, message_id)
    token = _CURRENT.set(log)
    try:
        yield log
    finally:
        _CURRENT.reset(token)


def current_call_log() -> CallLog | None:
    return _CURRENT.get()


def count_failed_attempt() -> None:
    """One model attempt of the current hop failed (nothing when no hop is logging)."""
    log = _CURRENT.get()
    if log is not None:
        log.failed += 1
