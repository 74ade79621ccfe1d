"""GaslExecutor: runs validated plans command by command and records what each one did.

The executor is async only because PROCESS and ANALYZE await a model; every other command
is plain synchronous work on the adapter, the ContextStore and the StateStore.

Plan flow:
- the plan object is validated (pydantic) and every command parsed before anything runs;
  a syntax error rejects the plan with one `error` record naming the command;
- commands run in order; each yields an ExecutionRecord (TRY yields one per inner command);
- a failure (error, binding_failure, schema_mismatch) stops the plan when stop_on_error,
  an `empty` result stops it unless continue_on_empty — except when the next command is an
  `ON <status> <var> THEN ...` guard for exactly that outcome: the guard is the handler;
- only DECLARE and UPDATE change the state; the state is persisted when the plan ends;
- CREATE_NODES/EDGES/GROUPS add to the job's overlay (services.gasl.overlay): later commands
  see the graph with it, the registered graph never changes.

Caps and time budgets belong to the executor, i.e. to one job: a plan's SET changes this
executor's caps (kept in the job's state for its later plans), never the adapter, which
is shared by every job of the process. Every command runs against a deadline (see
services.gasl.budget); once the plan's budget is spent no further command runs, and the
first one left out gets an `error` record naming the budget.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from postel.messages.gasl import (
    FAILED_STATUSES,
    ExecutionRecord,
    GaslPlan,
    GaslRunResult,
    StateSummary,
)
from postel.services.gasl import ast
from postel.services.gasl.budget import PLAN_BUDGET, BudgetSpent, PlanClock, TimeBudget
from postel.services.gasl.commands import run_command
from postel.services.gasl.context import ContextStore, size_of
from postel.services.gasl.engines.caps import Caps
from postel.services.gasl.engines.protocol import GraphAdapter
from postel.services.gasl.errors import GaslError, GaslSyntaxError, PlanSyntaxError
from postel.services.gasl.llm_steps import GaslModel, Limits
from postel.services.gasl.outcome import CommandOutcome
from postel.services.gasl.parser import parse
from postel.services.gasl.scope import Scope
from postel.services.gasl.state import StateStore
from pydantic import ValidationError

# Which recorded statuses each ON guard answers to.
GUARDS: dict[str, frozenset[str]] = {
    "EMPTY": frozenset({"empty"}),
    "ERROR": frozenset({"error", "binding_failure"}),
    "PARTIAL": frozenset({"partial"}),
    "SCHEMA_MISMATCH": frozenset({"schema_mismatch"}),
}
# Commands whose zero-size result means "nothing found" (status `empty`).
_QUERIES = (
    ast.FindItems,
    ast.FindPaths,
    ast.SelectWhere,
    ast.SelectFields,
    ast.Neighbors,
    ast.Process,
    ast.Count,
    ast.Aggregate,
    ast.Rank,
    ast.GraphWalk,
    ast.Subgraph,
    ast.GraphConnect,
    ast.Join,
    ast.Merge,
    ast.AddField,
    ast.AddFieldByModel,
    ast.Classify,
    ast.CreateNodes,
    ast.CreateEdges,
    ast.CreateGroups,
)
MAX_PROVENANCE = 200
MAX_PROVENANCE_ITEMS = 10_000


def provenance_of(value: Any) -> list[str]:
    """Source ids (chunks) named by the first items of a result, first seen first: the
    first MAX_PROVENANCE_ITEMS, so a result of millions of rows (a JOIN) is not read whole
    after its command's budget ran out."""
    seen: dict[str, None] = {}
    items = value if isinstance(value, list) else [value]
    for item in itertools.islice(items, MAX_PROVENANCE_ITEMS):
        if isinstance(item, dict):
            for sid in item.get("source_ids", []) or []:
                seen.setdefault(str(sid), None)
                if len(seen) >= MAX_PROVENANCE:
                    return list(seen)
    return list(seen)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class GaslExecutor(Scope):
    """Executes GASL plans against one graph, one state store and (optionally) one model.

    The commands' handlers (services/gasl/commands/) run in this executor as their Scope;
    the executor runs the plan: the order, TRY and ON, the budgets and the records."""

    def __init__(
        self,
        adapter: GraphAdapter,
        state: StateStore | None = None,
        model: GaslModel | None = None,
        context: ContextStore | None = None,
        limits: Limits | None = None,
        max_rows: int | None = 20,
        caps: Caps | None = None,
        budget: TimeBudget | None = None,
        stop: threading.Event | None = None,
        bulk: Callable[[], None] | None = None,
    ) -> None:
        """`max_rows` bounds the rows a record keeps (None: all of them); `caps` default to
        the caps the state carries from the job's earlier plans, else
        to the defaults; `budget` defaults to TimeBudget(); setting `stop` (from another
        thread) ends the running plan at its next deadline check; `bulk` is the hook a command
        making rows in bulk calls (services/gasl/budget.py's BULK_ROWS)."""
        state = state or StateStore()
        super().__init__(
            adapter,
            state,
            model,
            context or ContextStore(),
            limits or Limits(),
            Caps.from_dict(state.caps) if caps is None else caps,
            budget or TimeBudget(),
            stop,
            bulk,
        )
        self.max_rows = max_rows
        self.var_status: dict[str, str] = {}

    # --- public
    def state_summary(self, max_items: int = 3) -> StateSummary:
        return self.state.summary(max_items=max_items)

    async def execute_plan(self, plan: GaslPlan | dict[str, Any]) -> GaslRunResult:
        """Validate, parse and run one plan; never raises for a bad plan or command."""
        try:
            checked = plan if isinstance(plan, GaslPlan) else GaslPlan.model_validate(plan)
        except ValidationError as exc:
            plan_id = str(plan.get("plan_id", "")) if isinstance(plan, dict) else ""
            return self._rejected(plan_id, "<plan>", f"invalid plan object: {exc}")
        if checked.plan_id in self.cancelled:
            return self._rejected(checked.plan_id, "<plan>", "this plan id was cancelled")
        self.clock = PlanClock(self.budget, stop=self.stop, bulk=self.bulk)  # parsing counts too
        try:
            commands = parse_plan(checked.commands)
        except PlanSyntaxError as exc:
            return self._rejected(checked.plan_id, exc.command, str(exc.error), checked.why)
        self.plan_id, self.cancel_current = checked.plan_id, False
        self.state.record_plan(
            checked.model_dump(include={"plan_id", "why", "commands", "config"}),
            self.caps.as_dict(),
        )
        records: list[ExecutionRecord] = []
        stopped = False
        for index, command in enumerate(commands):
            if self.clock.spent():
                records.append(self._spent_record(command, checked.why, len(commands) - index))
                stopped = True
                break
            new, failed = await self._run(command, checked.why)
            records.extend(new)
            if self.cancel_current:
                break
            last = new[-1].status
            handled = _guarded(commands[index + 1 :], command.target, last)
            stop_for_error = failed and checked.config.stop_on_error
            stop_for_empty = last == "empty" and not checked.config.continue_on_empty
            if (stop_for_error or stop_for_empty) and not handled:
                stopped = index < len(commands) - 1
                break
        self.state.caps = self.caps.as_dict()
        self.state.overlay = self.overlay.as_dict()
        self.state.persist()
        return GaslRunResult(
            plan_id=checked.plan_id,
            records=records,
            state=self.state_summary(),
            variables=self.context.summary(),
            stopped=stopped,
            cancelled=self.cancel_current,
        )

    async def execute(self, command: str, why: str = "") -> list[ExecutionRecord]:
        """Run loose command text (one or more commands) outside a plan object."""
        result = await self.execute_plan(
            {"plan_id": f"adhoc-{len(self.state.history) + 1}", "why": why, "commands": [command]}
        )
        return result.records

    # --- running one command
    def _rejected(self, plan_id: str, command: str, error: str, why: str = "") -> GaslRunResult:
        record = ExecutionRecord(command=command, why=why, status="error", error=error)
        return GaslRunResult(
            plan_id=plan_id, records=[record], state=self.state_summary(), stopped=True
        )

    def _spent_record(self, command: ast.Command, why: str, left: int = 1) -> ExecutionRecord:
        budget = self.budget.plan_s
        record = ExecutionRecord(
            command=command.text,
            why=why,
            status="error",
            caps_hit=[PLAN_BUDGET],
            error=f"not run: the {PLAN_BUDGET} of {budget:g} s is spent "
            f"({left} command(s) of the plan left); ask for less, e.g. lower LIMIT or "
            "MAX_LENGTH, or split the work over plans",
        )
        self._history(record, _now(), _now())
        return record

    async def _run(self, command: ast.Command, why: str) -> tuple[list[ExecutionRecord], bool]:
        """Records of one command, and whether it failed (uncaught)."""
        if self.clock.spent():
            return [self._spent_record(command, why)], True
        if isinstance(command, ast.Try):
            return await self._run_try(command, why)
        if isinstance(command, ast.On):
            return await self._run_on(command, why)
        record = await self._run_simple(command, why)
        return [record], record.status in FAILED_STATUSES

    async def _run_try(self, block: ast.Try, why: str) -> tuple[list[ExecutionRecord], bool]:
        records: list[ExecutionRecord] = []
        caught = False
        for command in block.body:
            new, failed = await self._run(command, why)
            records.extend(new)
            if failed:
                new[-1].detail["caught"] = True
                caught = True
                break
        if self.clock.spent():  # no time left for CATCH or FINALLY
            return records, True
        failed = False
        for command in block.catch if caught else ():
            new, failed = await self._run(command, why)
            records.extend(new)
            if failed:
                break
        for command in block.final:
            new, final_failed = await self._run(command, why)
            records.extend(new)
            if final_failed:
                return records, True
        return records, failed

    async def _run_on(self, guard: ast.On, why: str) -> tuple[list[ExecutionRecord], bool]:
        name = guard.ref.name
        status = self.var_status.get(name)
        if guard.status == "EMPTY" and status is None and self.context.exists(name):
            status = "empty" if size_of(self.context.get(name)) == 0 else "success"
        if status in GUARDS[guard.status]:
            records, failed = await self._run(guard.then, why)
            records[0].detail["guard"] = guard.text
            return records, failed
        record = ExecutionRecord(
            command=guard.text,
            why=why,
            status="success",
            detail={"triggered": False, "observed": status},
        )
        self._history(record, _now(), _now())
        return [record], False

    async def _run_simple(self, command: ast.Command, why: str) -> ExecutionRecord:
        started_at, started = _now(), time.perf_counter()
        error: str | None = None
        self.deadline = self.clock.command_deadline()
        try:
            outcome = await run_command(self, command)
        except BudgetSpent as spent:
            outcome = CommandOutcome(status="error", caps_hit=[spent.cap])
            error = f"stopped: {spent}; ask for less in one command, or split the work"
        except GaslError as exc:
            # bad input the handler named; any other exception is a bug and propagates
            outcome, error = CommandOutcome(status=exc.status), str(exc)
        value = outcome.value
        count = outcome.count if outcome.count is not None else size_of(value)
        status = outcome.status or self._status(command, count, outcome.caps_hit)
        target = command.target
        if target is not None:
            self.var_status[target] = status
            if status not in FAILED_STATUSES:
                self.context.set(target, value)
        rows = value if isinstance(value, list) else ([] if value is None else [value])
        record = ExecutionRecord(
            command=command.text,
            why=why,
            status=status,
            count=count,
            caps_hit=outcome.caps_hit,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
            provenance=provenance_of(value),
            error=error,
            rows=rows[: self.max_rows],
            variable=target,
            detail=outcome.detail,
        )
        if command.written:
            # the model spelled it another way: the record shows both, so it learns the canonical
            record.detail["written"] = command.written
        self._history(record, started_at, _now())
        return record

    @staticmethod
    def _status(command: ast.Command, count: int, caps_hit: list[str]) -> str:
        if caps_hit:
            return "partial"
        if count == 0 and isinstance(command, _QUERIES):
            return "empty"
        return "success"

    def _history(self, record: ExecutionRecord, started_at: str, finished_at: str) -> None:
        self.state.append_history(
            {
                "plan_id": self.plan_id,
                "command": record.command,
                "why": record.why,
                "status": record.status,
                "summary": {"count": record.count, "caps_hit": record.caps_hit},
                "provenance_summary": {"sources": len(record.provenance)},
                "error": record.error,
                "state_version": self.state.version,
                "started_at": started_at,
                "finished_at": finished_at,
            }
        )


