"""Each reference-dialect form as a function over one command's tokens.

A rule returns the command's tokens with its form made canonical, or None when the form is
not its own; it may raise DialectRefused when the form is one it knows but whose meaning GASL
cannot give exactly. `RULES` applies them in a fixed order, each to what the one before
left, so forms compose: `ON EMPTY p do FIND nodes with entity_type=PERSON` is read by the ON
rule (which reads its command through every rule) and then by the FIND rule.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from postel.services.gasl.dialect.statements import (
    INSTRUCTION_VERBS,
    INSTRUCTION_WORDS,
    instruction_lead,
)
from postel.services.gasl.dialect.tokens import (
    SEMICOLON,
    Token,
    op,
    punct,
    render,
    string,
    string_value,
    word,
)
from postel.services.gasl.errors import GaslError


class DialectRefused(GaslError):
    """A dialect form whose meaning GASL cannot give exactly; `hint` says what to write. It
    never leaves the dialect: the parser reports it as the hint of the syntax error."""

    def __init__(self, hint: str) -> None:
        super().__init__(hint)
        self.hint = hint


@dataclass
class Context:
    """What the rules of one text share: the source (for the exact words of a value), whether
    a text parses as canonical GASL, the rules applied, the variable the command before
    assigned (what `ON EMPTY do ...` without a variable guards) and every name the commands
    before made (variables and declared keys: a plan's variables live for its round only,
    so these are all a command can refer to by name)."""

    source: str
    parses: Callable[[str], bool]
    applied: list[str] = field(default_factory=list)
    previous_target: str | None = None
    bound: set[str] = field(default_factory=set)


Rule = Callable[[list[Token], Context], list[Token] | None]

_AS = word("AS")
# Words that end a clause of a command (what follows a value or a relation list).
_CLAUSE_WORDS = ("AS", "LIMIT", "DEPTH", "DIRECTION", "MAX_LENGTH", "WHERE", "VIA", "TO", "ORDER")
_LITERAL_WORDS = ("TRUE", "FALSE", "NULL")
_COMPARE = ("=", "==", "!=", "<>", ">", ">=", "<", "<=")


MAX_DIALECT_TOKENS = 256
"""A command of more tokens is left as written: no model writes one (a quoted instruction is
one token), and nested forms would make every rule re-read the rest of the command, so a
hostile text of a few kilobytes could hold a worker for minutes."""


def rewrite_command(tokens: list[Token], context: Context) -> list[Token]:
    """One command through every rule in order; a command that parses as written, or one
    longer than MAX_DIALECT_TOKENS, is kept."""
    if len(tokens) > MAX_DIALECT_TOKENS:
        return tokens
    text = render(tokens)
    if context.parses(text):
        return tokens
    for name, rule in RULES:
        rewritten = rule(tokens, context)
        if rewritten is None:
            continue
        rewritten_text = render(rewritten)
        if rewritten_text != text:
            context.applied.append(name)
            tokens, text = rewritten, rewritten_text
    return tokens


# --- helpers


def split_into(tokens: list[Token]) -> tuple[list[Token], Token | None]:
    """The command without its trailing `AS <name>`, and the name (None when absent)."""
    if len(tokens) >= 3 and tokens[-2].is_word("AS") and tokens[-1].kind == "word":
        return tokens[:-2], tokens[-1]
    return tokens, None


def _with_into(body: list[Token], into: Token | None) -> list[Token]:
    return body if into is None else [*body, _AS, into]


def _exact_text(tokens: list[Token], context: Context) -> str:
    """The words as the model wrote them (spacing kept), or joined by spaces when a rule
    made them."""
    if all(t.start >= 0 for t in tokens):
        return context.source[tokens[0].start : tokens[-1].end]
    return " ".join(t.text for t in tokens)


# Fields that hold a node's name (its id, an edge's ends): a bare value compared with one is
# a name, text even where it reads as a number (a YEAR node is named "2010").
_NAME_FIELDS = ("ID", "SOURCE", "TARGET")


def _value(tokens: list[Token], field_token: Token, context: Context) -> Token | None:
    """A comparison's right side: one string, binding, true/false/null or number stays (a
    number compared with a name field becomes its text); anything else written without
    quotes (`Sunken Voice (2010)`, `Dalia Ullund E.`, `O'Brien, Pat`) is one string of
    exactly what was written, whatever it holds. Nothing at all is not a value."""
    if not tokens:
        return None
    if len(tokens) == 1:
        only = tokens[0]
        if only.kind in ("string", "binding") or only.is_word(*_LITERAL_WORDS):
            return only
        if only.kind == "number" and not field_token.is_word(*_NAME_FIELDS):
            return only
    return string(_exact_text(tokens, context))


def _starts_pair(tokens: list[Token], at: int) -> bool:
    """Does a `field op value` (or `field: value`) pair start at tokens[at]?"""
    return (
        at + 1 < len(tokens)
        and tokens[at].kind == "word"
        and tokens[at + 1].text in (":", *_COMPARE)
    )


def _starts_condition(tokens: list[Token], at: int) -> bool:
    """Does a pair, or a bracketed condition opening with one, start at tokens[at]?"""
    if at < len(tokens) and tokens[at].text == "(":
        return _starts_pair(tokens, at + 1)
    return _starts_pair(tokens, at)


def _pair_parts(tokens: list[Token]) -> list[list[Token]]:
    """`k=v and k2=v2` cut at each `and` that a new pair (or a bracketed condition) follows,
    outside brackets: an `and` inside a value (`Tom and Jerry`) is the value's own word."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for at, token in enumerate(tokens):
        depth += token.text in ("(", "[")
        depth -= token.text in (")", "]")
        if depth == 0 and token.is_word("AND") and _starts_condition(tokens, at + 1):
            parts.append([])
        else:
            parts[-1].append(token)
    return parts


