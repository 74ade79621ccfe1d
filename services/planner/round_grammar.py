"""The grammar an HDT round answer is decoded under when the model's endpoint can constrain
decoding (POSTEL_LLM_GRAMMAR): the JSON object the `hdt_round` prompt asks for, whose plan
commands are GASL statements by the grammar of services/gasl (generated from it, see
services.gasl.gbnf). A constrained answer always reads as a round answer and every command
in it parses; only a reply cut short by its token budget can still fail.

The object has two shapes: `complete` with a non-empty answer, or a decision to go on with
MAX_ACTIONS action(s) of one to MAX_COMMANDS commands, one statement per command string.
"""

from __future__ import annotations

from functools import cache

from postel.services.gasl.gbnf import (
    Alt,
    Chars,
    Expr,
    Lit,
    Ref,
    Repeat,
    Rules,
    Seq,
    gasl_rules,
    json_text_char,
)
from postel.services.gasl.gbnf import render as render_rules

# the planner runs the most confident action only, and a small model's answer must fit its
# token budget: one action of at most six commands
MAX_ACTIONS = 1
MAX_COMMANDS = 6
# Free text in the answer's string fields: bounded, so a looping model still ends.
MAX_TEXT_CHARS = 160


def _key(name: str, value: Expr, last: bool = False) -> Seq:
    return Seq((Lit(f'"{name}": '), value, Lit("" if last else ", ")))


def _listed(item: Expr, most: int) -> Expr:
    """One to `most` items, comma-separated."""
    if most == 1:
        return item
    return Seq((item, Repeat(Seq((Lit(", "), item)), 0, most - 1)))


def _text(least: int, most: int) -> Seq:
    return Seq((Lit('"'), Repeat(json_text_char(), least, most), Lit('"')))


@cache
def round_answer_rules() -> Rules:
    return round_rules(*gasl_rules(in_json_string=True))


def round_rules(
    gasl: Rules,
    statement: str,
    text_chars: int = MAX_TEXT_CHARS,
    references: tuple[str, ...] = (),
    *,
    complete: bool = True,
) -> Rules:
    """The round answer over the GASL rules `gasl` (whose statement rule is `statement`):
    free text fields of at most `text_chars`; with `references` (`${var}` texts), a bare
    `COMPLETE: <reference>` line is a whole answer too; without `complete`, the answer can
    only go on with a plan."""
    text = Ref("text")
    action = Seq(
        (
            Lit("{"),
            _key("action", Ref("going-on")),
            _key("confidence", Ref("confidence")),
            Lit('"plan": {'),
            _key("why", text),
            Lit('"commands": ['),
            _listed(Ref("command"), MAX_COMMANDS),
            Lit("]}}"),
        )
    )
    going_on = Alt((Lit('"continue"'), Lit('"refine"'), Lit('"pivot"')))
    finished = Seq(
        (
            _key("decision", Lit('"complete"')),
            _key("hypothesis", text),
            _key("answer", Ref("answer"), last=True),
        )
    )
    go_on = Seq(
        (
            _key("decision", Ref("going-on")),
            _key("hypothesis", text),
            _key("answer", Lit("null")),
            Lit('"next_actions": ['),
            _listed(Ref("action"), MAX_ACTIONS),
            Lit("]"),
        )
    )
    decided = Alt((finished, go_on)) if complete else go_on
    answer_object = Seq((Lit("{"), _key("evaluation", text), decided, Lit("}")))
    by_reference = Seq((Lit("COMPLETE: "), Alt(tuple(Lit(r) for r in references))))
    rules: Rules = {
        "root": Alt((answer_object, by_reference)) if references else answer_object,
        "going-on": going_on,
        "action": action,
        "command": Seq((Lit('"'), Ref(statement), Lit('"'))),
        "text": _text(0, text_chars),
        "answer": _text(1, text_chars),  # a complete decision must say what the answer is
        "confidence": Seq(
            (Alt((Lit("0"), Lit("1"))), Repeat(Seq((Lit("."), Chars((("0", "9"),)))), 0, 1))
        ),
    }
    return {**rules, **gasl}


@cache
def round_answer_gbnf() -> str:
    """The GBNF text, `root` first."""
    return render_rules(round_answer_rules())


def compact_round_rules(
    gasl: Rules, commands: Expr, references: tuple[str, ...], *, complete: bool
) -> Rules:
    """The short round answer a small model writes: a decision to go on and its commands
    (`{"decision": "continue", "commands": [...]}`, which read_round_answer reads as one
    action; `commands` is the list's inside, command strings and commas), or, with
    `complete`, a bare `COMPLETE: <reference>` line."""
    go_on = Seq(
        (
            Lit('{"decision": '),
            Ref("going-on"),
            Lit(', "commands": ['),
            commands,
            Lit("]}"),
        )
    )
    by_reference = Seq((Lit("COMPLETE: "), Alt(tuple(Lit(r) for r in references))))
    rules: Rules = {
        "root": Alt((go_on, by_reference)) if complete else go_on,
        "going-on": Alt((Lit('"continue"'), Lit('"refine"'), Lit('"pivot"'))),
    }
    return {**rules, **gasl}
