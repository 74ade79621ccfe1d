"""GASL text -> typed AST, with syntax errors worded so a model can fix its own command."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, cast

from lark import Lark, Token, Transformer, Tree, v_args
from lark import __version__ as lark_version
from lark.exceptions import (
    LarkError,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)
from postel.services.gasl import ast, dialect
from postel.services.gasl.dialect.tokens import unquote
from postel.services.gasl.errors import GaslSyntaxError

# How each command is written; the hint of a syntax error quotes the one being typed.
USAGE: dict[str, str] = {
    "DECLARE": 'DECLARE <key> AS LIST|DICT|COUNTER [WITH_DESCRIPTION "<text>"]',
    "FIND": "FIND nodes|edges [WHERE <condition>] [LIMIT <n>] AS <name>, or "
    'FIND paths FROM <endpoint> TO <endpoint> [DIRECTION out|in|both] [VIA "<keyword>"] '
    "[WHERE <condition>] "
    "[MAX_LENGTH <n>] [LIMIT <n>] AS <name>",
    "PROCESS": 'PROCESS <var> USING "<instruction>" AS <name>',
    "UPDATE": "UPDATE <key> WITH <var> [MERGE|REPLACE]",
    "ANALYZE": 'ANALYZE <key> USING "<instruction>" AS <name>',
    "REQUIRE": "REQUIRE EXISTS <var>",
    "ASSERT": "ASSERT <condition>, e.g. ASSERT LEN ${authors} > 0",
    "ON": "ON EMPTY|ERROR|PARTIAL|SCHEMA_MISMATCH <var> THEN <command>",
    "TRY": "TRY <commands> CATCH ANY <commands> [FINALLY <commands>] END",
    "SET": "SET adapter.caps.<key>=<integer>",
    "CANCEL": 'CANCEL PLAN "<plan_id>"',
    "SELECT": "SELECT <var> FIELDS <field>, <name>=<field> AS <name>, or "
    "SELECT <var> WHERE <condition> AS <name>",
    "COUNT": "COUNT <var> [WHERE <condition>] AS <name>",
    "AGGREGATE": "AGGREGATE <var> [BY <field>] WITH COUNT|SUM|AVG|MIN|MAX|COLLECT "
    "[OF <field>] AS <name>",
    "RANK": "RANK <var> BY <field> [ASC|DESC] [LIMIT <n>] AS <name>",
    "NEIGHBORS": 'NEIGHBORS <endpoint> [DIRECTION out|in|both] [VIA "<keyword>"] [DEPTH <n>] '
    "[LIMIT <n>] AS <name>",
    "GRAPHWALK": "GRAPHWALK FROM <endpoint> [DIRECTION out|in|both] "
    '[FOLLOW "<keyword>", "<keyword>"] [DEPTH <n>] [LIMIT <n>] AS <name>',
    "SUBGRAPH": 'SUBGRAPH FROM <endpoint> [DIRECTION out|in|both] [VIA "<keyword>"] '
    "[DEPTH <n>] [LIMIT <n>] AS <name>",
    "GRAPHCONNECT": "GRAPHCONNECT <endpoint> AND <endpoint> [DIRECTION out|in|both] "
    '[VIA "<keyword>"] [MAX_LENGTH <n>] [LIMIT <n>] AS <name>',
    "JOIN": "JOIN <var> WITH <var> ON <field> [= <field>] AS <name>",
    "MERGE": "MERGE <var>, <var> [ON <field>] AS <name>",
    "COMPARE": "COMPARE <var> WITH <var> [ON <field>] AS <name>",
    "ADD_FIELD": "ADD_FIELD <var> FIELD <name> = <value or condition> AS <name>, or "
    'ADD_FIELD <var> FIELD <name> USING "<instruction>" AS <name>',
    "CLASSIFY": 'CLASSIFY <var> [INTO "<label>", "<label>"] [USING "<instruction>"] AS <name>',
    "SHOW": "SHOW <var> [FIELDS <field>, <name>=<field>] [LIMIT <n>]",
    "CREATE_NODES": 'CREATE_NODES FROM <var> [ID <field>] [TYPE "<type>"] AS <name>',
    "CREATE_EDGES": "CREATE_EDGES FROM <var> SOURCE <field> TARGET <field> "
    '[RELATION "<keyword>"] AS <name>',
    "CREATE_GROUPS": "CREATE_GROUPS FROM <var> BY <field> AS <name>",
}

# Verbs models write from other graph languages, and the command that does the nearest thing.
EQUIVALENTS: dict[str, str] = {
    "GRAPHPATTERN": "FIND",
    "MATCH": "FIND",
    "TRAVERSE": "GRAPHWALK",
    "EXPAND": "NEIGHBORS",
    "FILTER": "SELECT",
    "GROUP": "AGGREGATE",
    "SORT": "RANK",
    "UNION": "MERGE",
    "CREATE_NODE": "CREATE_NODES",
    "CREATE_EDGE": "CREATE_EDGES",
    "CREATE_GROUP": "CREATE_GROUPS",
    "PRINT": "SHOW",
    "DISPLAY": "SHOW",
}

# Words after which a new command starts inside one line.
_BLOCK_WORDS = re.compile(r"\b(?:TRY|CATCH\s+ANY|CATCH|FINALLY|END|THEN)\b|;", re.IGNORECASE)

# Terminal names as a reader of the error should see them.
_DISPLAY: dict[str, str] = {
    "NAME": "<name>",
    "BINDING": "${var}",
    "STRING": "<string>",
    "INT": "<integer>",
    "NUMBER": "<number>",
    "COMP_OP": "= != > >= < <=",
    "TEXT_OP": "CONTAINS|STARTS_WITH|ENDS_WITH",
    "STATE_TYPE": "LIST|DICT|COUNTER",
    "ITEM_KIND": "nodes|edges",
    "UPDATE_MODE": "MERGE|REPLACE",
    "ON_STATUS": "EMPTY|ERROR|PARTIAL|SCHEMA_MISMATCH",
    "AGG_COUNT": "COUNT",
    "AGG_FN": "SUM|AVG|MIN|MAX|COLLECT",
    "ORDER": "ASC|DESC",
    "DIRECTION": "out|in|both",
    "_EQ": "=",
    "_LPAR": "(",
    "_RPAR": ")",
    "_LBRACKET": "[",
    "_RBRACKET": "]",
    "_COMMA": ",",
    "_DOT": ".",
    "_SEP": "end of command",
    "$END": "end of input",
}


def _display(terminal: str) -> str:
    return _DISPLAY.get(terminal, terminal.lstrip("_").replace("__ANON", "?"))


def _binding_parts(token: str) -> tuple[str, tuple[str, ...]]:
    name, *path = token[2:-1].strip().split(".")
    return name, tuple(path)


@v_args(meta=True)
class _ToAst(Transformer[Token, Any]):
    """Turns the lark tree into `services.gasl.ast` nodes."""

    def __init__(self, source: str) -> None:
        super().__init__()
        self._source = source

    def _text(self, meta: Any) -> str:
        if getattr(meta, "empty", True):
            return ""
        return " ".join(self._source[meta.start_pos : meta.end_pos].split())

    # --- pieces
    def start(self, meta: Any, items: list[Any]) -> list[ast.Command]:
        return list(items)

    def block(self, meta: Any, items: list[Any]) -> tuple[ast.Command, ...]:
        return tuple(items)

    def key(self, meta: Any, items: list[Token]) -> str:
        return ".".join(str(t) for t in items)

    def field(self, meta: Any, items: list[Token]) -> ast.Field:
        return ast.Field(tuple(str(t) for t in items))

    def var_ref(self, meta: Any, items: list[Token]) -> ast.VarRef:
        token = items[0]
        if token.type == "BINDING":
            name, path = _binding_parts(str(token))
            return ast.VarRef(name, path)
        return ast.VarRef(str(token))

    def literal(self, meta: Any, items: list[Token]) -> ast.Value:
        token = items[0]
        kind = token.type
        if kind == "STRING":
            return ast.Value(unquote(str(token)))
        if kind == "NUMBER":
            text = str(token)
            is_int = text.lstrip("-").isdigit()
            return ast.Value(int(text) if is_int else float(text))
        return ast.Value({"TRUE": True, "FALSE": False, "NULL": None}[kind])

    def binding(self, meta: Any, items: list[Token]) -> ast.Binding:
        name, path = _binding_parts(str(items[0]))
        return ast.Binding(name, path)

    def list_literal(self, meta: Any, items: list[Any]) -> ast.Value:
        return ast.Value([item.value for item in items if item is not None])

    def len_(self, meta: Any, items: list[Any]) -> ast.Len:
        return ast.Len(items[0])

    def compare(self, meta: Any, items: list[Any]) -> ast.Compare:
        op = {"==": "=", "<>": "!="}.get(str(items[1]), str(items[1]))
        return ast.Compare(items[0], op, items[2])

    def in_(self, meta: Any, items: list[Any]) -> ast.In:
        return ast.In(items[0], items[1])

    def not_in(self, meta: Any, items: list[Any]) -> ast.In:
        return ast.In(items[0], items[1], negated=True)

    def text_match(self, meta: Any, items: list[Any]) -> ast.TextMatch:
        return ast.TextMatch(items[0], str(items[1]).upper(), items[2])

    def and_(self, meta: Any, items: list[Any]) -> ast.And:
        flat: list[ast.Condition] = []
        for item in items:
            flat.extend(item.items if isinstance(item, ast.And) else (item,))
        return ast.And(tuple(flat))

    def or_(self, meta: Any, items: list[Any]) -> ast.Or:
        flat: list[ast.Condition] = []
        for item in items:
            flat.extend(item.items if isinstance(item, ast.Or) else (item,))
        return ast.Or(tuple(flat))

    def not_(self, meta: Any, items: list[Any]) -> ast.Not:
        return ast.Not(items[0])

    def endpoint_var(self, meta: Any, items: list[Any]) -> ast.EndpointVar:
        return ast.EndpointVar(items[0])

    def endpoint_id(self, meta: Any, items: list[Token]) -> ast.EndpointId:
        return ast.EndpointId(unquote(str(items[0])))

    def endpoint_where(self, meta: Any, items: list[Any]) -> ast.EndpointWhere:
        return ast.EndpointWhere(items[0])

    # --- commands
    def declare(self, meta: Any, items: list[Any]) -> ast.Declare:
        key, kind, description = items
        text = _maybe_text(description)
        return ast.Declare(key, str(kind).upper(), text, text=self._text(meta))

    def find_items(self, meta: Any, items: list[Any]) -> ast.FindItems:
        kind, where, limit, into = items
        return ast.FindItems(
            str(kind).lower(), where, _int(limit), str(into), text=self._text(meta)
        )

    def find_paths(self, meta: Any, items: list[Any]) -> ast.FindPaths:
        start, end, direction, via, where, max_length, limit, into = items
        return ast.FindPaths(
            start,
            end,
            where,
            _int(max_length),
            _int(limit),
            str(into),
            _direction(direction),
            _maybe_text(via),
            text=self._text(meta),
        )

    def process(self, meta: Any, items: list[Any]) -> ast.Process:
        source, instruction, into = items
        return ast.Process(source, unquote(str(instruction)), str(into), text=self._text(meta))

    def update(self, meta: Any, items: list[Any]) -> ast.Update:
        key, source, mode = items
        return ast.Update(
            key, source, str(mode).upper() if mode else "MERGE", text=self._text(meta)
        )

    def analyze(self, meta: Any, items: list[Any]) -> ast.Analyze:
        key, instruction, into = items
        return ast.Analyze(key, unquote(str(instruction)), str(into), text=self._text(meta))

    def require(self, meta: Any, items: list[Any]) -> ast.RequireExists:
        return ast.RequireExists(items[0], text=self._text(meta))

    def assert_stmt(self, meta: Any, items: list[Any]) -> ast.Assert:
        return ast.Assert(items[0], text=self._text(meta))

    def on_stmt(self, meta: Any, items: list[Any]) -> ast.On:
        status, ref, then = items
        return ast.On(str(status).upper(), ref, then, text=self._text(meta))

    def try_stmt(self, meta: Any, items: list[Any]) -> ast.Try:
        body, catch, final = items
        return ast.Try(body, catch, final or (), text=self._text(meta))

    def set_stmt(self, meta: Any, items: list[Any]) -> ast.SetCap:
        key, value = items
        return ast.SetCap(key, value.value, text=self._text(meta))

    def cancel(self, meta: Any, items: list[Any]) -> ast.CancelPlan:
        return ast.CancelPlan(unquote(str(items[0])), text=self._text(meta))

    def select_fields(self, meta: Any, items: list[Any]) -> ast.SelectFields:
        source, *chosen, into = items
        fields, names = _chosen_fields(chosen)
        return ast.SelectFields(source, fields, str(into), names, text=self._text(meta))

    def select_field(self, meta: Any, items: list[Any]) -> tuple[str | None, ast.Field]:
        name, field = items
        return (None if name is None else str(name)), field

    def select_where(self, meta: Any, items: list[Any]) -> ast.SelectWhere:
        source, where, into = items
        return ast.SelectWhere(source, where, str(into), text=self._text(meta))

    def count(self, meta: Any, items: list[Any]) -> ast.Count:
        source, where, into = items
        return ast.Count(source, str(into), where, text=self._text(meta))

    def aggregate(self, meta: Any, items: list[Any]) -> ast.Aggregate:
        source, by, fn, of, into = items
        return ast.Aggregate(source, by, str(fn).upper(), of, str(into), text=self._text(meta))

    def rank(self, meta: Any, items: list[Any]) -> ast.Rank:
        source, by, order, limit, into = items
        descending = order is None or str(order).upper() == "DESC"
        return ast.Rank(source, by, descending, _int(limit), str(into), text=self._text(meta))

    def neighbors(self, meta: Any, items: list[Any]) -> ast.Neighbors:
        return ast.Neighbors(*_around(items), text=self._text(meta))

    def find_paths_where(self, meta: Any, items: list[Any]) -> ast.FindPaths:
        # the condition picks both ends: paths joining any two nodes that meet it
        where, max_length, limit, into = items
        ends = ast.EndpointWhere(where)
        return ast.FindPaths(
            ends, ends, None, _int(max_length), _int(limit), str(into), text=self._text(meta)
        )

    def strings(self, meta: Any, items: list[Token]) -> tuple[str, ...]:
        return tuple(unquote(str(t)) for t in items)

    def graphwalk(self, meta: Any, items: list[Any]) -> ast.GraphWalk:
        start, direction, follow, depth, limit, into = items
        return ast.GraphWalk(
            start,
            follow or (),
            _int(depth),
            _int(limit),
            str(into),
            _direction(direction),
            text=self._text(meta),
        )

    def subgraph(self, meta: Any, items: list[Any]) -> ast.Subgraph:
        return ast.Subgraph(*_around(items), text=self._text(meta))

    def graphconnect(self, meta: Any, items: list[Any]) -> ast.GraphConnect:
        left, right, direction, via, max_length, limit, into = items
        return ast.GraphConnect(
            left,
            right,
            _maybe_text(via),
            _int(max_length),
            _int(limit),
            str(into),
            _direction(direction),
            text=self._text(meta),
        )

    def join(self, meta: Any, items: list[Any]) -> ast.Join:
        left, right, left_key, right_key, into = items
        left_field = ast.Field(tuple(left_key.split(".")))
        right_field = ast.Field(tuple((right_key or left_key).split(".")))
        return ast.Join(left, right, left_field, right_field, str(into), text=self._text(meta))

    def merge(self, meta: Any, items: list[Any]) -> ast.Merge:
        *sources, on, into = items
        return ast.Merge(tuple(sources), on or _ID, str(into), text=self._text(meta))

    def compare_sets(self, meta: Any, items: list[Any]) -> ast.CompareSets:
        left, right, on, into = items
        return ast.CompareSets(left, right, on or _ID, str(into), text=self._text(meta))

    def field_value(self, meta: Any, items: list[Any]) -> Any:
        return items[0]

    def add_field(self, meta: Any, items: list[Any]) -> ast.AddField:
        source, name, value, into = items
        return ast.AddField(source, str(name), value, str(into), text=self._text(meta))

    def add_field_model(self, meta: Any, items: list[Any]) -> ast.AddFieldByModel:
        source, name, instruction, into = items
        return ast.AddFieldByModel(
            source, str(name), unquote(str(instruction)), str(into), text=self._text(meta)
        )

    def classify(self, meta: Any, items: list[Any]) -> ast.Classify:
        source, labels, instruction, into = items
        return ast.Classify(
            source,
            labels or (),
            _maybe_text(instruction),
            str(into),
            text=self._text(meta),
        )

    def show_fields(self, meta: Any, items: list[Any]) -> list[tuple[str | None, ast.Field]]:
        return list(items)

    def show(self, meta: Any, items: list[Any]) -> ast.Show:
        source, chosen, limit = items
        fields, names = _chosen_fields(chosen or [])
        return ast.Show(source, fields, names, _int(limit), text=self._text(meta))

    def create_nodes(self, meta: Any, items: list[Any]) -> ast.CreateNodes:
        source, id_field, entity_type, into = items
        return ast.CreateNodes(
            source,
            id_field or _ID,
            _maybe_text(entity_type),
            str(into),
            text=self._text(meta),
        )

    def create_edges(self, meta: Any, items: list[Any]) -> ast.CreateEdges:
        source, source_field, target_field, relation, into = items
        return ast.CreateEdges(
            source,
            source_field,
            target_field,
            _maybe_text(relation) or "derived",
            str(into),
            text=self._text(meta),
        )

    def create_groups(self, meta: Any, items: list[Any]) -> ast.CreateGroups:
        source, by, into = items
        return ast.CreateGroups(source, by, str(into), text=self._text(meta))


# What MERGE and COMPARE match on, and CREATE_NODES reads the id from, unless told otherwise.
_ID = ast.Field(("id",))


def _around(items: list[Any]) -> tuple[Any, ...]:
    """NEIGHBORS' and SUBGRAPH's parts in their AST order (ast._Around)."""
    start, direction, via, depth, limit, into = items
    return start, _maybe_text(via), _int(depth), _int(limit), str(into), _direction(direction)


def _maybe_text(token: Token | None) -> str | None:
    return None if token is None else unquote(str(token))


def _chosen_fields(
    chosen: list[tuple[str | None, ast.Field]],
) -> tuple[tuple[ast.Field, ...], tuple[str, ...]]:
    """The fields of SELECT ... FIELDS or SHOW ... FIELDS, and the names they take in the rows
    when any is renamed (`who=id`; none renamed: empty, each keeps its own)."""
    fields = tuple(field for _, field in chosen)
    renamed = any(name is not None for name, _ in chosen)
    return fields, tuple(name or field.name for name, field in chosen) if renamed else ()


def _direction(token: Token | None) -> ast.Direction:
    return "both" if token is None else cast(ast.Direction, str(token).lower())


def _int(token: Token | None) -> int | None:
    return None if token is None else int(str(token))


@cache
def _lark() -> Lark:
    """The parser. Its LALR tables take seconds of CPU to compute, in every process that
    parses GASL, so lark keeps them in the user's cache folder (POSTEL_PARSER_CACHE_DIR, or
    $XDG_CACHE_HOME/postel, or ~/.cache/postel); the file holds the grammar's hash, and a
    stale, torn or unreadable one is computed again. Without a writable folder, no cache."""
    grammar = resources.files("postel.services.gasl").joinpath("grammar.lark").read_text("utf-8")
    options: dict[str, Any] = {"parser": "lalr", "propagate_positions": True}
    folder = _parser_cache_dir()
    if folder is not None:
        options["cache"] = str(folder / f"gasl-lalr-lark{lark_version}.pickle")
    return Lark(grammar, maybe_placeholders=True, **options)


def _parser_cache_dir() -> Path | None:
    chosen = os.environ.get("POSTEL_PARSER_CACHE_DIR")
    if chosen:
        folder = Path(chosen)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        folder = Path(base) / "postel"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK) else None


def _command_at(source: str, error: UnexpectedInput) -> str:
    """The text of the command being written where the error is: a block (TRY, CATCH,
    FINALLY, ON ... THEN) holds several commands, and the hint must describe the right one."""
    lines = source.splitlines()
    line_text = lines[error.line - 1] if lines else ""
    before = line_text[: max(error.column - 1, 0)]
    starts = [m.end() for m in _BLOCK_WORDS.finditer(before)]
    return line_text[starts[-1] if starts else 0 :].strip()


def _hint(source: str, error: UnexpectedInput, expected: list[str]) -> str:
    command = _command_at(source, error)
    words = command.split()
    first = words[0].upper() if words else ""
    first = "NEIGHBORS" if first == "NEIGHBOURS" else first
    if first == "FIND":
        paths = len(words) > 1 and words[1].lower() == "paths"
        usage = USAGE["FIND"].split(", or ")[1 if paths else 0]
    elif first in USAGE:
        usage = USAGE[first]
    else:
        close = difflib.get_close_matches(first, USAGE, 1, 0.5)
        nearest = EQUIVALENTS.get(first) or (close[0] if close else None)
        closest = f"; the nearest is {nearest}: {USAGE[nearest]}" if nearest else ""
        return "a command starts with one of " + ", ".join(USAGE) + closest + "."
    if "AS" in expected and len(expected) <= 4:
        if " AS " in f" {command.upper()} ":
            return f"{first} does not take this before `AS <name>`. Usage: {usage}"
        return f"{first} needs `AS <name>` at the end. Usage: {usage}"
    if expected == ["<string>"]:
        return f"text goes in double quotes. Usage: {usage}"
    if expected == ["OF"]:
        return f"this function needs a value field (OF <field>). Usage: {usage}"
    return f"usage: {usage}"


def _got(error: UnexpectedInput, source: str) -> str:
    if isinstance(error, UnexpectedToken):
        if error.token.type == "$END":
            return "end of input"
        if error.token.type == "_SEP":
            return "end of command"
        return repr(str(error.token))
    if isinstance(error, UnexpectedCharacters):
        return repr(source[error.pos_in_stream : error.pos_in_stream + 12].split("\n")[0])
    return "end of input"


def _expected(error: UnexpectedInput) -> list[str]:
    if isinstance(error, UnexpectedToken) and error.interactive_parser is not None:
        # The LALR table over-approximates; asking the parser gives the exact set.
        names = set(error.interactive_parser.accepts())
    elif isinstance(error, UnexpectedToken | UnexpectedEOF):
        names = set(error.expected)
    elif isinstance(error, UnexpectedCharacters):
        names = set(error.allowed or ())
    else:
        names = set()
    return sorted({_display(name) for name in names})


def parse(source: str) -> list[ast.Command]:
    """Parse one or more commands (separated by newlines or `;`) into AST commands; the
    spellings of services/gasl/dialect/ are read as their canonical commands, each keeping
    what was written.

    Raises GaslSyntaxError, and only that, for any input that is not valid GASL (the error
    of the text as written).
    """
    try:
        return _parse(source)
    except GaslSyntaxError as error:
        # a text nested too deeply to read again keeps the error it has as written
        try:
            rewrite = dialect.canonical(source, parses_as_written)
        except RecursionError:
            raise error from None
        if not rewrite.applied:
            raise _with_refusal(error, rewrite.refusals) from None
        try:
            commands = _parse(rewrite.text)
        except RecursionError:
            raise error from None
        except GaslSyntaxError as later:
            # the rewrite keeps lines; a failure on a later line means the rules mended the
            # line first named, and the mistake left is the later one
            failure = later if later.line > error.line else error
            raise _with_refusal(failure, rewrite.refusals) from None
    # a command whose canonical text is not in the source was written another way
    flat = " ".join(source.split())
    return [c if c.text in flat else replace(c, written=source.strip()) for c in commands]


def _with_refusal(error: GaslSyntaxError, refusals: dict[int, str]) -> GaslSyntaxError:
    """The error, with the dialect's own hint when it refused a form on that line."""
    hint = refusals.get(error.line)
    if hint is None:
        return error
    return GaslSyntaxError(error.line, error.column, error.expected, error.got, hint)


