"""GASL's grammar as a GBNF grammar (llama.cpp's format for constrained decoding), generated
from services/gasl/grammar.lark so the two can never disagree.

The lark grammar is read with lark's own grammar loader and turned into a small expression
tree (`Expr`), which renders as GBNF text and which tests sample sentences from. What the
translation decides:
- Terminals are regular expressions; each is translated through Python's regex parser.
  A case-insensitive keyword is written in upper case only (the canonical spelling).
- The language ignores whitespace between tokens; the generated grammar puts exactly one
  space after a token that ends in a word character (so `FIND nodes` stays two tokens) and
  allows one after any other token.
- Commands are written inside JSON strings (`in_json_string`): no character may need
  escaping, so the double-quote and backslash are left out of every token, string literals
  take single quotes, and statements are separated by `;` rather than a newline.
- Every repetition the language leaves unbounded is bounded: within a token (a name's
  letters, a string's characters) by TOKEN_REPEAT_MAX, of rules (MERGE's variables, a
  condition's ANDs) by RULE_REPEAT_MAX. A small model decoding under the grammar otherwise
  writes one name, or one list, until its token budget is spent; llama.cpp expands a bound
  into nested rules, and bounds much larger than these crashed its server.
- Left recursion (`condition: condition OR conjunction | conjunction`), which llama.cpp
  refuses, becomes repetition (`conjunction (OR conjunction)*`).
"""

from __future__ import annotations

import re
import re._constants as sre  # the regex parser's node names
import re._parser as sre_parse
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from lark import Token, Tree
from lark.grammar import NonTerminal, Terminal
from lark.load_grammar import GrammarBuilder


@dataclass(frozen=True)
class Lit:
    text: str


@dataclass(frozen=True)
class Chars:
    """One character: in `ranges` (inclusive pairs), or not in them when `negated`."""

    ranges: tuple[tuple[str, str], ...]
    negated: bool = False


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass(frozen=True)
class Seq:
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Expr, ...]


@dataclass(frozen=True)
class Repeat:
    item: Expr
    least: int
    most: int  # every repetition is bounded (see the module's note)


Expr = Lit | Chars | Ref | Seq | Alt | Repeat
Rules = dict[str, Expr]
EMPTY = Seq(())

# Characters a token may not hold inside a JSON string (they would need escaping).
_JSON_UNSAFE = frozenset('"\\') | frozenset(chr(c) for c in range(0x20))
_WORD = re.compile(r"\w")
TOKEN_REPEAT_MAX = 32
RULE_REPEAT_MAX = 6


def json_text_char() -> Chars:
    """One character a JSON string holds as it is (no escape)."""
    return Chars(_ranges(sorted(_JSON_UNSAFE)), negated=True)


def rule_name(name: str, terminal: bool) -> str:
    """A GBNF rule name (letters, digits and dashes): `t-` a terminal, `k-` a terminal kept
    out of the tree (keywords, punctuation: `_DIRECTION` is not `DIRECTION`), `r-` a rule."""
    base = name.lower().lstrip("_").replace("_", "-") or "x"
    if not terminal:
        return f"r-{base}"
    return f"k-{base}" if name.startswith("_") else f"t-{base}"


@cache
def gasl_rules(in_json_string: bool = True) -> tuple[Rules, str]:
    """Every rule of the GASL grammar as an Expr, and the name of the statement rule."""
    text = resources.files("postel.services.gasl").joinpath("grammar.lark").read_text("utf-8")
    builder = GrammarBuilder()
    builder.load_grammar(text)
    unsafe = _JSON_UNSAFE if in_json_string else frozenset()
    rules: Rules = {}
    for name, definition in builder._definitions.items():
        if name.startswith("__IGNORE"):
            continue
        if definition.is_term:
            rules[rule_name(name, True)] = _token(definition.tree, unsafe)
        else:
            gname = rule_name(name, False)
            rules[gname] = _without_left_recursion(gname, _expansions(definition.tree))
    return _pruned(rules), rule_name("statement", False)


