"""The generic visitors of the syntax tree (ast.walk, ast.transform) and what is built on
them: binding `${var}` (conditions.bind) and naming the fields a condition reads."""

from __future__ import annotations

from typing import Any

import pytest
from postel.services.gasl import ast
from postel.services.gasl.conditions import bind, fields_of
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.errors import BindingError
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.parser import parse
from support.gasl import small_graph


def condition(text: str) -> ast.Condition:
    (command,) = parse(f"SELECT rows WHERE {text} AS out")
    assert isinstance(command, ast.SelectWhere)
    return command.where


def test_walk_yields_every_node_parents_first_in_field_order() -> None:
    where = condition('a = 1 AND (NOT b CONTAINS "x" OR LEN c > ${n})')
    kinds = [type(node).__name__ for node in ast.walk(where)]
    assert kinds == [
        "And",
        "Compare",
        "Field",
        "Value",
        "Or",
        "Not",
        "TextMatch",
        "Field",
        "Value",
        "Compare",
        "Len",
        "Field",
        "Binding",
    ]


def test_walk_goes_into_commands_and_their_blocks() -> None:
    (block,) = parse(
        'TRY FIND nodes WHERE entity_type = "PERSON" AS p '
        'CATCH ANY COUNT p WHERE id = "ADA" AS n END'
    )
    names = [n.name for n in ast.walk(block) if isinstance(n, ast.Field)]
    assert names == ["entity_type", "id"]
    assert [type(n).__name__ for n in ast.walk(block) if isinstance(n, ast.Command)] == [
        "Try",
        "FindItems",
        "Count",
    ]


def test_walk_does_not_enter_a_value_holding_data() -> None:
    # a bound value may be anything a variable held; it is data, not syntax
    value = ast.Value((ast.Field(("inside",)),))
    assert list(ast.walk(ast.Compare(ast.Field(("a",)), "=", value))) == [
        ast.Compare(ast.Field(("a",)), "=", value),
        ast.Field(("a",)),
        value,
    ]


def test_transform_rebuilds_only_the_changed_path() -> None:
    where = condition('a = 1 AND (b = 2 OR NOT c = "x")')
    renamed = ast.transform(where, lambda n: ast.Field(("z",)) if n == ast.Field(("c",)) else n)
    assert renamed == condition('a = 1 AND (b = 2 OR NOT z = "x")')
    assert isinstance(where, ast.And) and isinstance(renamed, ast.And)
    assert renamed.items[0] is where.items[0]  # an untouched subtree is shared
    assert ast.transform(where, lambda n: n) is where


def test_transform_does_not_visit_inside_a_replacement() -> None:
    seen: list[Any] = []

    def replace_len(node: Any) -> Any:
        seen.append(node)
        return ast.Value(0) if isinstance(node, ast.Len) else node

    assert ast.transform(condition("LEN tags > 1"), replace_len) == ast.Compare(
        ast.Value(0), ">", ast.Value(1)
    )
    assert ast.Field(("tags",)) not in seen


def test_transform_keeps_a_commands_text() -> None:
    (command,) = parse("FIND nodes WHERE a = ${x} AS found")
    bound = ast.transform(command, lambda n: ast.Value(7) if isinstance(n, ast.Binding) else n)
    assert isinstance(bound, ast.FindItems)
    assert bound.where == ast.Compare(ast.Field(("a",)), "=", ast.Value(7))
    assert bound.text == command.text


def resolver(values: dict[str, Any]) -> Any:
    def resolve(name: str, path: tuple[str, ...]) -> Any:
        if name not in values:
            raise BindingError(f"no variable {name}")
        return values[name]

    return resolve


def test_bind_replaces_bindings_and_their_sizes_at_any_depth() -> None:
    people = [{"id": "ADA"}, {"id": "BOB"}]
    where = condition('NOT (id IN ${people} OR LEN ${people} > LEN tags) AND name = "x"')
    assert bind(where, resolver({"people": people})) == condition(
        'NOT (id IN ["ADA", "BOB"] OR 2 > LEN tags) AND name = "x"'
    )
    with pytest.raises(BindingError, match="no variable people"):
        bind(where, resolver({}))


def test_bind_of_an_operand() -> None:
    resolve = resolver({"v": "abc"})
    assert bind(ast.Len(ast.Binding("v")), resolve) == ast.Value(3)
    assert bind(ast.Len(ast.Len(ast.Binding("v"))), resolve) == ast.Len(ast.Value(3))
    assert bind(ast.Field(("a",)), resolve) == ast.Field(("a",))


def test_fields_of_names_each_field_read_once() -> None:
    assert fields_of(condition('a.b = 1 OR (NOT LEN c > ${n} AND a.b IN ["x"])')) == {"a.b", "c"}
    assert fields_of(None) == set()


async def test_add_field_reads_the_size_of_a_variable() -> None:
    # ADD_FIELD binds `LEN ${v}` as conditions do (it used to fail as an unbound variable)
    executor = GaslExecutor(NetworkXAdapter.from_graph(small_graph()))
    plan = {
        "plan_id": "p",
        "why": "",
        "commands": [
            'FIND nodes WHERE entity_type = "PERSON" AS people',
            "ADD_FIELD people FIELD n = LEN ${people} AS sized",
        ],
    }
    records = (await executor.execute_plan(plan)).records
    assert [r.status for r in records] == ["success", "success"]
    assert {row["n"] for row in records[1].rows} == {records[0].count}