def parses_as_written(command: str) -> bool:
    """Is the text canonical GASL as written (no dialect rule read)?"""
    try:
        _parse(command)
    except (GaslSyntaxError, RecursionError):
        return False
    return True


def _parse(source: str) -> list[ast.Command]:
    try:
        tree: Tree[Token] = _lark().parse(source)
        result: list[ast.Command] = _ToAst(source).transform(tree)
        return result
    except VisitError as wrapped:
        raise GaslSyntaxError(1, 1, [], "invalid value", str(wrapped.orig_exc)) from None
    except UnexpectedInput as error:
        expected = _expected(error)
        line = error.line if error.line and error.line > 0 else max(1, source.count("\n") + 1)
        column = error.column if error.column and error.column > 0 else len(source) + 1
        error.line = line
        raise GaslSyntaxError(
            line, column, expected, _got(error, source), _hint(source, error, expected)
        ) from None
    except LarkError as error:
        raise GaslSyntaxError(1, 1, [], "invalid input", str(error)) from None
    except RecursionError:
        raise GaslSyntaxError(1, 1, [], "too deeply nested input", "nest less") from None


def parse_one(command: str) -> ast.Command:
    """Parse text holding exactly one command (which may be a TRY block)."""
    commands = parse(command)
    if len(commands) != 1:
        raise GaslSyntaxError(
            1, 1, ["one command"], f"{len(commands)} commands", "give one command per string"
        )
    return commands[0]
