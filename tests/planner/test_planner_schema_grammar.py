"""The per-job schema grammar (services.planner.schema_grammar): every answer it allows reads
as a round answer whose commands parse as GASL, its only literals are the graph's own names,
and a literal outside the schema is impossible under it."""

from __future__ import annotations

import importlib.util
import json
import random
import re
from dataclasses import replace
from functools import cache

import pytest
from postel.messages.gasl import ExecutionRecord
from postel.services.gasl.gbnf import Alt, Chars, Expr, Lit, Ref, Repeat, Rules, Seq
from postel.services.gasl.parser import parse_one
from postel.services.linking.aids import build_aids
from postel.services.linking.names import link
from postel.services.planner.round_answer import read_round_answer
from postel.services.planner.schema_grammar import (
    SchemaChoice,
    answerable,
    schema_choice,
    schema_round_gbnf,
    schema_round_rules,
)
from support.gbnf import sample

NODES = [
    ("Sunken Voice", {"entity_type": "FILM", "description": ["a film"]}),
    ("O'Hara Bay", {"entity_type": "FILM"}),
    ("Ada Lindsen", {"entity_type": "PERSON"}),
    ("heist", {"entity_type": "TAG"}),
]
RELATIONS = [
    ("Sunken Voice", "Ada Lindsen", ["directed_by"]),
    ("O'Hara Bay", "Ada Lindsen", ["starred_actors"]),
    ("Sunken Voice", "heist", ["has_tags"]),
]
_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")


def choice(
    question: str = "Who directed Sunken Voice and O'Hara Bay?", *, chains: bool = False
) -> SchemaChoice:
    """The choice for `question`; without `chains`, the free chain grammar's (the one a
    question gets when the card gives it no chain)."""
    aids = build_aids(NODES, RELATIONS, directed=True)
    chosen = schema_choice(aids.card, question, link(question, aids.names))
    return chosen if chains else replace(chosen, chains=(), chain_answers=())


def matches(rules: Rules, text: str) -> bool:
    """Whether the grammar derives `text` from `root` (every repetition is bounded and no
    rule is left-recursive, so the set of end positions is finite)."""

    @cache
    def rule(name: str, pos: int) -> frozenset[int]:
        return ends(rules[name], pos)

    def ends(expr: Expr, pos: int) -> frozenset[int]:
        match expr:
            case Lit(literal):
                return frozenset({pos + len(literal)} if text.startswith(literal, pos) else ())
            case Chars(ranges, negated):
                if pos >= len(text):
                    return frozenset()
                inside = any(lo <= text[pos] <= hi for lo, hi in ranges)
                return frozenset({pos + 1} if inside != negated else ())
            case Ref(name):
                return rule(name, pos)
            case Seq(items):
                at = frozenset({pos})
                for item in items:
                    at = frozenset(e for p in at for e in ends(item, p))
                return at
            case Alt(options):
                return frozenset(e for o in options for e in ends(o, pos))
            case Repeat(item, least, most):
                found, at = set(), frozenset({pos})
                for count in range(most + 1):
                    if count >= least:
                        found |= at
                    at = frozenset(e for p in at for e in ends(item, p))
                    if not at:
                        break
                return frozenset(found)
        raise TypeError(expr)

    return len(text) in ends(Ref("root"), 0)


def _literals(commands: list[str]) -> set[str]:
    return {m.replace("\\'", "'") for c in commands for m in _QUOTED.findall(c)}


@pytest.mark.parametrize("compact", [True, False])
def test_every_answer_it_allows_reads_and_names_only_the_schema(compact: bool) -> None:
    chosen = choice()
    rules = schema_round_rules(chosen, ("step1",), compact=compact)
    rng = random.Random(3)
    for _ in range(60):
        text = sample(rules, "root", rng)
        answer = read_round_answer(text)
        commands = answer.actions[0].commands if answer.actions else []
        for command in commands:
            parse_one(command)
        assert _literals(commands) <= set(chosen.strings()), text
        if answer.decision == "complete" and compact:  # the full form also takes free text
            assert answer.answer == "${step1}"


