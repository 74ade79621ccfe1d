"""The root of postel's exception tree, its branches by what a caller can do, and the one
table mapping each branch to a CLI exit code and an HTTP status.

Every error postel raises on purpose derives from PostelError, so a caller can catch the
whole family in one clause. Each public error sits under exactly one branch below, named for
what the caller can do about it (fix the input, look elsewhere, retry later, ...); the CLI
(infra/cli/support.py) and the HTTP API (infra/web/errors.py) both answer from OUTCOMES, so
one error gets one exit code and one status everywhere."""

from __future__ import annotations

from typing import NamedTuple


class PostelError(Exception):
    """Anything postel raises on purpose."""


class InvalidInput(PostelError, ValueError):
    """The input is wrong: fix it and try again (the message names what was wrong)."""


class NotFound(PostelError, LookupError):
    """What was named is not there: check the name or create it first."""


class Conflict(PostelError):
    """The request clashes with what is already there (a job id taken by another request):
    pick another name or send the same request."""


class Refused(PostelError):
    """The thing exists but this operation cannot apply to it in its state (cancelling a
    finished job, redriving a dead letter that still cannot work, requeueing a job that has
    not failed)."""


class Unavailable(PostelError):
    """A service postel needs is not answering or gave no usable answer (Redis, the model):
    try again later."""


class Denied(PostelError):
    """A service refused postel's credentials or permissions: fix the configuration."""


class Misconfigured(PostelError):
    """postel's own settings, environment or stored data are not usable as they are (no
    model endpoint, no Redis binary, a bad Redis URL, a malformed job record): an operator
    must fix them."""


class TimedOut(PostelError):
    """The work did not finish within its time: wait longer or give it more time."""


class Failed(PostelError):
    """The work was tried and failed (a job, a plan, an answer the model could not give in
    the desired shape); its status and message say why."""


class ErrorCodes(NamedTuple):
    """What an error branch answers: the command line's exit code, the API's HTTP status."""

    exit_code: int
    http_status: int


# The one mapping of branches to exit codes and HTTP statuses (docs/API.md, "The command line").
OUTCOMES: dict[type[PostelError], ErrorCodes] = {
    Failed: ErrorCodes(1, 500),
    InvalidInput: ErrorCodes(2, 422),
    Conflict: ErrorCodes(2, 409),
    Misconfigured: ErrorCodes(2, 500),
    Unavailable: ErrorCodes(3, 503),
    NotFound: ErrorCodes(4, 404),
    TimedOut: ErrorCodes(5, 504),
    Refused: ErrorCodes(6, 409),
    Denied: ErrorCodes(7, 503),
}
BRANCHES: tuple[type[PostelError], ...] = tuple(OUTCOMES)
# A PostelError under no branch (a caller's own subclass) is treated as bad input.
UNBRANCHED = OUTCOMES[InvalidInput]


def outcome_of(exc: BaseException) -> ErrorCodes | None:
    """The exit code and HTTP status of a PostelError (None for anything else)."""
    if not isinstance(exc, PostelError):
        return None
    for kind in type(exc).__mro__:
        if kind in OUTCOMES:
            return OUTCOMES[kind]
    return UNBRANCHED


class GraphNotFound(NotFound):
    """A job needs a graph that is not there: it names none, or none of that name is
    registered (`known`, when given, lists the names that are). A job whose graph is missing
    fails `invalid_request`, its message dead-lettered so that registering the graph and
    redriving it resumes the job."""

    def __init__(self, name: str | None, known: list[str] | None = None) -> None:
        self.name = name
        self.known = known
        if name is None:
            super().__init__("the job names no graph, and this step needs one")
            return
        listed = ", ".join(known) if known else "none yet; add one with `postel graph add`"
        tail = "" if known is None else f"; known graphs: {listed}"
        super().__init__(f"no graph named {name!r}{tail}")


class LimitExceeded(InvalidInput):
    """Input larger or deeper than a documented limit (messages.limits); the message names
    the limit, its value and what was seen."""

    def __init__(self, limit: str, allowed: int | float, seen: str) -> None:
        self.limit = limit
        self.allowed = allowed
        shown = f"{allowed:,}" if isinstance(allowed, int) else f"{allowed:g}"
        super().__init__(f"{limit} is {shown}; {seen}")
