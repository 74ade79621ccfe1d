"""The written command as tokens: what the dialect's rewrites read and write.

A quoted string is one token whatever it holds (`;`, `#`, the other quote), so a statement
ends at a `;` or a newline only outside quotes. An apostrophe inside a word (`O'Brien`,
`Ba'al's`) opens no string: it is the name's own character. A token keeps where it was in
the source (`start`, `end`); a token a rewrite makes has none (-1) and is rendered from its
text.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal[
    "word", "string", "number", "binding", "op", "punct", "sep", "comment", "text", "other"
]

# Order matters: a binding or a string before the characters they hold, a number before a
# word so `-1` is one number, and `other` last (an apostrophe with no closing one, `&`, `/`).
_LEXEMES: list[tuple[Kind, str]] = [
    ("binding", r"\$\{[^}\n]*\}"),
    ("string", r"\"(?:[^\"\\\n]|\\.)*\"|(?<!\w)'(?:[^'\\\n]|\\.)*'"),
    ("number", r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])"),
    # a word may hold dots (a dotted field or key) and inner hyphens (a relation `co-author`)
    ("word", r"[A-Za-z_]\w*(?:[.-][A-Za-z_0-9]\w*)*"),
    ("op", r"==|!=|<>|>=|<=|=|>|<"),
    ("punct", r"[,:()\[\]]"),
    ("sep", r";|\n"),
    ("comment", r"#[^\n]*"),
    ("space", r"[ \t\r\f]+"),
    ("other", r"."),
]
_LEXER = re.compile("|".join(f"(?P<{kind}>{pattern})" for kind, pattern in _LEXEMES))


@dataclass(frozen=True)
class Token:
    kind: Kind
    text: str
    start: int = -1
    end: int = -1

    def is_word(self, *words: str) -> bool:
        """Is this the word (any of `words`, case-insensitive)? No words: any word."""
        return self.kind == "word" and (not words or self.text.upper() in words)

    @property
    def upper(self) -> str:
        return self.text.upper()


def tokenize(text: str) -> list[Token]:
    """Every token of `text`, spaces left out and comments kept (a rewrite drops them)."""
    tokens = []
    for match in _LEXER.finditer(text):
        kind = match.lastgroup
        if kind != "space" and kind is not None:
            tokens.append(Token(kind, match.group(), match.start(), match.end()))  # type: ignore[arg-type]
    return tokens


def word(text: str) -> Token:
    return Token("word", text)


def string(value: str) -> Token:
    """A double-quoted string token holding `value` exactly (escapes as JSON writes them,
    which the GASL grammar reads back unchanged)."""
    return Token("string", json.dumps(value, ensure_ascii=False))


def op(text: str) -> Token:
    return Token("op", text)


def punct(text: str) -> Token:
    return Token("punct", text)


SEMICOLON = Token("sep", ";")


def unquote(text: str) -> str:
    """A quoted string's text without its quotes: both quote styles, escapes read by
    Python's rules (the parser's strings and the dialect's are read alike), and a pair of
    `\\u` escapes of surrogates, as JSON writes a character past U+FFFF (`"\\ud800\\udc00"`),
    is that one character."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text[1:-1]
    if not isinstance(value, str):
        return text[1:-1]
    return value.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")


def string_value(token: Token) -> str:
    """A string token's text without its quotes."""
    return unquote(token.text)


def render(tokens: list[Token]) -> str:
    """The tokens as one line of canonical text: one space between tokens, none inside
    brackets or before a comma or colon, and `;` ending a statement."""
    out: list[str] = []
    previous = ""
    for token in tokens:
        if token.kind == "comment":
            continue
        glued = not out or token.text in (",", ")", "]", ":", ";") or previous in ("(", "[")
        out.append(token.text if glued else f" {token.text}")
        previous = token.text
    return "".join(out)
