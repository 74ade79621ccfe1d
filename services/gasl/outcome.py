"""What a command handler gives back (CommandOutcome), and the rows of a row command taken
one by one against the command's deadline (Taken). The executor turns a CommandOutcome into
the command's ExecutionRecord (services/gasl/executor.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from postel.services.gasl.budget import Deadline
from postel.services.gasl.errors import BudgetSpent


@dataclass
class CommandOutcome:
    """A command's result: `value` is assigned to its variable; `status` overrides the one
    the executor derives (from `count`, the value's size by default, and `caps_hit`)."""

    value: Any = None
    status: str | None = None
    count: int | None = None
    caps_hit: list[str] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)


class Taken:
    """The rows of a row command, taken one by one against the deadline. Once it passes the
    rows end early, and the command ends `partial` with what it did with the rows taken
    (`outcome`): its record names the budget in caps_hit and says how many rows it took."""

    def __init__(self, rows: list[Any], deadline: Deadline) -> None:
        self.rows = rows
        self.deadline = deadline
        self.taken = 0
        self.cap: str | None = None

    def __iter__(self) -> Iterator[Any]:
        for row in self.rows:
            try:
                self.deadline.tick()
            except BudgetSpent as spent:
                self.cap = spent.cap
                return
            self.taken += 1
            # a row command may make a container per row (ADD_FIELD, CREATE_*)
            self.deadline.made(self.taken)
            yield row

    def outcome(self, value: Any, **fields: Any) -> CommandOutcome:
        return cut_short(CommandOutcome(value, **fields), [self])


def cut_short(outcome: CommandOutcome, taken: list[Taken]) -> CommandOutcome:
    """The outcome of a row command, naming the budget that cut its rows short, if one did."""
    cut = [t for t in taken if t.cap is not None]
    if cut:
        outcome.caps_hit = sorted({*outcome.caps_hit, *(t.cap for t in cut if t.cap)})
        outcome.detail["rows_taken"] = sum(t.taken for t in taken)
        outcome.detail["rows_total"] = sum(len(t.rows) for t in taken)
    return outcome
