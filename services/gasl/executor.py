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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from postel.messages.gasl import (
    FAILED_STATUSES,
    ExecutionRecord,
    GaslPlan,
    GaslRunResult,
    StateSummary,
)
from postel.services.gasl import ast, combine
from postel.services.gasl.adapters import Caps, Found, GraphAdapter, OverlayView
from postel.services.gasl.budget import (
    PLAN_BUDGET,
    BudgetSpent,
    Deadline,
    PlanClock,
    TimeBudget,
)
from postel.services.gasl.conditions import (
    MISSING,
    as_value,
    bind,
    evaluate,
    fields_of,
    lookup,
)
from postel.services.gasl.context import ContextStore, size_of
from postel.services.gasl.errors import GaslError, GaslSyntaxError, PlanSyntaxError
from postel.services.gasl.llm_steps import (
    GaslModel,
    Limits,
    run_add_field,
    run_analyze,
    run_classify,
    run_process,
)
from postel.services.gasl.overlay import GROUP_TYPE, MEMBER_OF, Overlay, edge_of, node_of
from postel.services.gasl.parser import parse
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
SHOW_ROWS = 5  # what SHOW previews without LIMIT
MAX_SHOW_ROWS = 50


@dataclass
class _Outcome:
    value: Any = None
    status: str | None = None
    count: int | None = None
    caps_hit: list[str] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)


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