def _split_words(tokens: list[Token], *words: str) -> list[list[Token]]:
    """The tokens cut at each of `words` (and commas when "," is among them), outside
    brackets."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        depth += token.text in ("(", "[")
        depth -= token.text in (")", "]")
        if depth == 0 and (token.is_word(*words) or (token.text == "," and "," in words)):
            parts.append([])
        else:
            parts[-1].append(token)
    return parts


def _pairs(tokens: list[Token], context: Context) -> list[Token] | None:
    """`k=v and k2: v2` as a canonical condition; a part already in brackets (a rewritten
    `is not null`) is kept. None when a part is not `field op value`."""
    condition: list[Token] = []
    for part in _pair_parts(tokens):
        if not part:
            return None
        if part[0].text == "(" and part[-1].text == ")":
            piece = part
        elif _starts_pair(part, 0):
            value = _value(part[2:], part[0], context)
            if value is None:
                return None
            piece = [part[0], op("=" if part[1].text == ":" else part[1].text), value]
        else:
            return None
        condition.extend([word("AND"), *piece] if condition else piece)
    return condition


def _closing(tokens: list[Token], start: int) -> int:
    """Where a command's closing `[LIMIT <n>] [AS <name>]` begins (at or after `start`); the
    end when it has none. Only the last words close it: an earlier `as` or `limit` belongs
    to a value (`id=Known As Kit AS k`)."""
    end = len(tokens)
    if end - 2 >= start and tokens[end - 2].is_word("AS") and tokens[end - 1].kind == "word":
        end -= 2
    if end - 2 >= start and tokens[end - 2].is_word("LIMIT") and tokens[end - 1].kind == "number":
        end -= 2
    return end


def _index(tokens: list[Token], *words: str, start: int = 0) -> int | None:
    for at in range(start, len(tokens)):
        if tokens[at].is_word(*words):
            return at
    return None


def _name(token: Token) -> str:
    """A variable token's name (`${x}` -> x)."""
    if token.kind == "binding":
        return token.text[2:-1].strip().split(".")[0]
    return token.text.replace(".", "_")


# --- rules, in the order they apply


def on_guard(tokens: list[Token], context: Context) -> list[Token] | None:
    """`ON <status> [<var>] do|THEN <command>`: the command read through every rule; with
    no variable, the guard is for the variable the command before assigned."""
    if len(tokens) < 3 or not tokens[0].is_word("ON"):
        return None
    status = tokens[1]
    if not status.is_word("EMPTY", "ERROR", "PARTIAL", "SCHEMA_MISMATCH"):
        return None
    if tokens[2].is_word("DO", "THEN"):
        if context.previous_target is None:
            raise DialectRefused(
                "ON without a variable guards the command before it, and there is none "
                "here: write ON EMPTY <var> THEN <command>"
            )
        ref, rest = word(context.previous_target), tokens[3:]
    elif len(tokens) >= 4 and tokens[3].is_word("DO", "THEN"):
        ref, rest = tokens[2], tokens[4:]
    else:
        return None
    if rest and rest[0].text == ":":  # `do: <command>`
        rest = rest[1:]
    if not rest:
        return None
    then = rewrite_command(rest, context)
    return [word("ON"), word(status.upper), ref, word("THEN"), *then]


