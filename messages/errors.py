"""The root of postel's exception tree, and the error for input over a documented limit.

Every error postel raises on purpose derives from PostelError, so a caller can catch the
whole family in one clause; each layer adds its own branch (the model, validation, GASL,
requests, the runtime)."""

from __future__ import annotations


class PostelError(Exception):
    """Anything postel raises on purpose."""


class LimitExceeded(PostelError, ValueError):
    """Input larger or deeper than a documented limit (messages.limits); the message names
    the limit, its value and what was seen."""

    def __init__(self, limit: str, allowed: int | float, seen: str) -> None:
        self.limit = limit
        self.allowed = allowed
        shown = f"{allowed:,}" if isinstance(allowed, int) else f"{allowed:g}"
        super().__init__(f"{limit} is {shown}; {seen}")
