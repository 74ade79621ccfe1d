"""Shared by the grammar tests: `sample`, a random sentence a GBNF grammar (as
services.gasl.gbnf's rules) derives, every repetition bounded.
Tests import it as `support.gbnf` (tests/support, on pytest's pythonpath)."""

from __future__ import annotations

import math
import random

from postel.services.gasl.gbnf import Alt, Chars, Expr, Lit, Ref, Repeat, Rules, Seq

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
