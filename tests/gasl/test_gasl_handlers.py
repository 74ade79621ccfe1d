"""The table of command handlers (services/gasl/commands/): every command type the parser
makes has exactly one handler, and the executor runs each command by it."""

from __future__ import annotations

import inspect

import pytest
from postel.services.gasl import ast, commands
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.outcome import CommandOutcome
from postel.services.gasl.scope import Scope
from support.gasl import small_graph

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

    def counted(scope: Scope, command: ast.Command) -> CommandOutcome:
        seen.append((scope, command))
        return CommandOutcome([1, 2, 3], detail={"by": "the table"})

    monkeypatch.setitem(commands.HANDLERS, ast.Count, counted)
    executor = GaslExecutor(NetworkXAdapter.from_graph(small_graph()))
    (record,) = await executor.execute("COUNT anything AS n")
    assert (record.status, record.count, record.detail) == ("success", 3, {"by": "the table"})
    assert executor.context.get("n") == [1, 2, 3]
    assert [(scope, type(command)) for scope, command in seen] == [(executor, ast.Count)]


def plan(*commands: str) -> dict[str, object]:
    return {"plan_id": "p", "why": "", "commands": list(commands)}


@pytest.mark.parametrize("bug", [TypeError, KeyError, ValueError, AttributeError])
async def test_a_bug_in_a_handler_propagates_instead_of_becoming_a_record(
    monkeypatch: pytest.MonkeyPatch, bug: type[Exception]
) -> None:
    def broken(scope: Scope, command: ast.Command) -> CommandOutcome:
        raise bug("a bug in postel, not in the plan")

    monkeypatch.setitem(commands.HANDLERS, ast.Count, broken)
    executor = GaslExecutor(NetworkXAdapter.from_graph(small_graph()))
    with pytest.raises(bug, match="a bug in postel"):
        await executor.execute_plan(plan('FIND nodes WHERE id = "ADA" AS a', "COUNT a AS n"))


@pytest.mark.parametrize(
    ("command", "error"),
    [
        (
            "SET adapter.caps.bogus=3",
            "unknown cap 'bogus'; caps are max_results, max_path_length, max_paths, "
            "max_expansions, max_depth",
        ),
        ("SET adapter.caps.max_depth=0", "cap max_depth needs a positive integer, got 0"),
        ("SET adapter.caps.max_depth=1.5", "cap max_depth needs a positive integer, got 1.5"),
        (
            # a COMPARE result is a record without an id: no group key
            "AGGREGATE pairs BY c WITH COUNT AS groups",
            'AGGREGATE ... BY c: a row\'s c holds {"both": ["ADA", "BOB", "CY"], '
            '"only_left": [], "only_right": [], "left_count": 4, "right_count": 4, '
            '"jaccard": 1.0}, which cannot be a group key (only text, numbers and records '
            "with an id can); group BY one of its fields instead, e.g. BY c.<field>",
        ),
    ],
)
async def test_bad_input_gives_an_error_record_naming_what_was_wrong(
    command: str, error: str
) -> None:
    executor = GaslExecutor(NetworkXAdapter.from_graph(small_graph()))
    result = await executor.execute_plan(
        plan(
            'FIND nodes WHERE entity_type = "PERSON" AS people',
            "COMPARE people AND people ON id AS c",
            "JOIN c AND c ON jaccard = jaccard AS pairs",
            command,
        )
    )
    *setup, record = result.records
    assert [r.status for r in setup] == ["success"] * 3
    assert (record.command, record.status, record.error) == (command, "error", error)
