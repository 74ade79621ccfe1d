"""The GBNF grammar generated from grammar.lark: every sentence it can produce parses as
GASL, and every round answer it can produce reads as a round answer whose commands parse.
Sentences are drawn at random from the generated grammar itself."""

from __future__ import annotations

import json
import random
import re

from postel.services.gasl.gbnf import gasl_rules
from postel.services.gasl.parser import parse_one
from postel.services.planner.round_answer import read_round_answer
from postel.services.planner.round_grammar import round_answer_gbnf, round_answer_rules
from support.gbnf import sample


def test_every_statement_the_generated_grammar_allows_parses() -> None:
    rules, statement = gasl_rules()
    rng = random.Random(20261125)
    verbs: set[str] = set()
    # every verb comes up within the first 100 draws; the rest walk the forms of each
    for _ in range(800):
        text = sample(rules, statement, rng)
        command = parse_one(text)
        verbs.add(type(command).__name__)
        assert '"' not in text and "\\" not in text and "\n" not in text
    # the draw reaches every command of the language
    assert len(verbs) >= 30, sorted(verbs)


def test_every_round_answer_the_grammar_allows_reads_with_parsing_commands() -> None:
    rules = round_answer_rules()
    rng = random.Random(7)
    decisions = set()
    for _ in range(300):
        text = sample(rules, "root", rng)
        raw = json.loads(text)
        answer = read_round_answer(text)
        decisions.add(answer.decision)
        for action in answer.actions:
            for command in action.commands:
                parse_one(command)
        assert raw["evaluation"].strip() == answer.evaluation
    assert decisions == {"continue", "refine", "pivot", "complete"}


def test_the_gbnf_text_names_every_rule_it_uses() -> None:
    text = round_answer_gbnf()
    rules = dict(line.split(" ::= ", 1) for line in text.splitlines())
    assert text.startswith("root ::= ")
    for name, body in rules.items():
        bare = re.sub(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]', " ", body)
        for used in re.findall(r"[a-z][a-z0-9-]*", bare):
            assert used in rules, (used, name)
