"""The table of command handlers (services/gasl/commands/): every command type the parser
makes has exactly one handler, and the executor runs each command by it."""

from __future__ import annotations

import inspect

import pytest
from gasl_support import small_graph
from postel.services.gasl import ast, commands
from postel.services.gasl.adapters import NetworkXAdapter
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.outcome import Outcome
from postel.services.gasl.scope import Scope

# They run other commands, so the executor's plan loop runs them, not a handler.
RUN_BY_THE_PLAN_LOOP = {ast.Try, ast.On}


def command_types() -> set[type[ast.Command]]:
    return {
        value
        for name, value in vars(ast).items()
        if inspect.isclass(value)
        and issubclass(value, ast.Command)
        and value is not ast.Command
        and not name.startswith("_")
    }


def test_every_command_type_has_one_handler() -> None:
    assert set(commands.HANDLERS) == command_types() - RUN_BY_THE_PLAN_LOOP
    claims = [kind for family in commands.FAMILIES for kind in family.HANDLERS]
    assert len(claims) == len(set(claims)), "two families handle the same command type"


async def test_the_executor_runs_a_command_by_its_handler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[Scope, ast.Command]] = []

    def counted(scope: Scope, command: ast.Command) -> Outcome:
        seen.append((scope, command))
        return Outcome([1, 2, 3], detail={"by": "the table"})

    monkeypatch.setitem(commands.HANDLERS, ast.Count, counted)
    executor = GaslExecutor(NetworkXAdapter.from_graph(small_graph()))
    (record,) = await executor.execute("COUNT anything AS n")
    assert (record.status, record.count, record.detail) == ("success", 3, {"by": "the table"})
    assert executor.context.get("n") == [1, 2, 3]
    assert [(scope, type(command)) for scope, command in seen] == [(executor, ast.Count)]
