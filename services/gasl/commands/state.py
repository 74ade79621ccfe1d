"""The commands that change the job's persistent state: DECLARE and UPDATE."""

from __future__ import annotations

from postel.services.gasl import ast
from postel.services.gasl.commands.table import Handlers
from postel.services.gasl.outcome import CommandOutcome
from postel.services.gasl.scope import Scope


def declare(scope: Scope, command: ast.Declare) -> CommandOutcome:
    changed = scope.state.declare(command.key, command.type, command.description)
    return CommandOutcome(count=1, detail={"changed": changed, "version": scope.state.version})


def update(scope: Scope, command: ast.Update) -> CommandOutcome:
    size = scope.state.update(command.key, scope.value(command.source), command.mode)
    return CommandOutcome(count=size, detail={"version": scope.state.version})


HANDLERS: Handlers = {ast.Declare: declare, ast.Update: update}