_VERB_HINTS = {
    "GRAPHPATTERN": (
        "GASL has no pattern matching: a pattern of linked nodes is a path search, "
        'FIND paths FROM (entity_type = "A") TO (entity_type = "B") MAX_LENGTH 1 AS pairs, '
        'or a walk along named relations, GRAPHWALK FROM <var> FOLLOW "<relation>" AS w'
    ),
    "GENERATE": (
        "GASL writes text only through a model step over a variable: "
        'PROCESS <var> USING "<what to write>" AS <name> (ANALYZE <key> for a verdict)'
    ),
    "CLUSTER": (
        "GASL groups rows by a field, AGGREGATE <var> BY <field> WITH COLLECT OF id AS g "
        "(or CREATE_GROUPS FROM <var> BY <field> AS g), or by a model's judgement, "
        'CLASSIFY <var> INTO "<label>", "<label>" USING "<criterion>" AS c'
    ),
}


def unknown_verb(tokens: list[Token], context: Context) -> list[Token] | None:
    """The reference dialect's verbs postel lacks: refused, naming the canonical way."""
    hint = _VERB_HINTS.get(tokens[0].upper)
    if hint is not None:
        raise DialectRefused(f"{tokens[0].upper} is not GASL. {hint}")
    return None


def is_null(tokens: list[Token], context: Context) -> list[Token] | None:
    """`f is not null`: f is there and not null, `(f != null AND f = f)` (a missing field
    equals nothing, itself included); `f is null`: `(f = null OR NOT f = f)`."""
    out: list[Token] = []
    at = 0
    changed = False
    while at < len(tokens):
        negated = at + 3 < len(tokens) and tokens[at + 2].is_word("NOT")
        tail = at + (3 if negated else 2)
        if (
            tokens[at].kind == "word"
            and at + 2 < len(tokens)
            and tokens[at + 1].is_word("IS")
            and tail < len(tokens)
            and tokens[tail].is_word("NULL")
        ):
            f = tokens[at]
            if negated:
                group = [f, op("!="), word("null"), word("AND"), f, op("="), f]
            else:
                group = [f, op("="), word("null"), word("OR"), word("NOT"), f, op("="), f]
            out.extend([punct("("), *group, punct(")")])
            at = tail + 1
            changed = True
        else:
            out.append(tokens[at])
            at += 1
    return out if changed else None


def count_find(tokens: list[Token], context: Context) -> list[Token] | None:
    """`COUNT FIND ... AS n`: the FIND into `<n>_items`, then COUNT of it into n."""
    if len(tokens) < 3 or not tokens[0].is_word("COUNT") or not tokens[1].is_word("FIND"):
        return None
    body, into = split_into(tokens[1:])
    target = into.text if into is not None else f"found_{body[1].text.lower()}_count"
    items = word(f"{target}_items")
    found = rewrite_command([*body, _AS, items], context)
    return [*found, SEMICOLON, word("COUNT"), items, _AS, word(target)]


def find_pairs(tokens: list[Token], context: Context) -> list[Token] | None:
    """`FIND nodes|edges with k=v and k2=v2 [LIMIT n] [AS x]`: a WHERE of comparisons, each
    value written without quotes running to the next pair's `and` or the closing words."""
    if len(tokens) < 4 or not tokens[0].is_word("FIND") or not tokens[1].is_word("NODES", "EDGES"):
        return None
    if not tokens[2].is_word("WITH"):
        return None
    end = _closing(tokens, 3)
    condition = _pairs(tokens[3:end], context)
    if condition is None:
        return None
    return [tokens[0], tokens[1], word("WHERE"), *condition, *tokens[end:]]


def find_path_filters(tokens: list[Token], context: Context) -> list[Token] | None:
    """`FIND paths with source_filter: C1 target_filter: C2 [max_length n] ...`: paths from
    the nodes meeting C1 to the nodes meeting C2."""
    if len(tokens) < 6 or not tokens[0].is_word("FIND") or not tokens[1].is_word("PATHS"):
        return None
    if not tokens[2].is_word("WITH") or not tokens[3].is_word("SOURCE_FILTER"):
        return None
    middle = _index(tokens, "TARGET_FILTER", start=4)
    if middle is None:
        return None
    end = _index(tokens, "MAX_LENGTH", "LIMIT", "AS", "DIRECTION", "VIA", start=middle)
    end = len(tokens) if end is None else end

    def ends(part: list[Token]) -> list[Token] | None:
        part = part[1:] if part and part[0].text == ":" else part
        while part and (part[-1].text == "," or part[-1].is_word("AND")):
            part = part[:-1]
        condition = _pairs(part, context)
        return None if condition is None else [punct("("), *condition, punct(")")]

    start, stop = ends(tokens[4:middle]), ends(tokens[middle + 1 : end])
    if start is None or stop is None:
        return None
    return [tokens[0], tokens[1], word("FROM"), *start, word("TO"), *stop, *tokens[end:]]