def test_a_literal_outside_the_schema_is_impossible() -> None:
    chosen = choice()
    assert chosen.entities[:2] == (("Sunken Voice", "FILM"), ("O'Hara Bay", "FILM"))
    rules = schema_round_rules(chosen, compact=True)
    walk = '{{"decision": "continue", "commands": ["NEIGHBORS {start} VIA {via} AS step1 "]}}'
    assert matches(rules, walk.format(start="'Sunken Voice'", via="'directed_by'"))
    assert matches(rules, walk.format(start="'O\\\\'Hara Bay'", via="'directed_by'"))
    # an id the linker did not find, a relation the graph lacks, a type in place of an id
    assert not matches(rules, walk.format(start="'Ada Lindsen'", via="'directed_by'"))
    assert not matches(rules, walk.format(start="'Sunken Voice'", via="'produced_by'"))
    assert not matches(rules, walk.format(start="'FILM'", via="'directed_by'"))
    # the whole-language form: a string outside the schema cannot be written anywhere
    full = schema_round_rules(chosen, compact=False)
    find = (
        '{{"evaluation": "", "decision": "continue", "hypothesis": "", "answer": null, '
        '"next_actions": [{{"action": "continue", "confidence": 0.9, "plan": {{"why": "", '
        '"commands": ["FIND NODES WHERE entity_type = {literal} AS step1 "]}}}}]}}'
    )
    assert matches(full, find.format(literal="'FILM'"))
    assert not matches(full, find.format(literal="'ORGANIZATION'"))


def test_complete_names_only_the_variable_the_last_plan_filled() -> None:
    chosen = choice()
    found = [
        ExecutionRecord(command="NEIGHBORS ...", status="success", count=2, variable="step1"),
        ExecutionRecord(command="NEIGHBORS ...", status="success", count=3, variable="step2"),
    ]
    assert answerable(chosen, found) == ("step2",)
    assert answerable(chosen, [found[0].model_copy(update={"count": 0})]) == ()
    done = schema_round_rules(chosen, ("step2",), compact=True)
    assert matches(done, "COMPLETE: ${step2}")
    assert not matches(done, "COMPLETE: ${step1}")
    assert not matches(schema_round_rules(chosen, compact=True), "COMPLETE: ${step2}")


def test_the_chain_has_one_walk_per_relation_the_question_names() -> None:
    chosen = choice("Who acted in the films directed by Ada Lindsen?")
    assert chosen.walks == 2 and chosen.entities == (("Ada Lindsen", "PERSON"),)
    rules = schema_round_rules(chosen, compact=True)
    two = (
        '{"decision": "continue", "commands": ["NEIGHBORS \'Ada Lindsen\' VIA \'directed_by\' '
        'AS step1 ", "NEIGHBORS ${step1} VIA \'starred_actors\' AS step2 "]}'
    )
    assert matches(rules, two)
    # a walk from a variable no command made yet cannot be written
    assert not matches(rules, two.replace("${step1}", "${step2}"))


def test_the_grammar_is_cached_and_small() -> None:
    chosen = choice()
    assert schema_round_gbnf(chosen, compact=True) is schema_round_gbnf(chosen, compact=True)
    assert len(schema_round_gbnf(chosen, compact=True)) < 3000


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="needs llama-cpp")
def test_llama_cpp_loads_the_grammar() -> None:
    from llama_cpp import LlamaGrammar

    for compact in (True, False):
        LlamaGrammar.from_string(schema_round_gbnf(choice(), ("step1",), compact=compact), False)
    # the card's chains as the only plans (a quote escaped inside a JSON string)
    LlamaGrammar.from_string(schema_round_gbnf(choice(chains=True), (), compact=True), False)


def test_with_the_cards_chains_the_plan_is_one_of_them_whole() -> None:
    chosen = choice(chains=True)
    assert len(chosen.chains) == 2  # two films linked, tied: one chain from each
    rules = schema_round_rules(chosen, compact=True)
    for chain in chosen.chains:
        quoted = ", ".join(json.dumps(command) for command in chain)
        assert matches(rules, f'{{"decision": "continue", "commands": [{quoted}]}}')
    free = "NEIGHBORS 'Sunken Voice' VIA 'directed_by' AS step1 "
    assert not matches(rules, f'{{"decision": "continue", "commands": ["{free}"]}}')
