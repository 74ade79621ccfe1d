"""The command handlers, one module per family, and the one table the executor runs them
from: each command's handler is looked up by the command's syntax-tree type.

TRY and ON are not here: they run other commands, so the executor's plan loop runs them."""

from __future__ import annotations

import inspect

from postel.services.gasl import ast
from postel.services.gasl.commands import control, create, graph, llm, rows, state
from postel.services.gasl.commands.table import Handlers
from postel.services.gasl.outcome import CommandOutcome
from postel.services.gasl.scope import Scope

FAMILIES = (graph, rows, llm, state, control, create)


# Each family handles its own command types (tests/gasl/test_gasl_handlers.py checks that no
# two claim one and that every command type has a handler).
HANDLERS: Handlers = {kind: run for family in FAMILIES for kind, run in family.HANDLERS.items()}


async def run_command(scope: Scope, command: ast.Command) -> CommandOutcome:
    """Run one command in `scope` by its handler."""
    result = HANDLERS[type(command)](scope, command)
    return await result if inspect.isawaitable(result) else result