def _condition(tokens: list[Token], context: Context) -> list[Token]:
    """A dialect form's condition: `k=v and ...` pairs read as FIND's `with` reads them (a
    value without quotes is text), any other condition as written."""
    return _pairs(tokens, context) or tokens


def _group_by(tokens: list[Token]) -> int | None:
    """Where `group by` starts in tokens, if anywhere."""
    for at in range(len(tokens) - 1):
        if tokens[at].is_word("GROUP") and tokens[at + 1].is_word("BY"):
            return at
    return None


def count_where(tokens: list[Token], context: Context) -> list[Token] | None:
    """`COUNT x field f where C`: how many rows meet C (the field names what C is about);
    `COUNT x where C group by f` (either order): how many rows meeting C have each value of
    f, as `SELECT x WHERE C` then `AGGREGATE ... BY f WITH COUNT`."""
    if len(tokens) < 5 or not tokens[0].is_word("COUNT"):
        return None
    body, into = split_into(tokens)
    source, rest = body[1], body[2:]
    named_field = len(rest) >= 3 and rest[0].is_word("FIELD") and rest[2].is_word("WHERE")
    if named_field:
        rest = rest[2:]
    if source.kind not in ("word", "binding") or len(rest) < 2:
        return None
    name = into or word(f"{_name(source)}_count")
    group = _group_by(rest)
    if group is None:
        if not (named_field and rest[0].is_word("WHERE")):
            return None  # `COUNT x where C` alone is canonical GASL
        return [word("COUNT"), source, word("WHERE"), *_condition(rest[1:], context), _AS, name]
    if group == 0 and len(rest) > 4 and rest[3].is_word("WHERE"):  # group by f where C
        by, condition = rest[2:3], rest[4:]
    elif group > 1 and rest[0].is_word("WHERE"):  # where C group by f
        condition, by = rest[1:group], rest[group + 2 :]
    else:
        return None
    if len(by) != 1 or by[0].kind != "word" or not condition:
        return None
    kept = word(f"{_name(source)}_where")
    selected = [word("SELECT"), source, word("WHERE"), *_condition(condition, context), _AS, kept]
    counted = [word("AGGREGATE"), kept, word("BY"), by[0], word("WITH"), word("COUNT"), _AS, name]
    return [*selected, SEMICOLON, *counted]


def count_by(tokens: list[Token], context: Context) -> list[Token] | None:
    """`COUNT x group by f` and `COUNT x field f`: how many rows have each value of f."""
    if len(tokens) < 4 or not tokens[0].is_word("COUNT"):
        return None
    body, into = split_into(tokens)
    if len(body) == 5 and body[2].is_word("GROUP") and body[3].is_word("BY"):
        field_token = body[4]
    elif len(body) == 4 and body[2].is_word("FIELD", "BY"):
        field_token = body[3]
    else:
        return None
    if field_token.kind != "word":
        return None
    made = [word("AGGREGATE"), body[1], word("BY"), field_token, word("WITH"), word("COUNT")]
    return _with_into(made, into or word(f"{_name(body[1])}_count"))


def aggregate_of(tokens: list[Token], context: Context) -> list[Token] | None:
    """`WITH AVG weight` or `WITH AVG(weight)`: the function's value field, `OF weight`."""
    if not tokens[0].is_word("AGGREGATE"):
        return None
    at = _index(tokens, "WITH")
    if at is not None and at + 2 == len(tokens):
        tokens = [*tokens, _AS, word(derived_name(tokens) or "aggregate")]
    if at is None or at + 2 >= len(tokens):
        return None
    fn = tokens[at + 1]
    if not fn.is_word("SUM", "AVG", "MIN", "MAX", "COLLECT", "COUNT") or tokens[at + 2].is_word(
        "OF"
    ):
        return None
    rest = tokens[at + 2 :]
    if rest[0].is_word("AS") and not fn.is_word("COUNT"):
        head = [
            word(t.upper) if t.is_word("AGGREGATE", "BY", "WITH") else t for t in tokens[: at + 1]
        ]
        named = [*head, word(fn.upper), word("OF"), word("<field>"), *rest]
        raise DialectRefused(
            f"{fn.upper} needs a value field (OF <field>), which GASL never guesses: "
            + render(named)
        )
    if len(rest) >= 3 and rest[0].text == "(" and rest[2].text == ")" and rest[1].kind == "word":
        value, after = rest[1], rest[3:]
    elif rest[0].kind == "word" and not rest[0].is_word("AS"):
        value, after = rest[0], rest[1:]
    else:
        return None
    return [*tokens[: at + 1], word(fn.upper), word("OF"), value, *after]


