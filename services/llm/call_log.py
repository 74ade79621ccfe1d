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
import time
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

    in_flight: int = 0
    calling_since: float | None = None
    """When (epoch seconds) the oldest of the calls now in flight started; None when none is:
    what a dashboard shows as "model call for 20 s"."""

    def next_ordinal(self) -> int:
        return len(self.calls)

    @contextlib.contextmanager
    def calling(self) -> Iterator[None]:
        """Marks a model call in flight for the time of the block."""
        if self.in_flight == 0:
            self.calling_since = time.time()
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1
            if self.in_flight == 0:
                self.calling_since = None

    def append(self, request: LLMRequest, response: LLMResponse, capability: str = "") -> None:
        call = LoggedCall(
            self.stage, self.message_id, self.next_ordinal(), request, response, capability
        )
        self.calls.append(call)


_CURRENT: ContextVar[CallLog | None] = ContextVar("postel_llm_call_log", default=None)
_OPEN: dict[int, CallLog] = {}


@contextlib.contextmanager
def logging_calls(stage: str, message_id: str) -> Iterator[CallLog]:
    """Calls made inside this block (threads started from it included) go to the log."""
    log = CallLog(stage, message_id)
    token = _CURRENT.set(log)
    _OPEN[id(log)] = log
    try:
        yield log
    finally:
        _OPEN.pop(id(log), None)
        _CURRENT.reset(token)


def open_logs() -> list[CallLog]:
    """The logs of the hops this process is handling now (a worker's presence reports them)."""
    return list(_OPEN.values())


def current_call_log() -> CallLog | None:
    return _CURRENT.get()


def count_failed_attempt() -> None:
    """One model attempt of the current hop failed (nothing when no hop is logging)."""
    log = _CURRENT.get()
    if log is not None:
        log.failed += 1
