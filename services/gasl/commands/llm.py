"""The commands that ask the model: PROCESS, ANALYZE, ADD_FIELD ... USING and CLASSIFY. Each
sends a bounded excerpt (Limits) and is bounded by the plan's deadline, not the command's."""

from __future__ import annotations

from typing import Any

from postel.services.gasl import ast
from postel.services.gasl.commands.table import Handlers
from postel.services.gasl.llm_steps import (
    Limits,
    run_add_field,
    run_analyze,
    run_classify,
    run_process,
)
from postel.services.gasl.outcome import CommandOutcome
from postel.services.gasl.scope import Scope


def excerpt_cut(meta: dict[str, Any], limits: Limits) -> list[str]:
    """The limit that cut a model step's input short, if one did: its answer then covers
    only part of the data, and the record says `partial` so an ON PARTIAL guard can react."""
    if meta["input_items"] >= meta["input_total"]:
        return []
    return ["max_items"] if meta["input_items"] >= limits.max_items else ["max_chars"]


def _asked(scope: Scope, items: list[dict[str, Any]], meta: dict[str, Any]) -> CommandOutcome:
    """A per-row model step's rows; `partial` when the model saw only some of them."""
    detail: dict[str, Any] = {"llm": meta}
    if meta["input_items"] < meta["input_total"]:
        detail["left_out"] = meta["input_total"] - meta["input_items"]
    return CommandOutcome(items, caps_hit=excerpt_cut(meta, scope.limits), detail=detail)


async def process(scope: Scope, command: ast.Process) -> CommandOutcome:
    model = scope.require_model("PROCESS")
    items, meta = await run_process(
        model,
        scope.value(command.source),
        command.instruction,
        scope.limits,
        scope.model_deadline(),
    )
    return CommandOutcome(items, caps_hit=excerpt_cut(meta, scope.limits), detail={"llm": meta})


async def analyze(scope: Scope, command: ast.Analyze) -> CommandOutcome:
    model = scope.require_model("ANALYZE")
    key = command.key
    data = scope.state.get(key) if scope.state.has(key) else scope.resolve(key, ())
    answer, meta = await run_analyze(
        model, key, data, command.instruction, scope.limits, scope.model_deadline()
    )
    cut = excerpt_cut(meta, scope.limits)
    return CommandOutcome(answer, count=1, caps_hit=cut, detail={"llm": meta})


async def add_field_by_model(scope: Scope, command: ast.AddFieldByModel) -> CommandOutcome:
    model = scope.require_model("ADD_FIELD ... USING")
    items, meta = await run_add_field(
        model,
        scope.rows(command.source),
        command.name,
        command.instruction,
        scope.limits,
        scope.model_deadline(),
    )
    return _asked(scope, items, meta)


async def classify(scope: Scope, command: ast.Classify) -> CommandOutcome:
    model = scope.require_model("CLASSIFY")
    items, meta = await run_classify(
        model,
        scope.rows(command.source),
        command.labels,
        command.instruction,
        scope.limits,
        scope.model_deadline(),
    )
    return _asked(scope, items, meta)


HANDLERS: Handlers = {
    ast.Process: process,
    ast.Analyze: analyze,
    ast.AddFieldByModel: add_field_by_model,
    ast.Classify: classify,
}
