"""ContextStore: the variables a plan assigns with `AS`, alive for one executor session."""

from __future__ import annotations

from typing import Any

from postel.services.gasl.conditions import MISSING, lookup
from postel.services.gasl.errors import BindingError


def shorten(value: Any, max_items: int = 3, max_chars: int = 160) -> Any:
    """A prompt-sized copy: long lists cut to a few items, long strings clipped."""
    if isinstance(value, str):
        return value if len(value) <= max_chars else value[: max_chars - 1] + "…"
    if isinstance(value, list):
        return [shorten(v, max_items, max_chars) for v in value[:max_items]]
    if isinstance(value, dict):
        return {k: shorten(v, max_items, max_chars) for k, v in list(value.items())[:12]}
    return value


def size_of(value: Any) -> int:
    if isinstance(value, list | dict):
        return len(value)
    return 0 if value is None else 1


class ContextStore:
    """Named intermediate results; never persisted (the StateStore is for findings)."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}

    def set(self, name: str, value: Any) -> None:
        self._values[name] = value

    def get(self, name: str, path: tuple[str, ...] = ()) -> Any:
        if name not in self._values:
            known = ", ".join(sorted(self._values)) or "none yet"
            raise BindingError(f"variable {name!r} is not defined (defined: {known})")
        whole = self._values[name]
        if not path:
            return whole
        if isinstance(whole, list):
            # a field of a list variable is that field of each item that has it
            fields = [lookup(item, path) for item in whole]
            value: Any = [field for field in fields if field is not MISSING]
            if whole and not value:
                raise BindingError(f"no item of {name!r} has the field {'.'.join(path)!r}")
            return value
        value = lookup(whole, path)
        if value is MISSING:
            raise BindingError(f"variable {name!r} has no field {'.'.join(path)!r}")
        return value

    def exists(self, name: str) -> bool:
        return name in self._values

    def values(self) -> dict[str, Any]:
        """Every variable, whole: the round store keeps them, so the planner's
        `COMPLETE: ${var}` can make one the answer after the round."""
        return dict(self._values)

    def summary(self, max_items: int = 3) -> dict[str, Any]:
        """Per variable: its size and a short sample, for prompts and logs."""
        return {
            name: {"size": size_of(value), "sample": shorten(value, max_items)}
            for name, value in self._values.items()
        }
