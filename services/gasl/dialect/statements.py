"""The written text cut into the pieces the rewrites work on: commands and block words.

A command ends at a `;` or a newline outside quotes. Inside a TRY block, TRY, CATCH (with
its ANY), FINALLY and END are pieces of their own, so `TRY COUNT a AS n CATCH COUNT b AS m`
holds two commands. The instruction of PROCESS, ANALYZE or CLASSIFY written without quotes
(`with instruction: first; names AS y`) is one `text` token up to its closing `AS <name>`:
its `;`, `#` and quotes are the model's words, not separators or a comment. So is a `#` in
the unquoted value of `FIND nodes with id=Echo (1999, #12) AS e`: before the command's
closing `AS <name>`, it is part of a name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from postel.services.gasl.dialect.tokens import Token, tokenize

INSTRUCTION_VERBS = ("PROCESS", "ANALYZE", "CLASSIFY")
INSTRUCTION_WORDS = ("INSTRUCTION", "INSTRUCTIONS")


def instruction_lead(verb: Token) -> tuple[str, ...]:
    """The words that may open `verb`'s instruction (`PROCESS x with ...`)."""
    return ("WITH", "USING", "BY") if verb.is_word("CLASSIFY") else ("WITH", "USING")


_BLOCK_WORDS = ("TRY", "CATCH", "FINALLY", "END")


@dataclass
class Piece:
    kind: Literal["command", "block"]
    tokens: list[Token] = field(default_factory=list)

    @property
    def start(self) -> int:
        return self.tokens[0].start

    @property
    def end(self) -> int:
        return self.tokens[-1].end


def _closes_text(tokens: list[Token], at: int, verb: Token, in_try: bool) -> bool:
    """Is tokens[at] the `AS <name>` that closes a free instruction? It is the last thing
    of its command, and written like the verb: upper-case `AS` (or lower case after a
    lower-case verb), so `... and store as first_name AS y` keeps `store as first_name`."""
    written = tokens[at].text
    if not (written == "AS" or (written == "as" and verb.text.islower())):
        return False
    if at + 1 >= len(tokens) or tokens[at + 1].kind != "word":
        return False
    after = at + 2
    return (
        after == len(tokens)
        or tokens[after].kind == "sep"
        or (in_try and tokens[after].is_word(*_BLOCK_WORDS[1:]))
    )


def _reread(comment: Token) -> list[Token]:
    """A comment's text as tokens, where it stood: `#` and what follows it."""
    rest = [
        Token(t.kind, t.text, t.start + comment.start + 1, t.end + comment.start + 1)
        for t in tokenize(comment.text[1:])
    ]
    return [Token("other", "#", comment.start, comment.start + 1), *rest]


def _free_instruction(
    tokens: list[Token], at: int, source: str, in_try: bool
) -> tuple[list[Token], int] | None:
    """The command starting at `at` with its unquoted instruction made one token, and the
    index after it; None when the command has no instruction written that way."""
    verb = tokens[at]
    lead = instruction_lead(verb)
    if at + 3 >= len(tokens) or tokens[at + 1].kind not in ("word", "binding"):
        return None
    if not tokens[at + 2].is_word(*lead):
        return None
    begin = at + 3
    if tokens[begin].is_word(*INSTRUCTION_WORDS):
        begin += 1
    if begin < len(tokens) and tokens[begin].text == ":":
        begin += 1
    if begin >= len(tokens) or tokens[begin].kind == "sep":
        return None
    stop = begin
    while stop < len(tokens):
        ahead = tokens[stop]
        if ahead.kind == "comment":
            # `#` in free text is the model's word (`# of reports`), not a comment
            tokens[stop : stop + 1] = _reread(ahead)
            continue
        if stop > begin and (
            ahead.text == "\n"
            or (in_try and ahead.is_word(*_BLOCK_WORDS[1:]))
            or (ahead.is_word("AS") and _closes_text(tokens, stop, verb, in_try))
        ):
            break
        stop += 1
    first, last = tokens[begin], tokens[stop - 1]
    text = (
        first
        if stop == begin + 1 and first.kind == "string"
        else Token("text", source[first.start : last.end].strip(), first.start, last.end)
    )
    return [*tokens[at:begin], text], stop


def _open_find_with(current: list[Token]) -> bool:
    """Is `current` a `FIND ... with <pairs>` command whose closing `AS <name>` has not come
    yet (a `#` there belongs to a value)?"""
    if len(current) < 4 or not current[0].is_word("FIND") or not current[2].is_word("WITH"):
        return False
    return not (current[-2].is_word("AS") and current[-1].kind == "word")


def split(tokens: list[Token], source: str) -> list[Piece]:
    """The pieces of the text in order; separators and comments are left out."""
    pieces: list[Piece] = []
    current: list[Token] = []
    depth = 0  # open TRY blocks

    def flush() -> None:
        if current:
            pieces.append(Piece("command", list(current)))
            current.clear()

    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.kind == "comment" and _open_find_with(current):
            tokens[index : index + 1] = _reread(token)
            continue
        if token.kind in ("sep", "comment"):
            flush()
            index += 1
            continue
        if token.is_word("TRY") and not current:
            pieces.append(Piece("block", [token]))
            depth += 1
            index += 1
            continue
        if depth and token.is_word(*_BLOCK_WORDS[1:]):
            flush()
            block = [token]
            index += 1
            if token.is_word("CATCH") and index < len(tokens) and tokens[index].is_word("ANY"):
                block.append(tokens[index])
                index += 1
            depth -= token.is_word("END")
            pieces.append(Piece("block", block))
            continue
        starts_command = not current or current[-1].is_word("DO", "THEN")
        if starts_command and token.is_word(*INSTRUCTION_VERBS):
            found = _free_instruction(tokens, index, source, depth > 0)
            if found is not None:
                made, index = found
                current.extend(made)
                continue
        current.append(token)
        index += 1
    flush()
    return pieces
