"""What a command sees while it runs: the graph (with the job's overlay), the variables and
the state, the caps, the command's deadline and the model. The command handlers
(services/gasl/commands/) read and write through a Scope; GaslExecutor is one, and adds the
plan loop and the records."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from postel.services.gasl import ast
from postel.services.gasl.budget import Deadline, PlanClock, TimeBudget
from postel.services.gasl.conditions import bind, evaluate, fields_of
from postel.services.gasl.context import ContextStore
from postel.services.gasl.engines.caps import Caps
from postel.services.gasl.engines.protocol import Found, GraphAdapter, OverlayView
from postel.services.gasl.errors import GaslError
from postel.services.gasl.llm_steps import GaslModel, Limits
from postel.services.gasl.outcome import CommandOutcome, Taken
from postel.services.gasl.overlay import Overlay
from postel.services.gasl.state import StateStore


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


class Scope:
    """One job's graph, variables, state, caps, budget and model, as commands use them."""

    def __init__(
        self,
        adapter: GraphAdapter,
        state: StateStore,
        model: GaslModel | None,
        context: ContextStore,
        limits: Limits,
        caps: Caps,
        budget: TimeBudget,
        stop: threading.Event | None,
        bulk: Callable[[], None] | None = None,
    ) -> None:
        self.adapter = adapter
        self.state = state
        self.model = model
        self.context = context
        self.limits = limits
        self.caps = caps
        self.budget = budget
        self.stop = stop
        self.cancelled: set[str] = set()
        self.overlay = Overlay.from_dict(state.overlay)
        self.plan_id = ""
        # set by a CANCEL of the running plan: the plan ends after that command
        self.cancel_current = False
        self.bulk = bulk
        self.clock = PlanClock(budget, stop=stop, bulk=bulk)
        self.deadline = self.clock.command_deadline()
        self._view: OverlayView | None = None

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

    def has_node(self, node_id: str) -> bool:
        return self.graph.get_node(node_id) is not None

    # --- variables
    def resolve(self, name: str, path: tuple[str, ...]) -> Any:
        """A context variable's value, else a declared state key's; BindingError if neither."""
        if self.context.exists(name):
            return self.context.get(name, path)
        dotted = ".".join((name, *path))
        if self.state.has(dotted):
            return self.state.get(dotted)
        return self.context.get(name, path)  # raises BindingError naming what exists

    def value(self, ref: ast.VarRef) -> Any:
        return self.resolve(ref.name, ref.path)

    def rows(self, ref: ast.VarRef) -> list[Any]:
        """A variable as rows: a list as it is, one value as one row, null as none."""
        value = self.value(ref)
        if isinstance(value, list):
            return value
        return [] if value is None else [value]

    def taken(self, ref: ast.VarRef) -> Taken:
        return Taken(self.rows(ref), self.deadline)

    def bind(self, condition: ast.Condition) -> ast.Condition:
        return bind(condition, self.resolve)

    def matching(self, rows: Iterable[Any], where: ast.Condition) -> list[Any]:
        """The rows meeting `where` (SELECT ... WHERE, COUNT ... WHERE)."""
        bound = self.bind(where)
        return [row for row in rows if evaluate(bound, row)]

    # --- the graph
    def endpoint(self, endpoint: ast.Endpoint) -> tuple[list[str], list[str]]:
        """Node ids of an endpoint, and the caps hit while finding them."""
        match endpoint:
            case ast.EndpointId(node_id):
                if not self.has_node(node_id):
                    raise GaslError(f"no node has id {node_id!r} (ids are case-sensitive)")
                return [node_id], []
            case ast.EndpointVar(ref):
                return node_ids(self.value(ref)), []
            case ast.EndpointWhere(where):
                found = self.graph.find_nodes(
                    self.bind(where), None, caps=self.caps, deadline=self.deadline
                )
                return [str(n["id"]) for n in found.items], found.caps_hit
        raise TypeError(f"not an endpoint: {endpoint!r}")

    def walking(self, direction: ast.Direction) -> dict[str, Any]:
        """The arguments every walk of the graph takes from the scope."""
        return {"caps": self.caps, "deadline": self.deadline, "direction": direction}

    def found(self, found: Found, where: ast.Condition | None = None) -> CommandOutcome:
        """A search's outcome; when it found nothing, a hint naming fields no item has."""
        detail: dict[str, Any] = {"examined": found.examined, "used_index": found.used_index}
        if not found.items and where is not None:
            unknown = sorted(fields_of(where) - self.graph.attribute_names())
            if unknown:
                known = ", ".join(sorted(self.graph.attribute_names()))
                detail["hint"] = f"no item has field(s) {', '.join(unknown)}; fields: {known}"
        return CommandOutcome(found.items, caps_hit=list(found.caps_hit), detail=detail)

    def reached(self, found: Found, endpoint_caps: list[str]) -> CommandOutcome:
        """A walk's outcome, naming the caps hit finding its endpoints too."""
        outcome = self.found(found)
        outcome.caps_hit = sorted({*endpoint_caps, *outcome.caps_hit})
        return outcome

    # --- the model
    def require_model(self, verb: str) -> GaslModel:
        if self.model is None:
            raise GaslError(f"{verb} needs a model and this executor has none")
        return self.model

    def model_deadline(self) -> Deadline:
        # A model answer takes longer than a graph command may; it is bounded by the plan.
        return self.clock.plan_deadline()
