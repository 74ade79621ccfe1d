"""Parser: every command and operator to its AST, and errors a model can act on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from postel.services.gasl import ast
from postel.services.gasl.errors import GaslSyntaxError
from postel.services.gasl.parser import parse, parse_one


def test_declare_with_and_without_description() -> None:
    assert parse_one("DECLARE a.b AS LIST WITH_DESCRIPTION 'people'") == ast.Declare(
        "a.b", "LIST", "people"
    )
    assert parse_one("declare c as counter") == ast.Declare("c", "COUNTER", None)
    assert parse_one("DECLARE d AS DICT").type == "DICT"


def test_find_nodes_and_edges() -> None:
    cmd = parse_one('FIND nodes WHERE entity_type = "PERSON" LIMIT 5 AS people')
    assert cmd == ast.FindItems(
        "nodes",
        ast.Compare(ast.Field(("entity_type",)), "=", ast.Value("PERSON")),
        5,
        "people",
    )
    assert cmd.text == 'FIND nodes WHERE entity_type = "PERSON" LIMIT 5 AS people'
    edges = parse_one("find EDGES where weight >= 2.5 as heavy")
    assert isinstance(edges, ast.FindItems) and edges.kind == "edges"
    assert parse_one("FIND nodes AS everything").where is None


def test_find_paths_endpoints() -> None:
    cmd = parse_one('FIND paths FROM ${a} TO (entity_type = "ORG") WHERE x = 1 MAX_LENGTH 2 AS p')
    assert isinstance(cmd, ast.FindPaths)
    assert cmd.start == ast.EndpointVar(ast.VarRef("a"))
    assert isinstance(cmd.end, ast.EndpointWhere)
    assert (cmd.max_length, cmd.limit, cmd.into) == (2, None, "p")
    assert parse_one('FIND paths FROM "A" TO b AS p').start == ast.EndpointId("A")


def test_llm_and_state_commands() -> None:
    assert parse_one('PROCESS people USING "pair them" AS pairs') == ast.Process(
        ast.VarRef("people"), "pair them", "pairs"
    )
    assert parse_one("UPDATE a.b WITH ${pairs} REPLACE") == ast.Update(
        "a.b", ast.VarRef("pairs"), "REPLACE"
    )
    assert parse_one("UPDATE a WITH pairs").mode == "MERGE"
    assert parse_one('ANALYZE a.b USING "who?" AS answer') == ast.Analyze("a.b", "who?", "answer")


def test_guards_and_control() -> None:
    assert parse_one("REQUIRE EXISTS authors") == ast.RequireExists(ast.VarRef("authors"))
    cmd = parse_one("ASSERT LEN ${authors} > 0")
    assert cmd == ast.Assert(ast.Compare(ast.Len(ast.Binding("authors")), ">", ast.Value(0)))
    on = parse_one("ON EMPTY x THEN FIND nodes AS x")
    assert isinstance(on, ast.On) and on.status == "EMPTY"
    assert isinstance(on.then, ast.FindItems)
    for status in ("ERROR", "PARTIAL", "SCHEMA_MISMATCH"):
        assert parse_one(f"ON {status} x THEN COUNT x AS n").status == status
    block = parse_one(
        "TRY COUNT a AS n; COUNT b AS m CATCH ANY COUNT c AS k FINALLY COUNT d AS j END"
    )
    assert isinstance(block, ast.Try)
    assert [len(block.body), len(block.catch), len(block.final)] == [2, 1, 1]
    assert parse_one("TRY\nCOUNT a AS n\nCATCH ANY\nCOUNT c AS k\nEND").final == ()
    assert parse_one("SET adapter.caps.max_path_length=2") == ast.SetCap(
        "adapter.caps.max_path_length", 2
    )
    assert parse_one('CANCEL PLAN "p-1"') == ast.CancelPlan("p-1")


def test_deterministic_analysis_commands() -> None:
    assert parse_one("SELECT v FIELDS id, a.b AS w") == ast.SelectFields(
        ast.VarRef("v"), (ast.Field(("id",)), ast.Field(("a", "b"))), "w"
    )
    assert isinstance(parse_one("SELECT v WHERE x != 1 AS w"), ast.SelectWhere)
    assert parse_one("COUNT v AS n") == ast.Count(ast.VarRef("v"), "n")
    agg = parse_one("AGGREGATE v BY entity_type WITH avg OF weight AS r")
    assert agg == ast.Aggregate(
        ast.VarRef("v"), ast.Field(("entity_type",)), "AVG", ast.Field(("weight",)), "r"
    )
    assert parse_one("AGGREGATE v WITH COUNT AS r").by is None
    assert parse_one("RANK v BY weight ASC LIMIT 3 AS r") == ast.Rank(
        ast.VarRef("v"), ast.Field(("weight",)), False, 3, "r"
    )
    assert parse_one("RANK v BY weight AS r").descending is True
    assert parse_one('NEIGHBOURS ${v} VIA "author" DEPTH 2 LIMIT 9 AS w') == ast.Neighbors(
        ast.EndpointVar(ast.VarRef("v")), "author", 2, 9, "w"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a = 1", ast.Compare(ast.Field(("a",)), "=", ast.Value(1))),
        ("a == 1", ast.Compare(ast.Field(("a",)), "=", ast.Value(1))),
        ("a != 'x'", ast.Compare(ast.Field(("a",)), "!=", ast.Value("x"))),
        ("a > -1.5", ast.Compare(ast.Field(("a",)), ">", ast.Value(-1.5))),
        ("a >= 2", ast.Compare(ast.Field(("a",)), ">=", ast.Value(2))),
        ("a < 2", ast.Compare(ast.Field(("a",)), "<", ast.Value(2))),
        ("a <= 2", ast.Compare(ast.Field(("a",)), "<=", ast.Value(2))),
        ("a IN [1, 2]", ast.In(ast.Field(("a",)), ast.Value([1, 2]))),
        ("a in (1)", ast.In(ast.Field(("a",)), ast.Value([1]))),
        ("a NOT IN ${xs}", ast.In(ast.Field(("a",)), ast.Binding("xs"), negated=True)),
        ("a CONTAINS 'x'", ast.TextMatch(ast.Field(("a",)), "CONTAINS", ast.Value("x"))),
        ("a starts_with 'x'", ast.TextMatch(ast.Field(("a",)), "STARTS_WITH", ast.Value("x"))),
        ("a ENDS_WITH 'x'", ast.TextMatch(ast.Field(("a",)), "ENDS_WITH", ast.Value("x"))),
        ("a.b.c = TRUE", ast.Compare(ast.Field(("a", "b", "c")), "=", ast.Value(True))),
        ("a = null", ast.Compare(ast.Field(("a",)), "=", ast.Value(None))),
        ("a = ${v.k}", ast.Compare(ast.Field(("a",)), "=", ast.Binding("v", ("k",)))),
    ],
)
def test_condition_operators(text: str, expected: ast.Condition) -> None:
    cmd = parse_one(f"SELECT v WHERE {text} AS w")
    assert isinstance(cmd, ast.SelectWhere)
    assert cmd.where == expected


def test_boolean_precedence_and_parentheses() -> None:
    cmd = parse_one("SELECT v WHERE a = 1 OR b = 2 AND NOT c = 3 AS w")
    assert isinstance(cmd, ast.SelectWhere)
    where = cmd.where
    assert isinstance(where, ast.Or) and isinstance(where.items[1], ast.And)
    assert isinstance(where.items[1].items[1], ast.Not)
    grouped = parse_one("SELECT v WHERE (a = 1 OR b = 2) AND c = 3 AS w")
    assert isinstance(grouped, ast.SelectWhere) and isinstance(grouped.where, ast.And)


def test_keywords_do_not_swallow_names() -> None:
    cmd = parse_one("FIND nodes WHERE notes CONTAINS 'x' AND order_by = 1 AS ascending")
    assert isinstance(cmd, ast.FindItems) and cmd.into == "ascending"


def test_several_commands_and_comments() -> None:
    commands = parse("COUNT a AS n; COUNT b AS m\n# a comment\n\nCOUNT c AS k")
    assert [c.target for c in commands] == ["n", "m", "k"]


def test_error_names_position_expected_and_hint() -> None:
    with pytest.raises(GaslSyntaxError) as info:
        parse('FIND nodes WHERE entity_type = "PERSON" foo')
    err = info.value
    assert (err.line, err.column) == (1, 41)
    assert "AS" in err.expected and "LIMIT" in err.expected
    assert str(err).startswith("line 1, column 41: expected one of")
    assert "got 'foo'" in str(err)
    assert "FIND needs `AS <name>` at the end" in str(err)


def test_error_on_later_line_and_missing_end() -> None:
    with pytest.raises(GaslSyntaxError) as info:
        parse("COUNT a AS n\nDECLARE x AS SET")
    assert (info.value.line, info.value.column) == (2, 14)
    assert info.value.expected == ["LIST|DICT|COUNTER"]
    with pytest.raises(GaslSyntaxError) as missing:
        parse("FIND nodes WHERE a =")
    assert "end of input" in str(missing.value)


def test_unknown_command_and_semantic_errors() -> None:
    with pytest.raises(GaslSyntaxError, match="a command starts with one of"):
        parse("FINDD nodes AS x")
    with pytest.raises(GaslSyntaxError, match=r"needs a value field \(OF <field>\)"):
        parse("AGGREGATE v BY k WITH sum AS r")
    with pytest.raises(GaslSyntaxError, match=r"usage: SET adapter.caps.<key>=<integer>"):
        parse("SET adapter.caps.max_results > 3")
    with pytest.raises(GaslSyntaxError, match="give one command per string"):
        parse_one("COUNT a AS n; COUNT b AS m")


_WORDS = st.sampled_from(
    [
        "FIND",
        "nodes",
        "paths",
        "WHERE",
        "AS",
        "x",
        "=",
        "${x}",
        "'s'",
        "3",
        "(",
        ")",
        "[",
        "]",
        ",",
        "AND",
        "OR",
        "NOT",
        "IN",
        "TRY",
        "CATCH",
        "ANY",
        "END",
        "ON",
        "EMPTY",
        "THEN",
        "LEN",
        "SET",
        "adapter.caps.k",
        "SELECT",
        "FIELDS",
        ";",
        "\n",
        "RANK",
        "BY",
        "AGGREGATE",
        "WITH",
        "sum",
        "OF",
        "@",
        '"',
        "${",
        "-",
        "1e400",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORDS, max_size=12).map(" ".join) | st.text(max_size=40))
def test_random_text_raises_only_syntax_errors(text: str) -> None:
    try:
        parse(text)
    except GaslSyntaxError as err:
        assert err.line >= 1 and err.column >= 1


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        # AS is there: the mistake is what comes before it
        (
            "FIND nodes having entity_type=COUNTRY AS country_nodes",
            "FIND does not take this before `AS <name>`",
        ),
        (
            "COUNT person_nodes unique name AS names",
            "COUNT does not take this before `AS <name>`. Usage: COUNT <var> [WHERE",
        ),
        # inside a block the hint describes the command being written, not the block
        ("TRY FIND nodes AS a CATCH ANY COUNT a b AS n END", "Usage: COUNT <var> [WHERE"),
        ("ON EMPTY a THEN NEIGHBORS a DEPTH x AS n", "usage: NEIGHBORS <endpoint>"),
        # an unknown verb is pointed at the nearest command
        ("TRAVERSE from x AS y", "the nearest is GRAPHWALK: GRAPHWALK FROM <endpoint>"),
        (
            "GRAPHPATTERN (a)-[r]->(b) AS y",
            "GRAPHPATTERN is not GASL. GASL has no pattern matching",
        ),
        # a new verb's hint quotes its own usage
        ("JOIN a b AS c", "usage: JOIN <var> WITH <var> ON <field>"),
        ("CLASSIFY people INTO positive AS kinds", "text goes in double quotes. Usage: CLASSIFY"),
        ("FINDE nodes AS x", "the nearest is FIND"),
    ],
)
def test_hints_point_at_the_real_mistake(text: str, hint: str) -> None:
    with pytest.raises(GaslSyntaxError) as info:
        parse(text)
    assert hint in info.value.hint


def test_every_example_in_the_command_reference_parses() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs/GASL.md").read_text(encoding="utf-8")
    reference = text[text.index("## Commands") : text.index("## Time budgets")]
    blocks = re.findall(r"```\n(.*?)```", reference, re.DOTALL)
    assert len(blocks) > 20
    for block in blocks:
        assert parse(block), block
