"""The spellings models write for GASL commands (the reference dialect), read as canonical text.

Models trained on other graph-reasoning prompts write the same commands differently:
`FIND nodes with entity_type=COUNTRY AS c`, `PROCESS p with instruction: first names AS f`,
`ON EMPTY x do ...`, `COUNT x field f`, `CREATE_NODES from x with type: T`. The parser tries
the canonical grammar first and this only when that fails. The text is cut into tokens
(tokens.py: a quoted string is one token, so its `;` and quotes are its own), the tokens into
commands and TRY's block words (statements.py), and each command that does not parse as
written goes through every rule of rules.py in a fixed order, so forms compose. A command
that parses as written is never rewritten, and a form that could mean two things is left to
fail with its hint, or refused with one of its own (`Rewrite.refusals`).

A command read through a rule keeps what the model wrote (`Command.written`) beside its
canonical text; the execution record and the next round's prompt show both, so the model
converges on the canonical spelling.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from postel.services.gasl.dialect.rules import (
    RULES,
    Context,
    DialectRefused,
    rewrite_command,
    split_into,
)
from postel.services.gasl.dialect.statements import split
from postel.services.gasl.dialect.tokens import render, tokenize

__all__ = ["RULES", "Rewrite", "canonical"]


@dataclass
class Rewrite:
    """The text with every dialect form made canonical (lines kept: a rewritten command
    stays on its line), the names of the rules that applied, and for each line a refused
    form was on, the hint saying what to write instead."""

    text: str
    applied: list[str] = field(default_factory=list)
    refusals: dict[int, str] = field(default_factory=dict)


def canonical(text: str, parses: Callable[[str], bool]) -> Rewrite:
    """`text` with its dialect forms rewritten; `parses(command)` says whether one command
    is canonical GASL as written (such a command is kept as it is)."""
    context = Context(source=text, parses=parses)
    edits: list[tuple[int, int, str]] = []
    refusals: dict[int, str] = {}
    open_blocks = 0
    for piece in split(tokenize(text), text):
        if piece.kind == "block":
            first = piece.tokens[0]
            open_blocks += first.is_word("TRY") - first.is_word("END")
            if first.is_word("CATCH") and len(piece.tokens) == 1:
                context.applied.append("TRY ... CATCH without ANY")
                edits.append((piece.start, piece.end, "CATCH ANY"))
            continue
        try:
            made = rewrite_command(piece.tokens, context)
        except DialectRefused as refused:
            refusals[text.count("\n", 0, piece.start) + 1] = refused.hint
            made = piece.tokens
        if made is not piece.tokens:
            edits.append((piece.start, piece.end, render(made)))
        _body, into = split_into(made)
        if made[0].is_word("DECLARE") and len(made) > 1:
            context.bound.add(made[1].text)
        elif into is not None:
            context.previous_target = into.text
            context.bound.add(into.text)
    out = text
    for start, end, replacement in reversed(edits):
        out = out[:start] + replacement + out[end:]
    if open_blocks > 0:
        context.applied.append("TRY ... without END")
        out = out.rstrip() + " END" * open_blocks
    return Rewrite(out, context.applied, refusals)