def rank_order(tokens: list[Token], context: Context) -> list[Token] | None:
    """`RANK x BY f order desc`: `DESC`."""
    if not tokens[0].is_word("RANK"):
        return None
    at = _index(tokens, "ORDER")
    if at is None or at + 1 >= len(tokens) or not tokens[at + 1].is_word("ASC", "DESC"):
        return None
    return [*tokens[:at], word(tokens[at + 1].upper), *tokens[at + 2 :]]


def instruction(tokens: list[Token], context: Context) -> list[Token] | None:
    """`PROCESS|ANALYZE|CLASSIFY x with instruction: <words> [AS y]`: the words, exactly as
    written (their quotes and `;` too), become the quoted instruction."""
    if len(tokens) < 4 or not tokens[0].is_word(*INSTRUCTION_VERBS):
        return None
    if not tokens[2].is_word(*instruction_lead(tokens[0])):
        return None
    body, into = split_into(tokens)
    said = body[-1]
    between = [t.upper for t in body[3:-1]]
    if between[:1] and between[0] in INSTRUCTION_WORDS:
        between = between[1:]
    if between not in ([], [":"]):
        return None
    if said.kind not in ("text", "string"):
        return None
    text = string_value(said) if said.kind == "string" else said.text
    return _with_into([body[0], body[1], word("USING"), string(text)], into)


_UPDATE_MODES = {
    "MERGE": "MERGE",
    "APPEND": "MERGE",
    "ADD": "MERGE",
    "UNION": "MERGE",
    "REPLACE": "REPLACE",
    "SET": "REPLACE",
    "OVERWRITE": "REPLACE",
}


def update_mode(tokens: list[Token], context: Context) -> list[Token] | None:
    """`UPDATE k WITH x operation: append|replace|...`: MERGE or REPLACE; `operation: filter
    where C` (or `where C`): the key's items become x's rows meeting C, as the reference
    dialect's filter did: SELECT them, then UPDATE ... REPLACE."""
    if len(tokens) < 5 or not tokens[0].is_word("UPDATE") or not tokens[2].is_word("WITH"):
        return None
    key, source, rest = tokens[1], tokens[3], tokens[4:]
    if rest[0].is_word("OPERATION", "MODE"):
        rest = rest[1:]
        if rest and rest[0].text in (":", "="):
            rest = rest[1:]
        if len(rest) == 1 and rest[0].upper in _UPDATE_MODES:
            return [*tokens[:4], word(_UPDATE_MODES[rest[0].upper])]
        if rest and rest[0].is_word("FILTER"):
            rest = rest[1:]
    if len(rest) < 2 or not rest[0].is_word("WHERE"):
        return None
    kept = word(f"{_name(source)}_filtered")
    selected = rewrite_command([word("SELECT"), source, *rest, _AS, kept], context)
    return [*selected, SEMICOLON, word("UPDATE"), key, word("WITH"), kept, word("REPLACE")]


def require(tokens: list[Token], context: Context) -> list[Token] | None:
    """REQUIRE/ASSERT spellings: `REQUIRE x` (exists), `x count > 0` or `x.count > 0` (its
    size), `x has field: f` (some row has f: `REQUIRE EXISTS ${x.f}`), `x < 10 "why"` (x's
    value, a COUNT's number; the closing words are the model's note and are dropped)."""
    if not tokens[0].is_word("REQUIRE", "ASSERT") or len(tokens) < 2:
        return None
    subject = tokens[1]
    if subject.kind != "word" or subject.is_word("EXISTS", "LEN"):
        return None
    rest = tokens[2:]
    if not rest:
        return [word("REQUIRE"), word("EXISTS"), subject] if tokens[0].is_word("REQUIRE") else None
    if rest[0].is_word("HAS"):
        rest = rest[1:]
        if rest and rest[0].is_word("FIELD"):
            rest = rest[1:]
        if rest and rest[0].text == ":":
            rest = rest[1:]
        if len(rest) != 1 or rest[0].kind != "word":
            return None
        return [
            word("REQUIRE"),
            word("EXISTS"),
            Token("binding", f"${{{subject.text}.{rest[0].text}}}"),
        ]
    name, size = subject.text, False
    head, _, last = name.rpartition(".")
    if head and last.upper() in ("COUNT", "SIZE", "LENGTH", "LEN"):
        name, size = head, True
    elif rest[0].is_word("COUNT", "SIZE", "LENGTH", "LEN"):
        rest, size = rest[1:], True
    if len(rest) < 2 or rest[0].kind != "op" or rest[1].kind != "number":
        return None
    if len(rest) > 2 and not (len(rest) == 3 and rest[2].kind == "string"):
        return None
    binding = Token("binding", f"${{{name}}}")
    subject_tokens = [word("LEN"), binding] if size else [binding]
    return [word("ASSERT"), *subject_tokens, rest[0], rest[1]]