def node_ids(value: Any) -> list[str]:
    """Node ids named by a value: ids, node records, or path records (their end node)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        if "id" in value:
            return [str(value["id"])]
        if "end" in value:
            return [str(value["end"])]
        return []
    if isinstance(value, list):
        return [i for v in value for i in node_ids(v)]
    return []


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class GaslExecutor:
    """Executes GASL plans against one graph, one state store and (optionally) one model."""

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
    ) -> None:
        """`max_rows` bounds the rows a record keeps (None: all of them); `caps` default to
        the caps the state carries from the job's earlier plans, else
        to the defaults; `budget` defaults to TimeBudget(); setting `stop` (from another
        thread) ends the running plan at its next deadline check."""
        self.adapter = adapter
        self.state = state or StateStore()
        self.model = model
        self.context = context or ContextStore()
        self.limits = limits or Limits()
        self.max_rows = max_rows
        self.caps = Caps.from_dict(self.state.caps) if caps is None else caps
        self.budget = budget or TimeBudget()
        self.stop = stop
        self.cancelled: set[str] = set()
        self.var_status: dict[str, str] = {}
        self.overlay = Overlay.from_dict(self.state.overlay)
        self._view: OverlayView | None = None
        self._plan_id = ""
        self._cancel_current = False
        self._clock = PlanClock(self.budget, stop=stop)
        self._deadline = self._clock.command_deadline()

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
        self._clock = PlanClock(self.budget, stop=self.stop)  # parsing counts too
        try:
            commands = parse_plan(checked.commands)
        except PlanSyntaxError as exc:
            return self._rejected(checked.plan_id, exc.command, str(exc.error), checked.why)
        self._plan_id, self._cancel_current = checked.plan_id, False
        self.state.record_plan(
            checked.model_dump(include={"plan_id", "why", "commands", "config"}),
            self.caps.as_dict(),
        )
        records: list[ExecutionRecord] = []
        stopped = False
        for index, command in enumerate(commands):
            if self._clock.spent():
                records.append(self._spent_record(command, checked.why, len(commands) - index))
                stopped = True
                break
            new, failed = await self._run(command, checked.why)
            records.extend(new)
            if self._cancel_current:
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
            cancelled=self._cancel_current,
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
        if self._clock.spent():
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
        if self._clock.spent():  # no time left for CATCH or FINALLY
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
        self._deadline = self._clock.command_deadline()
        try:
            outcome = await self._dispatch(command)
        except BudgetSpent as spent:
            outcome = _Outcome(status="error", caps_hit=[spent.cap])
            error = f"stopped: {spent}; ask for less in one command, or split the work"
        except GaslError as exc:
            outcome, error = _Outcome(status=exc.status), str(exc)
        except (KeyError, ValueError, TypeError) as exc:
            outcome, error = _Outcome(status="error"), f"{type(exc).__name__}: {exc}"
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
                "plan_id": self._plan_id,
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

    @property
    def graph(self) -> GraphAdapter:
        """The adapter commands read: the shared graph, seen through a view with the job's
        overlay once it has one (the view takes in each write as it is made)."""
        if self.overlay.size == (0, 0):
            return self.adapter
        if self._view is None:
            self._view = self.adapter.overlaid(self.overlay)
        self._view.catch_up()
        return self._view

    # --- bindings
    def _resolve(self, name: str, path: tuple[str, ...]) -> Any:
        if self.context.exists(name):
            return self.context.get(name, path)
        dotted = ".".join((name, *path))
        if self.state.has(dotted):
            return self.state.get(dotted)
        return self.context.get(name, path)  # raises BindingError naming what exists

    def _value(self, ref: ast.VarRef) -> Any:
        return self._resolve(ref.name, ref.path)

    def _bind(self, condition: ast.Condition) -> ast.Condition:
        return bind(condition, self._resolve)

    def _rows(self, ref: ast.VarRef) -> list[Any]:
        value = self._value(ref)
        if isinstance(value, list):
            return value
        return [] if value is None else [value]

    def _endpoint(self, endpoint: ast.Endpoint) -> tuple[list[str], list[str]]:
        """Node ids of an endpoint, and the caps hit while finding them."""
        match endpoint:
            case ast.EndpointId(node_id):
                if self.graph.get_node(node_id) is None:
                    raise GaslError(f"no node has id {node_id!r} (ids are case-sensitive)")
                return [node_id], []
            case ast.EndpointVar(ref):
                return node_ids(self._value(ref)), []
            case ast.EndpointWhere(where):
                found = self.graph.find_nodes(
                    self._bind(where), None, caps=self.caps, deadline=self._deadline
                )
                return [str(n["id"]) for n in found.items], found.caps_hit
        raise TypeError(f"not an endpoint: {endpoint!r}")

    def _found(self, found: Found, where: ast.Condition | None = None) -> _Outcome:
        detail: dict[str, Any] = {"examined": found.examined, "used_index": found.used_index}
        if not found.items and where is not None:
            unknown = sorted(fields_of(where) - self.graph.attribute_names())
            if unknown:
                known = ", ".join(sorted(self.graph.attribute_names()))
                detail["hint"] = f"no item has field(s) {', '.join(unknown)}; fields: {known}"
        return _Outcome(found.items, caps_hit=list(found.caps_hit), detail=detail)

    # --- the commands
    async def _dispatch(self, command: ast.Command) -> _Outcome:
        match command:
            case ast.Declare(key, kind, description):
                changed = self.state.declare(key, kind, description)
                return _Outcome(count=1, detail={"changed": changed, "version": self.state.version})
            case ast.FindItems("nodes", where, limit):
                bound = None if where is None else self._bind(where)
                found = self.graph.find_nodes(bound, limit, caps=self.caps, deadline=self._deadline)
                return self._found(found, where)
            case ast.FindItems("edges", where, limit):
                bound = None if where is None else self._bind(where)
                found = self.graph.find_edges(bound, limit, caps=self.caps, deadline=self._deadline)
                return self._found(found, where)
            case ast.FindPaths():
                return self._find_paths(command)
            case ast.Process(source, instruction):
                model = self._require_model("PROCESS")
                items, meta = await run_process(
                    model, self._value(source), instruction, self.limits, self._model_deadline()
                )
                return _Outcome(
                    items, caps_hit=_excerpt_cut(meta, self.limits), detail={"llm": meta}
                )
            case ast.Update(key, source, mode):
                size = self.state.update(key, self._value(source), mode)
                return _Outcome(count=size, detail={"version": self.state.version})
            case ast.Analyze(key, instruction):
                model = self._require_model("ANALYZE")
                data = self.state.get(key) if self.state.has(key) else self._resolve(key, ())
                answer, meta = await run_analyze(
                    model, key, data, instruction, self.limits, self._model_deadline()
                )
                cut = _excerpt_cut(meta, self.limits)
                return _Outcome(answer, count=1, caps_hit=cut, detail={"llm": meta})
            case ast.RequireExists(ref):
                self._value(ref)
                return _Outcome(count=1)
            case ast.Assert(condition):
                return self._assert(condition, command.text)
            case ast.SetCap(key, value):
                return self._set_cap(key, value)
            case ast.CancelPlan(plan_id):
                self.cancelled.add(plan_id)
                self._cancel_current = plan_id == self._plan_id
                return _Outcome(count=1, detail={"cancelled": plan_id})
            case ast.SelectFields(source, fields, _, names):
                rows = self._taken(source)
                return rows.outcome([_project(row, fields, names) for row in rows])
            case ast.SelectWhere(source, where):
                rows = self._taken(source)
                return rows.outcome(self._matching(rows, where))
            case ast.Count(source, _, None):
                n = size_of(self._value(source))
                return _Outcome(n, count=n)
            case ast.Count(source, _, where):
                rows = self._taken(source)
                n = len(self._matching(rows, where))
                return rows.outcome(n, count=n)
            case ast.Aggregate(source, by, fn, of):
                rows = self._taken(source)
                return rows.outcome(aggregate(rows, by, fn, of))
            case ast.Rank(source, by, descending, limit):
                rows = self._taken(source)
                return rows.outcome(rank(rows, by, descending, limit))
            case ast.Neighbors(start, via, depth, limit, _, direction):
                starts, caps_hit = self._endpoint(start)
                found = self.graph.neighbors(starts, via, depth, limit, **self._walking(direction))
                return self._reached(found, caps_hit)
            case ast.GraphWalk(start, follow, depth, limit, _, direction):
                starts, caps_hit = self._endpoint(start)
                found = self.graph.walk(starts, follow, depth, limit, **self._walking(direction))
                return self._reached(found, caps_hit)
            case ast.Subgraph(start, via, depth, limit, _, direction):
                starts, caps_hit = self._endpoint(start)
                found = self.graph.subgraph(starts, via, depth, limit, **self._walking(direction))
                outcome = self._reached(found, caps_hit)
                outcome.count = found.items[0]["node_count"] if found.items else 0
                return outcome
            case ast.GraphConnect(left, right, via, max_length, limit, _, direction):
                lefts, left_caps = self._endpoint(left)
                rights, right_caps = self._endpoint(right)
                found = self.graph.connect(
                    lefts, rights, via, max_length, limit, **self._walking(direction)
                )
                outcome = self._reached(found, [*left_caps, *right_caps])
                outcome.detail.update({"lefts": len(lefts), "rights": len(rights)})
                return outcome
            case ast.Join(left, right, left_field, right_field):
                pairs, cut = combine.join(
                    self._rows(left),
                    self._rows(right),
                    left_field.path,
                    right_field.path,
                    left.name,
                    right.name,
                    self._deadline,
                )
                return _Outcome(pairs, caps_hit=[] if cut is None else [cut])
            case ast.Merge(sources, on):
                taken = [self._taken(ref) for ref in sources]
                merged, folded = combine.merge(taken, on.path)
                return _cut_short(_Outcome(merged, detail={"folded": folded}), taken)
            case ast.CompareSets(left, right, on):
                taken = [self._taken(left), self._taken(right)]
                compared = combine.compare(*taken, on.path)
                return _cut_short(_Outcome(compared, count=1), taken)
            case ast.AddField(source, name, value):
                bound = bind(value, self._resolve)
                rows = self._taken(source)
                return rows.outcome(
                    [{**combine.row_of(r), name: combine.computed(r, bound)} for r in rows]
                )
            case ast.AddFieldByModel(source, name, instruction):
                model = self._require_model("ADD_FIELD ... USING")
                items, meta = await run_add_field(
                    model,
                    self._rows(source),
                    name,
                    instruction,
                    self.limits,
                    self._model_deadline(),
                )
                return self._asked(items, meta)
            case ast.Classify(source, labels, instruction):
                model = self._require_model("CLASSIFY")
                items, meta = await run_classify(
                    model,
                    self._rows(source),
                    labels,
                    instruction,
                    self.limits,
                    self._model_deadline(),
                )
                return self._asked(items, meta)
            case ast.Show(source, fields, names, limit):
                return self._show(source, fields, names, limit)
            case ast.CreateNodes(source, id_field, entity_type):
                rows = self._taken(source)
                nodes = [node_of(row, id_field.path, entity_type) for row in rows]
                made = self._create_nodes([n for n in nodes if n is not None], len(nodes))
                return _cut_short(made, [rows])
            case ast.CreateEdges(source, source_field, target_field, relation):
                return self._create_edges(source, source_field, target_field, relation)
            case ast.CreateGroups(source, by):
                return self._create_groups(source, by)
        raise GaslError(f"cannot run {type(command).__name__} here")

    def _walking(self, direction: ast.Direction) -> dict[str, Any]:
        return {"caps": self.caps, "deadline": self._deadline, "direction": direction}

    def _reached(self, found: Found, endpoint_caps: list[str]) -> _Outcome:
        outcome = self._found(found)
        outcome.caps_hit = sorted({*endpoint_caps, *outcome.caps_hit})
        return outcome

    def _asked(self, items: list[dict[str, Any]], meta: dict[str, Any]) -> _Outcome:
        """A model step's rows; `partial` when the model saw only some of them."""
        detail: dict[str, Any] = {"llm": meta}
        if meta["input_items"] < meta["input_total"]:
            detail["left_out"] = meta["input_total"] - meta["input_items"]
        return _Outcome(items, caps_hit=_excerpt_cut(meta, self.limits), detail=detail)

    def _show(
        self,
        source: ast.VarRef,
        fields: tuple[ast.Field, ...],
        names: tuple[str, ...],
        limit: int | None,
    ) -> _Outcome:
        rows = self._rows(source)
        shown = min(limit or SHOW_ROWS, MAX_SHOW_ROWS)
        preview = rows[:shown]
        if fields:
            preview = [_project(combine.row_of(row), fields, names) for row in preview]
        detail: dict[str, Any] = {"shown": len(preview), "total": len(rows)}
        if limit is not None and limit > MAX_SHOW_ROWS:
            detail["hint"] = f"SHOW previews at most {MAX_SHOW_ROWS} rows"
        return _Outcome(preview, count=len(rows), detail=detail)

    def _has_node(self, node_id: str) -> bool:
        return self.graph.get_node(node_id) is not None

    def _create_nodes(self, nodes: list[dict[str, Any]], rows: int) -> _Outcome:
        created: dict[str, dict[str, Any]] = {}
        existing: list[str] = []
        for node in nodes:
            if node["id"] in created or self._has_node(node["id"]):
                existing.append(node["id"])
            else:
                created[node["id"]] = node
        self.overlay.nodes.extend(created.values())
        detail: dict[str, Any] = {"created": len(created), "without_id": rows - len(nodes)}
        if existing:
            detail["existing"] = len(existing)
            detail["hint"] = f"ids already in the graph are not created again: {existing[:5]}"
        return _Outcome(list(created.values()), detail=detail)

    def _create_edges(
        self, source: ast.VarRef, source_field: ast.Field, target_field: ast.Field, relation: str
    ) -> _Outcome:
        created: list[dict[str, Any]] = []
        missing: list[str] = []
        skipped = 0
        rows = self._taken(source)
        for row in rows:
            ends = [combine.keys_of(row, f.path) for f in (source_field, target_field)]
            if not all(len(e) == 1 for e in ends):
                missing.append(str(combine.row_of(row).get("id", "?")))
                skipped += 1
                continue
            u, v = (str(e[0]) for e in ends)
            absent = [n for n in (u, v) if not self._has_node(n)]
            if absent:
                missing.extend(absent)
                skipped += 1
                continue
            created.append(edge_of(u, v, relation, row))
        self.overlay.edges.extend(created)
        detail: dict[str, Any] = {"created": len(created)}
        if missing:
            detail["skipped"] = skipped
            detail["hint"] = (
                "an edge needs one existing node id at each end "
                f"(SOURCE {source_field.name}, TARGET {target_field.name}); not found: "
                f"{sorted(set(missing))[:5]}"
            )
        return rows.outcome(created, detail=detail)

    def _create_groups(self, source: ast.VarRef, by: ast.Field) -> _Outcome:
        members: dict[Any, dict[str, None]] = {}
        rows = self._taken(source)
        for row in rows:
            for key in combine.keys_of(row, by.path):
                members.setdefault(key, {}).update(dict.fromkeys(node_ids(row)))
        groups = [
            {
                "id": f"group:{by.name}={key}",
                "entity_type": GROUP_TYPE,
                "key": key,
                "members": list(ids),
                "size": len(ids),
            }
            for key, ids in members.items()
        ]
        nodes = [n for g in groups if (n := node_of(g, ("id",), GROUP_TYPE)) is not None]
        outcome = self._create_nodes(nodes, len(groups))
        links = [
            edge_of(member, group["id"], MEMBER_OF, None)
            for group in outcome.value
            for member in group["members"]
            if self._has_node(member)
        ]
        self.overlay.edges.extend(links)
        return _cut_short(outcome, [rows])

    def _taken(self, source: ast.VarRef) -> _Taken:
        return _Taken(self._rows(source), self._deadline)

    def _matching(self, rows: Iterable[Any], where: ast.Condition) -> list[Any]:
        """The rows meeting `where` (SELECT ... WHERE, COUNT ... WHERE)."""
        bound = self._bind(where)
        return [row for row in rows if evaluate(bound, row)]

    def _set_cap(self, key: str, value: Any) -> _Outcome:
        prefix = "adapter.caps."
        if not key.lower().startswith(prefix):
            raise GaslError(f"SET only changes adapter caps: SET {prefix}<key>=<n>")
        name = key[len(prefix) :].lower()
        self.caps = self.caps.with_value(name, value)
        applied = getattr(self.caps, name)
        detail: dict[str, Any] = {"caps": self.caps.as_dict()}
        if applied == value:
            return _Outcome({"cap": name, "value": applied}, count=1, detail=detail)
        detail["hint"] = f"{name} can be raised to at most {applied}: it is now {applied}"
        return _Outcome(
            {"cap": name, "value": applied, "asked": value},
            count=1,
            caps_hit=[name],
            detail=detail,
        )

    def _model_deadline(self) -> Deadline:
        # A model answer takes longer than a graph command may; it is bounded by the plan.
        return self._clock.plan_deadline()

    def _require_model(self, verb: str) -> GaslModel:
        if self.model is None:
            raise GaslError(f"{verb} needs a model and this executor has none")
        return self.model

    def _find_paths(self, command: ast.FindPaths) -> _Outcome:
        starts, start_caps = self._endpoint(command.start)
        ends, end_caps = self._endpoint(command.end)
        where = None if command.where is None else self._bind(command.where)
        found = self.graph.find_paths(
            starts,
            ends,
            where,
            command.max_length,
            command.limit,
            caps=self.caps,
            deadline=self._deadline,
            direction=command.direction,
            via=command.via,
        )
        outcome = self._found(found)
        outcome.caps_hit = sorted({*start_caps, *end_caps, *found.caps_hit})
        outcome.detail.update({"starts": len(starts), "ends": len(ends)})
        return outcome

    def _assert(self, condition: ast.Condition, text: str) -> _Outcome:
        bare = fields_of(condition)
        if bare:
            raise GaslError(
                f"ASSERT reads variables, not fields: write ${{{sorted(bare)[0]}}} "
                f"or LEN ${{{sorted(bare)[0]}}}"
            )
        if not evaluate(self._bind(condition), None):
            raise GaslError(f"assertion failed: {text}")
        return _Outcome(count=1)


