"""How far one command may search, and the bounds that cut a result to those caps.

When a cap stops a search early the result says which one (`caps_hit`), and the executor
reports the step as `partial`: a big question gets a truncated answer quickly, never a hang.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from postel.services.gasl.errors import InvalidCap, UnknownCap

# How far a plan may raise each cap with SET: the searches stay within the time budgets'
# reach on a graph of some hundred thousand nodes, and the results within a message's size.
HARD_MAXIMA: dict[str, int] = {
    "max_results": 10_000,
    "max_path_length": 6,
    "max_paths": 10_000,
    "max_expansions": 2_000_000,
    "max_depth": 6,
}


@dataclass(frozen=True)
class Caps:
    """Limits on what one command may return or explore.

    Caps belong to one job's executor, never to the (shared, cached) adapter: the adapter's
    searches are handed the caps of the command that asks. A plan changes them with
    `SET adapter.caps.<key>=<n>` (`with_value`): lowered freely, raised at most to
    HARD_MAXIMA. Code that builds an executor may pass any caps (benchmarks do)."""

    max_results: int = 1000
    max_path_length: int = 3
    max_paths: int = 1000
    max_expansions: int = 200_000
    max_depth: int = 3

    def __post_init__(self) -> None:
        for name, value in self.as_dict().items():
            _check_value(name, value)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Caps:
        """Caps from their dict form (a state document, a replay artifact)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise UnknownCap(f"unknown cap {unknown[0]!r}; caps are {', '.join(sorted(names))}")
        return cls(**values)

    def with_value(self, key: str, value: Any) -> Caps:
        """A copy with one cap changed: any lower value, a higher one up to its hard maximum."""
        names = [f.name for f in fields(self)]
        if key not in names:
            raise UnknownCap(f"unknown cap {key!r}; caps are {', '.join(names)}")
        _check_value(key, value)
        return replace(self, **{key: min(value, HARD_MAXIMA[key])})

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _check_value(key: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidCap(f"cap {key} needs a positive integer, got {value!r}")


DEFAULT_CAPS = Caps()


@dataclass(frozen=True)
class Bound:
    """How many results a command may return: its LIMIT held to a cap. A result cut to that
    count was cut by the cap (named in caps_hit) unless the LIMIT asked for no more."""

    count: int
    cap: str
    by_cap: bool

    @classmethod
    def of(cls, limit: int | None, cap: int, name: str) -> Bound:
        return cls(cap if limit is None else min(limit, cap), name, limit is None or limit > cap)

    def cut(self) -> list[str]:
        """The caps hit by cutting a result to `count`."""
        return [self.cap] if self.by_cap else []


def held(requested: int | None, default: int, cap: int, name: str) -> tuple[int, list[str]]:
    """A depth or path length as requested (else `default`) but at most `cap`, and the cap's
    name in a list when it held the request back."""
    value = default if requested is None else requested
    return (cap, [name]) if value > cap else (value, [])