_ANY_RELATION = (
    "ANY", "A", "AN", "ALL", "EVERY", "*", "RELATIONSHIP", "RELATIONSHIPS", "RELATION",
    "RELATIONS", "EDGE", "EDGES", "TYPE", "TYPES", "LINK", "LINKS",
)  # fmt: skip


def graphwalk(tokens: list[Token], context: Context) -> list[Token] | None:
    """`GRAPHWALK from x follow r1, r2 depth 2`: each relation quoted; words that name no
    relation (`any`, `relationship`, `all edges`) mean every relation, no FOLLOW."""
    if not tokens[0].is_word("GRAPHWALK"):
        return None
    at = _index(tokens, "FOLLOW")
    if at is None:
        return None
    end = _index(tokens, "DEPTH", "LIMIT", "AS", "DIRECTION", start=at + 1)
    end = len(tokens) if end is None else end
    names: list[Token] = []
    generic = True
    for part in _split_words(tokens[at + 1 : end], ",", "OR"):
        if not part:
            return None
        if all(t.upper in _ANY_RELATION for t in part):
            continue
        generic = False
        if len(part) != 1 or part[0].kind not in ("word", "string"):
            return None
        relation = part[0]
        names.append(relation if relation.kind == "string" else string(relation.text))
    follow: list[Token] = []
    if not generic:
        follow = [word("FOLLOW")]
        for index, relation in enumerate(names):
            follow.extend([punct(","), relation] if index else [relation])
    head = tokens[:at]
    if len(head) > 1 and head[1].is_word("FROM"):
        head = [head[0], word("FROM"), *head[2:]]
    return [*head, *follow, *tokens[end:]]


def _subgraph_of_types(tokens: list[Token], included: int) -> str:
    """The hint for `SUBGRAPH ... include T1, T2`, naming the start, depth and types given."""
    body, _into = split_into(tokens)
    types = [t for t in body[included + 1 :] if t.kind in ("word", "string")]
    named = [json.dumps(string_value(t) if t.kind == "string" else t.text) for t in types]
    listed = ", ".join(named or ['"T1"', '"T2"'])
    start = next(
        (
            t.text
            for t in body[1:included]
            if t.kind in ("word", "binding") and not t.is_word("AROUND", "FROM")
        ),
        "<var>",
    )
    depth = next((t.text for t in body[1:included] if t.kind == "number"), "<n>")
    return (
        "SUBGRAPH keeps every node within DEPTH, of every type: for only some types, "
        f"NEIGHBORS {start} DEPTH {depth} AS near, then SELECT near WHERE entity_type IN "
        f"[{listed}] AS kept (the nodes, without their edges); for one "
        f'relation, SUBGRAPH FROM {start} VIA "<relation>" DEPTH {depth} AS <name>'
    )


def subgraph_around(tokens: list[Token], context: Context) -> list[Token] | None:
    """`SUBGRAPH around x radius n`: `SUBGRAPH FROM x DEPTH n`. `include T1, T2` (only some
    types), however the rest is spelled, is refused: SUBGRAPH keeps every type."""
    if not tokens[0].is_word("SUBGRAPH"):
        return None
    included = _index(tokens, "INCLUDE")
    if included is not None:
        raise DialectRefused(_subgraph_of_types(tokens, included))
    if len(tokens) < 5 or not tokens[1].is_word("AROUND"):
        return None
    if not tokens[3].is_word("RADIUS", "DEPTH") or tokens[4].kind != "number":
        return None
    return [tokens[0], word("FROM"), tokens[2], word("DEPTH"), tokens[4], *tokens[5:]]


