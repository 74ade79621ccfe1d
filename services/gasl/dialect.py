"""The spellings models write for GASL commands, rewritten to the canonical text.

Models trained on other graph-reasoning prompts write the same commands differently:
`FIND nodes with entity_type=COUNTRY AS c`, `PROCESS p with instruction: first names AS f`,
`RANK x BY n order desc AS top`, `ON EMPTY x do ...`, `UPDATE k WITH x operation: append`,
`COUNT x where ok = true AS n`, `COUNT x group by f AS n`, `REQUIRE x`, `TRY ... CATCH ...`
without ANY or END, `GRAPHWALK from x follow r depth 2`, `SUBGRAPH around x radius 1`,
`CLASSIFY x with <instruction> AS y`, `ADD_FIELD x field: n = ... AS y`. A command with no
`AS` (GRAPHWALK, SUBGRAPH) gets one named after its start variable, shown in its record.
Each rule below turns one such form into the canonical command, and touches nothing else:
a text that already parses is never rewritten, and a form that could mean two things
(`SET x = 5`: a variable or a cap?) is left to fail with its hint.

The parser tries the canonical grammar first and this only when that fails; a command read
through a rule keeps what the model wrote (`Command.written`) beside its canonical text,
and the execution record and the next round's prompt show both, so the model converges on
the canonical spelling.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

_FLAGS = re.IGNORECASE


def _quote_bare(value: str) -> str:
    """A comparison's right side: numbers, booleans, null, quoted strings and ${bindings}
    stay; a bare word becomes a string (`COUNTRY` -> "COUNTRY")."""
    value = value.strip()
    if re.fullmatch(r"-?\d+(\.\d+)?|true|false|null|\$\{[^}]*\}|\".*\"|'.*'", value, _FLAGS):
        return value
    return json.dumps(value)


def _with_pairs(match: re.Match[str]) -> str:
    pairs = re.split(r"\s+and\s+", match.group("pairs"), flags=_FLAGS)
    conditions = []
    for pair in pairs:
        found = re.fullmatch(r"\s*([\w.]+)\s*(!=|>=|<=|=|>|<|:)\s*(.+?)\s*", pair)
        if found is None:
            return match.group(0)  # not a list of k=v: leave it to the parser's error
        field, op, value = found.groups()
        conditions.append(f"{field} {'=' if op == ':' else op} {_quote_bare(value)}")
    return f"{match.group('head')} WHERE {' AND '.join(conditions)}{match.group('tail')}"


def _instruction(match: re.Match[str]) -> str:
    text = match.group("text").strip().strip("\"'")
    return f"{match.group('head')} USING {json.dumps(text)} AS {match.group('into')}"


def _update_mode(match: re.Match[str]) -> str:
    mode = match.group("mode").lower()
    canonical = "REPLACE" if mode in ("replace", "set", "overwrite") else "MERGE"
    return f"{match.group('head')} {canonical}"


def _quoted_list(words: str) -> str:
    names = [
        w.strip().strip("\"'") for w in re.split(r"\s*,\s*|\s+or\s+", words.strip(), flags=_FLAGS)
    ]
    return ", ".join(json.dumps(name) for name in names if name)


# One relation name of a FOLLOW list: quoted whole (its quotes never swallowed into a
# neighbour) or one bare word; anything else after FOLLOW is left to the parser's error.
_RELATION = r"(?:\"[^\"]*\"|'[^']*'|[\w-]+)"


def _graphwalk(match: re.Match[str]) -> str:
    start, into = match.group("start"), match.group("into") or f"{match.group('start')}_walk"
    follow = match.group("follow").strip()
    relations = (
        ""
        if follow.lower() in ("any", "a", "an", "all", "*")
        else f" FOLLOW {_quoted_list(follow)}"
    )
    direction = f" DIRECTION {match.group('direction').lower()}" if match.group("direction") else ""
    depth = f" DEPTH {match.group('depth')}" if match.group("depth") else ""
    limit = f" LIMIT {match.group('limit')}" if match.group("limit") else ""
    return f"GRAPHWALK FROM {start}{direction}{relations}{depth}{limit} AS {into}"


def _try_block(match: re.Match[str]) -> str:
    text = match.group(0)
    text = re.sub(r"\bCATCH\b(?!\s+ANY\b)", "CATCH ANY", text, flags=_FLAGS)
    if not re.search(r"\bEND\s*$", text, _FLAGS):
        text = text.rstrip() + " END"
    return text


# (name, pattern, replacement): each pattern matches one whole statement.
RULES: list[tuple[str, re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (
        "FIND ... with k=v",
        re.compile(
            r"^(?P<head>\s*FIND\s+(?:nodes|edges))\s+with\s+(?P<pairs>.+?)"
            r"(?P<tail>(?:\s+LIMIT\s+\d+)?\s+AS\s+\w+\s*)$",
            _FLAGS,
        ),
        _with_pairs,
    ),
    (
        "PROCESS/ANALYZE ... with instruction: ...",
        re.compile(
            r"^(?P<head>\s*(?:PROCESS|ANALYZE)\s+[\w.${}]+)\s+(?:with|using)\s+instruction\s*:?"
            r"\s*(?P<text>.+?)\s+AS\s+(?P<into>\w+)\s*$",
            _FLAGS,
        ),
        _instruction,
    ),
    (
        "COUNT ... group by f",
        re.compile(
            r"^\s*COUNT\s+(?P<var>[\w.${}]+)\s+group\s+by\s+(?P<field>[\w.]+)\s+AS\s+(?P<into>\w+)\s*$",
            _FLAGS,
        ),
        r"AGGREGATE \g<var> BY \g<field> WITH COUNT AS \g<into>",
    ),
    (
        "RANK ... order asc|desc",
        re.compile(
            r"^(?P<head>\s*RANK\s+.+?)\s+order\s+(?P<order>asc|desc)\b(?P<tail>.*)$", _FLAGS
        ),
        lambda m: f"{m.group('head')} {m.group('order').upper()}{m.group('tail')}",
    ),
    (
        "ON <status> <var> do <command>",
        re.compile(r"^(?P<head>\s*ON\s+\w+\s+[\w.${}]+)\s+do\s+(?P<rest>.+)$", _FLAGS),
        r"\g<head> THEN \g<rest>",
    ),
    (
        "UPDATE ... operation: <mode>",
        re.compile(
            r"^(?P<head>\s*UPDATE\s+\S+\s+WITH\s+\S+)\s+(?:operation|mode)\s*[:=]?\s*"
            r"(?P<mode>merge|replace|append|add|union|set|overwrite)\s*$",
            _FLAGS,
        ),
        _update_mode,
    ),
    (
        "REQUIRE <var>",
        re.compile(r"^\s*REQUIRE\s+(?!EXISTS\b)(?P<var>[\w.]+)\s*$", _FLAGS),
        r"REQUIRE EXISTS \g<var>",
    ),
    (
        "REQUIRE/ASSERT <var> count <op> <n>",
        re.compile(
            r"^\s*(?:REQUIRE|ASSERT)\s+(?P<var>\w+)\s*(?:\.\s*)?(?:count|size|length|len)\s*"
            r"(?P<op>!=|>=|<=|=|>|<)\s*(?P<n>\d+)\s*$",
            _FLAGS,
        ),
        r"ASSERT LEN ${\g<var>} \g<op> \g<n>",
    ),
    (
        "GRAPHWALK from x follow r1, r2 depth n",
        re.compile(
            r"^\s*GRAPHWALK\s+from\s+(?P<start>[\w${}.]+)"
            r"(?:\s+direction\s+(?P<direction>out|in|both))?"
            rf"\s+follow\s+(?P<follow>{_RELATION}(?:\s*(?:,|\bor\b)\s*{_RELATION})*)"
            r"(?:\s+depth\s+(?P<depth>\d+))?(?:\s+limit\s+(?P<limit>\d+))?"
            r"(?:\s+AS\s+(?P<into>\w+))?\s*$",
            _FLAGS,
        ),
        _graphwalk,
    ),
    (
        "SUBGRAPH around x radius n",
        re.compile(
            r"^\s*SUBGRAPH\s+around\s+(?P<start>[\w${}.]+)\s+radius\s+(?P<depth>\d+)"
            r"(?:\s+AS\s+(?P<into>\w+))?\s*$",
            _FLAGS,
        ),
        lambda m: (
            f"SUBGRAPH FROM {m.group('start')} DEPTH {m.group('depth')} "
            f"AS {m.group('into') or m.group('start') + '_subgraph'}"
        ),
    ),
    (
        "CLASSIFY x with <instruction>",
        re.compile(
            r"^(?P<head>\s*CLASSIFY\s+[\w.${}]+)\s+(?:with|using|by)\s+(?:instruction\s*:?\s*)?"
            r"(?P<text>.+?)\s+AS\s+(?P<into>\w+)\s*$",
            _FLAGS,
        ),
        _instruction,
    ),
    (
        "ADD_FIELD x field: name = ...",
        re.compile(
            r"^(?P<head>\s*ADD_FIELD\s+[\w.${}]+)\s+field\s*:\s*(?P<rest>.+\s+AS\s+\w+\s*)$", _FLAGS
        ),
        r"\g<head> FIELD \g<rest>",
    ),
    (
        "TRY ... CATCH ... without ANY or END",
        re.compile(r"^\s*TRY\b.*\bCATCH\b.*$", _FLAGS | re.DOTALL),
        _try_block,
    ),
]


def canonical(text: str) -> tuple[str, list[str]]:
    """The text with every liberal form rewritten, statement by statement (lines and `;`),
    and the names of the rules that applied."""
    applied: list[str] = []
    # a TRY block is one statement whatever its separators
    block = re.match(r"^\s*TRY\b", text, _FLAGS)
    statements = [text] if block else re.split(r"(?<=[\n;])", text)
    out = []
    for statement in statements:
        body = statement.rstrip("\n;")
        ending = statement[len(body) :]
        for name, pattern, replacement in RULES:
            rewritten = pattern.sub(replacement, body)
            if rewritten != body:
                applied.append(name)
                body = rewritten
        out.append(body + ending)
    return "".join(out), applied
