"""The commands that check or steer the plan rather than compute: REQUIRE, ASSERT, SET (a
cap) and CANCEL (a plan)."""

from __future__ import annotations

from typing import Any

from postel.services.gasl import ast
from postel.services.gasl.commands.table import Handlers
from postel.services.gasl.conditions import evaluate, fields_of
from postel.services.gasl.errors import GaslError
from postel.services.gasl.outcome import CommandOutcome
from postel.services.gasl.scope import Scope

CAP_PREFIX = "adapter.caps."


def require_exists(scope: Scope, command: ast.RequireExists) -> CommandOutcome:
    scope.value(command.ref)  # raises BindingError when it does not exist
    return CommandOutcome(count=1)


def assert_(scope: Scope, command: ast.Assert) -> CommandOutcome:
    bare = sorted(fields_of(command.condition))
    if bare:
        raise GaslError(
            f"ASSERT reads variables, not fields: write ${{{bare[0]}}} or LEN ${{{bare[0]}}}"
        )
    if not evaluate(scope.bind(command.condition), None):
        raise GaslError(f"assertion failed: {command.text}")
    return CommandOutcome(count=1)


def set_cap(scope: Scope, command: ast.SetCap) -> CommandOutcome:
    if not command.key.lower().startswith(CAP_PREFIX):
        raise GaslError(f"SET only changes adapter caps: SET {CAP_PREFIX}<key>=<n>")
    name = command.key[len(CAP_PREFIX) :].lower()
    scope.caps = scope.caps.with_value(name, command.value)
    applied = getattr(scope.caps, name)
    detail: dict[str, Any] = {"caps": scope.caps.as_dict()}
    if applied == command.value:
        return CommandOutcome({"cap": name, "value": applied}, count=1, detail=detail)
    detail["hint"] = f"{name} can be raised to at most {applied}: it is now {applied}"
    return CommandOutcome(
        {"cap": name, "value": applied, "asked": command.value},
        count=1,
        caps_hit=[name],
        detail=detail,
    )


def cancel_plan(scope: Scope, command: ast.CancelPlan) -> CommandOutcome:
    scope.cancelled.add(command.plan_id)
    scope.cancel_current = command.plan_id == scope.plan_id
    return CommandOutcome(count=1, detail={"cancelled": command.plan_id})


HANDLERS: Handlers = {
    ast.RequireExists: require_exists,
    ast.Assert: assert_,
    ast.SetCap: set_cap,
    ast.CancelPlan: cancel_plan,
}
