"""The GBNF grammar generated from grammar.lark: every sentence it can produce parses as
GASL, and every round answer it can produce reads as a round answer whose commands parse.
Sentences are drawn at random from the generated grammar itself."""

from __future__ import annotations

import json
import math
import random
import re

from postel.services.gasl.gbnf import Alt, Chars, Expr, Lit, Ref, Repeat, Rules, Seq, gasl_rules
from postel.services.gasl.parser import parse_one
from postel.services.planner.round_answer import read_round_answer
from postel.services.planner.round_grammar import round_answer_gbnf, round_answer_rules

# what a negated character class draws from: letters, digits, spaces and a little punctuation
_ALPHABET = "abcxyzQRS019 _-.,:()é"


def _least_depth(expr: Expr, heights: dict[str, float], per_rule: int) -> float:
    """How deep `expr` must expand at least, a rule counting its height plus `per_rule`."""
    match expr:
        case Ref(name):
            return heights[name] + per_rule
        case Seq(items):
            return max((_least_depth(i, heights, per_rule) for i in items), default=0)
        case Alt(options):
            return min(_least_depth(o, heights, per_rule) for o in options)
        case Repeat(item, least, _):
            return 0 if least == 0 else _least_depth(item, heights, per_rule)
    return 0


def _heights(rules: Rules) -> dict[str, float]:
    """How deep each rule must expand at least before it is all characters."""
    heights = dict.fromkeys(rules, math.inf)
    changed = True
    while changed:
        changed = False
        for name, body in rules.items():
            new = _least_depth(body, heights, 1)
            if new < heights[name]:
                heights[name], changed = new, True
    return heights


def sample(rules: Rules, start: str, rng: random.Random) -> str:
    heights = _heights(rules)

    def cost(expr: Expr) -> float:
        return _least_depth(expr, heights, 0)

    def draw(expr: Expr, depth: int) -> str:
        deep = depth > 12
        match expr:
            case Lit(text):
                return text
            case Chars(ranges, negated):
                if negated:
                    allowed = [c for c in _ALPHABET if not any(lo <= c <= hi for lo, hi in ranges)]
                    return rng.choice(allowed)
                lo, hi = rng.choice(ranges)
                return chr(rng.randint(ord(lo), ord(hi)))
            case Ref(name):
                return draw(rules[name], depth + 1)
            case Seq(items):
                return "".join(draw(i, depth) for i in items)
            case Alt(options):
                if deep:
                    least = min(cost(o) for o in options)
                    options = tuple(o for o in options if cost(o) == least)
                return draw(rng.choice(options), depth)
            case Repeat(item, least, most):
                top = least if deep else least + 2
                n = rng.randint(least, min(most, top))
                return "".join(draw(item, depth) for _ in range(n))
        raise TypeError(expr)

    return draw(Ref(start), 0)


def test_every_statement_the_generated_grammar_allows_parses() -> None:
    rules, statement = gasl_rules()
    rng = random.Random(20261125)
    verbs: set[str] = set()
    for _ in range(3000):
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