def bare_via(tokens: list[Token], context: Context) -> list[Token] | None:
    """`GRAPHCONNECT a to b via co-author`: the word quoted. Only GRAPHCONNECT, the form the
    reference dialect writes: elsewhere an unquoted VIA stays the error whose hint teaches
    the quotes (the QA bench's realistic planner makes that mistake on purpose)."""
    if not tokens[0].is_word("GRAPHCONNECT"):
        return None
    at = _index(tokens, "VIA")
    if at is None or at + 1 >= len(tokens):
        return None
    relation = tokens[at + 1]
    if relation.kind != "word" or relation.is_word(*_CLAUSE_WORDS):
        return None
    return [*tokens[: at + 1], string(relation.text), *tokens[at + 2 :]]


def join_on_slash(tokens: list[Token], context: Context) -> list[Token] | None:
    """`JOIN a WITH b ON f/g`: `ON f = g` (a's f equals b's g)."""
    if not tokens[0].is_word("JOIN"):
        return None
    at = _index(tokens, "ON")
    if at is None or at + 3 >= len(tokens) or tokens[at + 2].text != "/":
        return None
    return [*tokens[: at + 2], op("="), *tokens[at + 3 :]]


def add_field(tokens: list[Token], context: Context) -> list[Token] | None:
    """`ADD_FIELD x field: n = <value>`: `FIELD n = <value>`. `field: n = v` with v one bare
    name that a command before made (a variable of the plan) is that variable, `${v}`: its
    whole value on every row. With no such variable the form is refused: the reference
    dialect paired row i of x with item i of v, and GASL pairs rows by key, never by
    position (`FIELD n = v` is the field v of each row)."""
    if len(tokens) < 6 or not tokens[0].is_word("ADD_FIELD") or not tokens[2].is_word("FIELD"):
        return None
    if tokens[3].text != ":":
        return None
    body, into = split_into(tokens)
    rest = body[4:]
    bare = len(rest) == 3 and rest[1].text == "=" and rest[2].kind == "word"
    if bare and not rest[2].is_word(*_LITERAL_WORDS):
        v, n = rest[2].text, rest[0].text
        if v in context.bound:
            rest = [rest[0], rest[1], Token("binding", f"${{{v}}}")]
        else:
            raise DialectRefused(
                f"`field: {n} = {v}` names no variable a command before made, and the "
                "reference dialect's pairing of rows by position GASL never does: write "
                f"FIELD {n} = {v} for the field {v} of each row, FIELD {n} = ${{{v}}} for a "
                f"variable {v}'s value on every row, or JOIN the two variables on a key"
            )
    return _with_into([body[0], body[1], word("FIELD"), *rest], into)


def set_variable(tokens: list[Token], context: Context) -> list[Token] | None:
    """`SET name = value`: GASL has no assignment; SET changes an adapter cap only. Refused,
    naming the canonical ways."""
    if len(tokens) < 2 or not tokens[0].is_word("SET"):
        return None
    if tokens[1].text.lower().startswith("adapter.caps."):
        return None
    raise DialectRefused(
        "SET changes an adapter cap only, SET adapter.caps.<key>=<integer>; GASL has no "
        "assignment: a variable is what a command makes with AS <name> (SELECT <var> FIELDS "
        "<field> AS <name> keeps part of one), and a value kept across rounds goes in the "
        "state, DECLARE <key> AS LIST then UPDATE <key> WITH <var>"
    )


_CREATE_KEYS = {
    "CREATE_NODES": {"TYPE": "TYPE", "ENTITY_TYPE": "TYPE", "ID": "ID", "ID_FIELD": "ID"},
    "CREATE_EDGES": {
        "TYPE": "RELATION",
        "RELATION": "RELATION",
        "RELATIONSHIP": "RELATION",
        "SOURCE": "SOURCE",
        "SOURCE_FIELD": "SOURCE",
        "TARGET": "TARGET",
        "TARGET_FIELD": "TARGET",
    },
    "CREATE_GROUPS": {"BY": "BY", "FIELD": "BY", "GROUP_BY": "BY", "KEY": "BY"},
}
# Clauses whose value is text (a type, a relation), the others name a field.
_TEXT_CLAUSES = ("TYPE", "RELATION")
_CLAUSE_ORDER = ("ID", "TYPE", "SOURCE", "TARGET", "RELATION", "BY")