def _guarded(rest: list[ast.Command], target: str | None, status: str) -> bool:
    """Is the next command an ON guard for exactly this variable and outcome?"""
    if not rest or target is None or not isinstance(rest[0], ast.On):
        return False
    guard = rest[0]
    return guard.ref.name == target and status in GUARDS[guard.status]


def parse_plan(commands: list[str]) -> list[ast.Command]:
    """Parse plan commands. A TRY block may be one string or spread over several."""
    parsed: list[ast.Command] = []
    first_error: PlanSyntaxError | None = None
    for index, text in enumerate(commands):
        try:
            parsed.extend(parse(text))
        except GaslSyntaxError as exc:
            first_error = first_error or PlanSyntaxError(index, text, exc)
    if first_error is None:
        return parsed
    try:
        return parse("\n".join(commands))
    except GaslSyntaxError:
        raise first_error from None


async def replay(
    artifact: dict[str, Any], adapter: GraphAdapter, model: GaslModel | None = None
) -> StateStore:
    """Re-run a session's plans from its replay artifact into a fresh in-memory state."""
    executor = GaslExecutor(adapter, StateStore(), model)
    for plan in artifact.get("plans", []):
        executor.caps = Caps.from_dict(plan.get("caps", {}))
        await executor.execute_plan({k: v for k, v in plan.items() if k != "caps"})
    return executor.state