def _project(row: Any, fields: tuple[ast.Field, ...], names: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f, name in zip(fields, names or tuple(f.name for f in fields), strict=True):
        value = lookup(row, f.path)
        out[name] = None if value is MISSING else value
    return out


class _Taken:
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
            combine.kept_out_of_collections(self.taken)
            yield row

    def outcome(self, value: Any, **fields: Any) -> _Outcome:
        return _cut_short(_Outcome(value, **fields), [self])


def _cut_short(outcome: _Outcome, taken: list[_Taken]) -> _Outcome:
    """The outcome of a row command, naming the budget that cut its rows short, if one did."""
    cut = [t for t in taken if t.cap is not None]
    if cut:
        outcome.caps_hit = sorted({*outcome.caps_hit, *(t.cap for t in cut if t.cap)})
        outcome.detail["rows_taken"] = sum(t.taken for t in taken)
        outcome.detail["rows_total"] = sum(len(t.rows) for t in taken)
    return outcome


def _unwind(value: Any) -> list[Any]:
    if value is MISSING or value is None:
        return []
    return value if isinstance(value, list) else [value]


def _sort_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, value)
    return (1, str(value))


def aggregate(
    rows: Iterable[Any], by: ast.Field | None, fn: str, of: ast.Field | None
) -> list[dict[str, Any]]:
    """Group rows (a list-valued BY field puts a row in each of its groups) and reduce."""
    groups: dict[Any, list[Any]] = {}
    for row in rows:
        keys = [None] if by is None else _unwind(lookup(row, by.path))
        for key in keys:
            key = as_value(key) if isinstance(key, dict) else key
            groups.setdefault(key, []).append(row)
    out: list[dict[str, Any]] = []
    for key in sorted(groups, key=_sort_key):
        members = groups[key]
        if fn == "COUNT":
            value: Any = len(members)
        else:
            assert of is not None  # the parser requires OF for every other function
            values = [v for m in members for v in _unwind(lookup(m, of.path))]
            if fn == "COLLECT":
                value = list(dict.fromkeys(str(v) if isinstance(v, dict) else v for v in values))
            else:
                numbers = [
                    v for v in values if isinstance(v, int | float) and not isinstance(v, bool)
                ]
                value = _reduce(fn, numbers)
        out.append({"key": key, "value": value})
    return out


def _reduce(fn: str, numbers: list[float]) -> float | None:
    if not numbers:
        return 0 if fn == "SUM" else None
    if fn == "SUM":
        return sum(numbers)
    if fn == "AVG":
        return sum(numbers) / len(numbers)
    return min(numbers) if fn == "MIN" else max(numbers)


def rank(rows: Iterable[Any], by: ast.Field, descending: bool, limit: int | None) -> list[Any]:
    """Rows sorted by a field (numbers before text); rows without the field go last."""
    present: list[Any] = []
    absent: list[Any] = []
    for row in rows:
        (present if _unwind(lookup(row, by.path)) else absent).append(row)
    present.sort(key=lambda r: _sort_key(lookup(r, by.path)), reverse=descending)
    ranked = present + absent
    return ranked if limit is None else ranked[:limit]


def _excerpt_cut(meta: dict[str, Any], limits: Limits) -> list[str]:
    """The limit that cut a model step's input short, if one did: its answer then covers
    only part of the data, and the record says `partial` so an ON PARTIAL guard can react."""
    if meta["input_items"] >= meta["input_total"]:
        return []
    return ["max_items"] if meta["input_items"] >= limits.max_items else ["max_chars"]


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