def _expansions(tree: Any) -> Expr:
    """A lark rule body (expansions, expansion, expr, maybe, value, alias) as an Expr."""
    if isinstance(tree, NonTerminal):
        return Ref(rule_name(tree.name, False))
    if isinstance(tree, Terminal):
        return Ref(rule_name(tree.name, True))
    assert isinstance(tree, Tree), tree
    kind, children = tree.data, tree.children
    if kind == "expansions":
        return _alt([_expansions(c) for c in children])
    if kind == "expansion":
        return _seq([_expansions(c) for c in children])
    if kind == "alias":
        return _expansions(children[0])
    if kind == "value":
        return _expansions(children[0])
    if kind == "maybe":
        return Repeat(_expansions(children[0]), 0, 1)
    if kind == "expr":
        item, op = _expansions(children[0]), str(children[1])
        bounds = {"?": (0, 1), "*": (0, RULE_REPEAT_MAX), "+": (1, RULE_REPEAT_MAX)}
        if op not in bounds:
            raise ValueError(f"grammar.lark uses {op!r}, which gbnf.py does not translate")
        return Repeat(item, *bounds[op])
    raise ValueError(f"grammar.lark uses {kind!r}, which gbnf.py does not translate")


def _without_left_recursion(name: str, body: Expr) -> Expr:
    options = body.options if isinstance(body, Alt) else (body,)
    recursive = [o for o in options if isinstance(o, Seq) and o.items and o.items[0] == Ref(name)]
    if not recursive:
        return body
    rest = [o for o in options if o not in recursive]
    tails = _alt([_seq(list(o.items[1:])) for o in recursive])
    return _seq([_alt(rest), Repeat(tails, 0, RULE_REPEAT_MAX)])


def _token(tree: Any, unsafe: frozenset[str]) -> Expr:
    """A terminal's pattern, followed by the space the next token needs."""
    literal: Token = tree.children[0].children[0].children[0].children[0]
    if literal.type == "STRING":
        pattern = _lit(literal.value[1:-1], unsafe)
    else:
        body, _, flags = literal.value[1:].rpartition("/")
        parsed = sre_parse.parse(body, re.IGNORECASE if "i" in flags else 0)
        pattern = _regex(list(parsed), "i" in flags, unsafe)
    if pattern is None:
        raise ValueError(f"terminal {literal.value} cannot be written inside a JSON string")
    space = Lit(" ") if _ends_in_word(pattern) else Repeat(Lit(" "), 0, 1)
    return _seq([pattern, space])


def _lit(text: str, unsafe: frozenset[str]) -> Expr | None:
    return None if any(c in unsafe for c in text) else Lit(text)


def _regex(nodes: list[tuple[Any, Any]], upper: bool, unsafe: frozenset[str]) -> Expr | None:
    parts: list[Expr | None] = []
    for op, arg in nodes:
        if op is sre.LITERAL:
            char = chr(arg)
            parts.append(_lit(char.upper() if upper else char, unsafe))
        elif op is sre.NOT_LITERAL:
            parts.append(Chars(_ranges([chr(arg), *unsafe]), negated=True))
        elif op is sre.ANY:
            parts.append(Chars(_ranges(["\n", *unsafe]), negated=True))
        elif op is sre.IN:
            parts.append(_char_class(arg, unsafe))
        elif op is sre.BRANCH:
            options = [_regex(list(branch), upper, unsafe) for branch in arg[1]]
            kept = [o for o in options if o is not None]
            parts.append(_alt(kept) if kept else None)
        elif op is sre.SUBPATTERN:
            parts.append(_regex(list(arg[3]), upper, unsafe))
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            least, most, sub = arg
            item = _regex(list(sub), upper, unsafe)
            bound = TOKEN_REPEAT_MAX if most is sre.MAXREPEAT else int(most)
            if item is not None:
                parts.append(Repeat(item, least, bound))
            else:  # a repetition of what cannot be written: only none of it can
                parts.append(EMPTY if least == 0 else None)
        elif op is sre.AT:
            continue  # word boundaries: the space after a word token keeps them
        else:
            raise ValueError(f"gbnf.py does not translate the regex construct {op}")
    if any(p is None for p in parts):
        return None
    return _seq([p for p in parts if p is not None])


def _char_class(items: list[tuple[Any, Any]], unsafe: frozenset[str]) -> Expr | None:
    negated = any(op is sre.NEGATE for op, _ in items)
    chars: list[str] = []
    ranges: list[tuple[str, str]] = []
    for op, arg in items:
        if op is sre.LITERAL:
            chars.append(chr(arg))
        elif op is sre.RANGE:
            ranges.append((chr(arg[0]), chr(arg[1])))
        elif op is sre.CATEGORY and arg is sre.CATEGORY_DIGIT:
            ranges.append(("0", "9"))
        elif op is not sre.NEGATE:
            raise ValueError(f"gbnf.py does not translate the character class item {op}")
    if negated:
        return Chars((*_ranges([*chars, *unsafe]), *ranges), negated=True)
    kept = [c for c in chars if c not in unsafe]
    if not kept and not ranges:
        return None
    # ranges in the grammar's classes hold letters and digits, never an unsafe character
    return Chars((*_ranges(kept), *ranges))