def create_with(tokens: list[Token], context: Context) -> list[Token] | None:
    """`CREATE_NODES|EDGES|GROUPS from x with type: T, id: f`: the canonical clauses. Edges
    without `source:`/`target:` read the rows' `source` and `target` (as edge rows carry
    them); groups need a field (`with field: f`), since a group's type is always GROUP."""
    verb = tokens[0].upper
    keys = _CREATE_KEYS.get(verb)
    if keys is None or len(tokens) < 4 or not tokens[1].is_word("FROM"):
        return None
    body, into = split_into(tokens)
    if len(body) < 5 or not body[3].is_word("WITH"):
        return None
    clauses: dict[str, Token] = {}
    for part in _split_words(body[4:], ",", "AND", "WITH"):
        if len(part) == 3 and part[1].text in (":", "="):
            part = [part[0], part[2]]
        if len(part) != 2 or part[0].kind != "word" or part[1].kind not in ("word", "string"):
            return None
        key = part[0].upper
        if verb == "CREATE_GROUPS" and key == "TYPE":
            raise DialectRefused(
                "CREATE_GROUPS makes one GROUP node per value of a field: "
                "CREATE_GROUPS FROM <var> BY <field> AS <name>"
            )
        if key not in keys:
            return None
        value = part[1]
        if keys[key] in _TEXT_CLAUSES:
            value = value if value.kind == "string" else string(value.text)
        elif value.kind == "string":
            value = word(string_value(value))
        clauses[keys[key]] = value
    if verb == "CREATE_EDGES":
        clauses.setdefault("SOURCE", word("source"))
        clauses.setdefault("TARGET", word("target"))
    if verb == "CREATE_GROUPS" and "BY" not in clauses:
        return None
    made = [tokens[0], word("FROM"), body[2]]
    for clause in _CLAUSE_ORDER:
        if clause in clauses:
            made.extend([word(clause), clauses[clause]])
    return _with_into(made, into)


# A command of these written without AS is given `<source>_<suffix>` (FIND: `found_<kind>`,
# ADD_FIELD: `<source>_with_<field>`), named in its record, so the next command (and the model)
# can refer to it. The other commands still need their AS.
_SUFFIXES = {
    "PROCESS": "processed",
    "ANALYZE": "analysis",
    "CLASSIFY": "classified",
    "AGGREGATE": "aggregate",
    "RANK": "ranked",
    "GRAPHWALK": "walk",
    "SUBGRAPH": "subgraph",
    "CREATE_NODES": "nodes",
    "CREATE_EDGES": "edges",
    "CREATE_GROUPS": "groups",
}


def derived_name(tokens: list[Token]) -> str | None:
    """The variable a command written without AS assigns; None when it has no source name."""
    verb = tokens[0].upper
    if verb == "FIND":
        return f"found_{tokens[1].text.lower()}" if len(tokens) > 1 else None
    at = 2 if len(tokens) > 2 and tokens[1].is_word("FROM") else 1
    if at >= len(tokens) or tokens[at].kind not in ("word", "binding"):
        return None
    source = _name(tokens[at])
    if verb == "ADD_FIELD":
        return f"{source}_with_{tokens[at + 2].text}" if len(tokens) > at + 2 else None
    suffix = _SUFFIXES.get(verb)
    return None if suffix is None else f"{source}_{suffix}"


def missing_as(tokens: list[Token], context: Context) -> list[Token] | None:
    """A command that needs `AS <name>` and was written without: the derived name."""
    if (
        tokens[0].upper not in (*_SUFFIXES, "FIND", "ADD_FIELD")
        or split_into(tokens)[1] is not None
    ):
        return None
    name = derived_name(tokens)
    return None if name is None else [*tokens, _AS, word(name)]


RULES: list[tuple[str, Rule]] = [
    ("ON <status> [<var>] do <command>", on_guard),
    ("GRAPHPATTERN, GENERATE, CLUSTER", unknown_verb),
    ("f is [not] null", is_null),
    ("COUNT FIND ...", count_find),
    ("FIND ... with k=v", find_pairs),
    ("FIND paths with source_filter ... target_filter ...", find_path_filters),
    ("COUNT ... field f where C | where C group by f", count_where),
    ("COUNT ... group by f | field f", count_by),
    ("AGGREGATE ... WITH AVG f", aggregate_of),
    ("RANK ... order asc|desc", rank_order),
    ("PROCESS/ANALYZE/CLASSIFY ... with instruction: ...", instruction),
    ("UPDATE ... operation: <mode> | filter where", update_mode),
    ("REQUIRE/ASSERT spellings", require),
    ("GRAPHWALK from x follow r1, r2", graphwalk),
    ("SUBGRAPH around x radius n", subgraph_around),
    ("GRAPHCONNECT ... via <bare word>", bare_via),
    ("JOIN ... ON f/g", join_on_slash),
    ("ADD_FIELD x field: n = ...", add_field),
    ("SET <name> = <value>", set_variable),
    ("CREATE_* from x with k: v", create_with),
    ("a command without AS", missing_as),
]
