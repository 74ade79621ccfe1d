"""Wall-clock budgets: how long one plan, and each command of it, may run.

Plans are written by models, and one that asks for every path between every node would run
for minutes. So the executor gives every command a deadline: the earlier of its own budget
(counted from its start) and what is left of the plan's budget. Every loop that can run
long (graph searches and the rows they return, scans and the columns and indexes they
build, JOIN, the row commands and CREATE_*) checks the deadline cooperatively, and a
command that runs out stops with what it did so far, naming the budget it hit in
`caps_hit` (its record is `partial`).

Both budgets are fixed by the code that runs the plan, never by the plan: the gasl worker
derives them from its job timeout and the job's deadline (`TimeBudget.within`), so a plan
ends well before the worker's run would be cut off. A run whose caller gave up (its `stop`
event is set) stops at the next check as if its budget were spent.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from postel.services.gasl.errors import BudgetSpent

# The names a record carries in `caps_hit` when a budget stopped it.
PLAN_BUDGET = "plan_time_budget"
COMMAND_BUDGET = "command_time_budget"

PLAN_BUDGET_S = 60.0
COMMAND_BUDGET_S = 15.0
# Of the gasl worker's job timeout, the share a plan may use: the rest is for loading the
# graph and the state, storing the state and committing the round.
PLAN_SHARE_OF_JOB_TIMEOUT = 0.5
# Of the plan budget, the share one command may use: a plan keeps time for its other steps.
COMMAND_SHARE_OF_PLAN = 0.25
# A job whose deadline is (nearly) gone still gets a moment to report that.
MIN_PLAN_S = 0.1
# Reading the clock on every iteration of a hot loop would cost more than the work.
_CHECK_EVERY = 64

BULK_ROWS = 50_000
"""A command making rows in bulk (a JOIN's pairs, ADD_FIELD's rows: dicts holding dicts)
tells its deadline's `bulk` hook after every BULK_ROWS of them (`Deadline.made`): the hook
is the running process's to give (infra/runtime/memory.py keeps them out of the garbage
collector's full collections, which took 70 % of a JOIN's time and ran it a third past its
budget); services only count."""

Clock = Callable[[], float]


@dataclass(frozen=True)
class TimeBudget:
    """Seconds one plan, and one command of it, may run."""

    plan_s: float = PLAN_BUDGET_S
    command_s: float = COMMAND_BUDGET_S

    def __post_init__(self) -> None:
        for name in ("plan_s", "command_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"a time budget needs a positive number of seconds: {name}")

    @classmethod
    def within(cls, job_timeout_s: float, deadline_in_s: float | None = None) -> TimeBudget:
        """The budget of a plan run by a worker whose jobs may take `job_timeout_s`, for a
        job whose deadline is `deadline_in_s` away (if it has one): a share of the shorter."""
        available = job_timeout_s if deadline_in_s is None else min(job_timeout_s, deadline_in_s)
        plan = max(MIN_PLAN_S, available * PLAN_SHARE_OF_JOB_TIMEOUT)
        return cls(plan_s=plan, command_s=plan * COMMAND_SHARE_OF_PLAN)


class Deadline:
    """When the current command must stop, and which budget set that moment.

    `tick()` goes inside loops (the clock is read every few calls); `check()` reads it now.
    Both raise BudgetSpent once the moment has passed."""

    def __init__(
        self,
        at: float,
        cap: str,
        seconds: float,
        clock: Clock = time.monotonic,
        bulk: Callable[[], None] | None = None,
    ) -> None:
        self.at = at
        self.cap = cap
        self.seconds = seconds
        self._clock = clock
        self._countdown = _CHECK_EVERY
        self._bulk = bulk

    @classmethod
    def never(cls) -> Deadline:
        """No deadline: for code that calls the adapter directly (benchmarks, summaries)."""
        return cls(math.inf, "", math.inf)

    def tick(self) -> None:
        self._countdown -= 1
        if self._countdown <= 0:
            self._countdown = _CHECK_EVERY
            self.check()

    def made(self, rows: int) -> None:
        """A command has made `rows` rows so far: every BULK_ROWS, the bulk hook runs."""
        if self._bulk is not None and rows % BULK_ROWS == 0:
            self._bulk()

    def check(self) -> None:
        if self._clock() >= self.at:
            raise BudgetSpent(self.cap, self.seconds)

    def remaining(self) -> float:
        return max(0.0, self.at - self._clock())


class PlanClock:
    """The budget of one plan run, started when the plan starts; `stop` ends it early; its
    deadlines carry the `bulk` hook (Deadline.made)."""

    def __init__(
        self,
        budget: TimeBudget,
        clock: Clock = time.monotonic,
        stop: threading.Event | None = None,
        bulk: Callable[[], None] | None = None,
    ) -> None:
        self.budget = budget
        self.bulk = bulk
        self.started = clock()
        if stop is None:
            self._clock = clock
        else:
            # Once stopped, every deadline reads as passed.
            self._clock = lambda: math.inf if stop.is_set() else clock()

    @property
    def plan_ends(self) -> float:
        return self.started + self.budget.plan_s

    def spent(self) -> bool:
        return self._clock() >= self.plan_ends

    def plan_deadline(self) -> Deadline:
        return Deadline(self.plan_ends, PLAN_BUDGET, self.budget.plan_s, self._clock, self.bulk)

    def command_deadline(self) -> Deadline:
        """The deadline of a command starting now: its own budget or the plan's, earlier."""
        own = self._clock() + self.budget.command_s
        if self.plan_ends <= own:
            return self.plan_deadline()
        return Deadline(own, COMMAND_BUDGET, self.budget.command_s, self._clock, self.bulk)

    def elapsed(self) -> float:
        return self._clock() - self.started