def _ranges(chars: list[str]) -> tuple[tuple[str, str], ...]:
    """Characters as inclusive ranges, neighbours joined (`\x00`..`\x1f` is one range)."""
    out: list[tuple[str, str]] = []
    for c in sorted(set(chars)):
        if out and ord(out[-1][1]) + 1 == ord(c):
            out[-1] = (out[-1][0], c)
        else:
            out.append((c, c))
    return tuple(out)


def _seq(items: list[Expr]) -> Expr:
    flat: list[Expr] = []
    for item in items:
        for part in item.items if isinstance(item, Seq) else (item,):
            if isinstance(part, Lit) and flat and isinstance(flat[-1], Lit):
                flat[-1] = Lit(flat[-1].text + part.text)  # "A" "S" -> "AS"
            else:
                flat.append(part)
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


def _alt(options: list[Expr]) -> Expr:
    unique = list(dict.fromkeys(options))
    return unique[0] if len(unique) == 1 else Alt(tuple(unique))


def _ends_in_word(expr: Expr) -> bool:
    match expr:
        case Lit(text):
            return bool(text) and bool(_WORD.fullmatch(text[-1]))
        case Chars(ranges, negated):
            return negated or any(
                _WORD.fullmatch(chr(c)) for lo, hi in ranges for c in range(ord(lo), ord(hi) + 1)
            )
        case Seq(items):
            for item in reversed(items):
                if _ends_in_word(item):
                    return True
                if not _nullable(item):
                    return False
            return False
        case Alt(options):
            return any(_ends_in_word(o) for o in options)
        case Repeat(item, _, _):
            return _ends_in_word(item)
    return True  # a rule reference: assume the worst


def _nullable(expr: Expr) -> bool:
    match expr:
        case Lit(text):
            return not text
        case Seq(items):
            return all(_nullable(i) for i in items)
        case Alt(options):
            return any(_nullable(o) for o in options)
        case Repeat(item, least, _):
            return least == 0 or _nullable(item)
    return False


def _pruned(rules: Rules) -> Rules:
    """Only the rules the statement rule reaches (the start rule's newline-separated list
    and the ignored patterns are left out)."""
    keep: dict[str, None] = {}
    stack = [rule_name("statement", False)]
    while stack:
        name = stack.pop()
        if name in keep:
            continue
        keep[name] = None
        stack.extend(refs(rules[name]))
    return {name: rules[name] for name in keep}


def refs(expr: Expr) -> list[str]:
    match expr:
        case Ref(name):
            return [name]
        case Seq(items) | Alt(items):
            return [r for i in items for r in refs(i)]
        case Repeat(item, _, _):
            return refs(item)
    return []


def render(rules: Rules) -> str:
    """GBNF text: one `name ::= body` line per rule; the first rule is `root`."""
    return "\n".join(f"{name} ::= {_render(body)}" for name, body in rules.items()) + "\n"


def _render(expr: Expr) -> str:
    match expr:
        case Lit(text):
            return '"' + "".join(_escape(c, '"') for c in text) + '"'
        case Chars(ranges, negated):
            body = "".join(
                _escape(lo, "]") if lo == hi else f"{_escape(lo, ']')}-{_escape(hi, ']')}"
                for lo, hi in ranges
            )
            return f"[{'^' if negated else ''}{body}]"
        case Ref(name):
            return name
        case Seq(items):
            return " ".join(_group(i) for i in items) if items else '""'
        case Alt(options):
            return " | ".join(_render(o) for o in options)
        case Repeat(item, least, most):
            inner = _group(item, repeated=True)
            return f"{inner}?" if (least, most) == (0, 1) else f"{inner}{{{least},{most}}}"
    raise TypeError(expr)


def _group(expr: Expr, repeated: bool = False) -> str:
    text = _render(expr)
    needs = isinstance(expr, Alt) or (repeated and isinstance(expr, Seq | Repeat))
    return f"({text})" if needs else text


def _escape(char: str, special: str) -> str:
    if char in ("\\", special):
        return "\\" + char
    if char == "\n":
        return "\\n"
    if char == "\r":
        return "\\r"
    if char == "\t":
        return "\\t"
    if ord(char) < 0x20:
        return f"\\x{ord(char):02x}"
    return char
