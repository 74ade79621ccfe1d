"""The root of postel's exception tree, and the error for input over a documented limit.

Every error postel raises on purpose derives from PostelError, so a caller can catch the
whole family in one clause; each layer adds its own branch (the model, validation, GASL,
requests, the runtime)."""

from __future__ import annotations


class PostelError(Exception):
    """Anything postel raises on purpose."""


class GraphNotFound(PostelError, LookupError):
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


class LimitExceeded(PostelError, ValueError):
    """Input larger or deeper than a documented limit (messages.limits); the message names
    the limit, its value and what was seen."""

    def __init__(self, limit: str, allowed: int | float, seen: str) -> None:
        self.limit = limit
        self.allowed = allowed
        shown = f"{allowed:,}" if isinstance(allowed, int) else f"{allowed:g}"
        super().__init__(f"{limit} is {shown}; {seen}")
