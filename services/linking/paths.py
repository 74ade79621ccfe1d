"""The chains of relations a question asks to walk, built from the schema card without a
model (issue 34): a 135M model cannot compose a 3-hop plan, but the question's words, the
entity it links to and the card's relation signatures mostly leave one chain.

1. **The expected answer type** (`answer_types`): the card's types the question's wh-phrase
   names. "Which genres ..." names GENRE; "who" asks for a person, so the card's types whose
   name is a person word; "when" a time, "where" a place. These are English's wh-words, not
   any graph's words; a type the card lacks is never expected.
2. **The relation words** (`relation_words`): each question word outside the linked
   mentions that names a relation of the card (card.similarity: "wrote" names
   `written_by`), with the relations it names best.
3. **The chain** (`question_chains`): from the linked entity's type, the relation words in
   the order of their distance from its mention (English nests outward: "who acted in the
   films directed by the director of X" walks `directed_by` from X first), each walked the
   way its signature joins the type reached so far (`FILM directed_by PERSON` from a FILM
   is `out`, from a PERSON `in`). Where a relation does not join, the hop before is walked
   back first ("the films that share an actor with X": X's actors, back to their films);
   where the chain ends short of the expected type, one hop more reaches it (back the same
   relation first: "who acted together with X" is X's films, then their actors). A relation
   whose two ends are one type is walked both ways, as two chains, unless its name is a
   passive (`influenced_by`) and the question says who the agent is ("by X", "X
   influenced"). The chain ends with a selection when the walk alone does not settle the
   answer: keep the expected type (a graph whose edges name no relation, or a relation
   between several types), leave the start out (two hops, the second the first walked back:
   that chain reaches its start whatever the graph holds).

Each chain has a score: the start's link score, plus its relation words' similarity, less a
penalty for each hop added and each relation word left unwalked. `question_chains` keeps
the best and those that score as well (at most MAX_CHAINS): the planner runs a single one
without asking the model, and lets the model choose among tied ones (two films spelt alike,
a relation between one type with no agent said). An exact spelling outscores a folded one
(the linker's scores), so "Wandering Island" is not tied with "Wandering Island (1947)".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from postel.messages.intent import LinkedEntity
from postel.services.linking.card import (
    mention_spans,
    similarity,
    words_of,
    words_outside,
)

Direction = Literal["out", "in", "both"]

MAX_CHAINS = 3
MAX_HOPS = 3
TIE = 0.0  # only chains that score as well as the best are choices
# how close a word must be to name a type or a relation (card.similarity)
NAMES = 0.75
_ADDED_HOP = 0.3
_UNWALKED = 0.5
_AGENT = 0.1
# what each wh-word asks for, as words a type's name may hold
_WH_ASKS = {
    "who": ("person", "people", "human", "individual"),
    "whom": ("person", "people", "human", "individual"),
    "whose": ("person", "people", "human", "individual"),
    "when": ("date", "time", "year", "period"),
    "where": ("location", "place", "country", "city", "region"),
}
_WH_NAMING = ("which", "what")
_NAMING_WORDS = 3  # "which other films": the type is among the next few words
_WORD = re.compile(r"[^\W_]+")
VARIABLE = "step{}"
ANSWER = "answer"


def gasl_literal(value: str) -> str:
    """`value` as a GASL string literal: single quotes, backslash and quote escaped."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True)
class Hop:
    relation: str  # "": every edge (a graph whose edges name no relation)
    direction: Direction
    reaches: tuple[str, ...]  # the entity types it may end at (empty: unknown)


@dataclass(frozen=True)
class Chain:
    start: LinkedEntity
    hops: tuple[Hop, ...]
    directed: bool
    keep_type: str = ""
    leave_out_start: bool = False
    score: float = 0.0

    @property
    def answer(self) -> str:
        """The variable that holds the answer."""
        selects = self.keep_type or self.leave_out_start
        return ANSWER if selects else VARIABLE.format(len(self.hops))

    def commands(self) -> tuple[str, ...]:
        """The chain as GASL commands: one NEIGHBORS per hop, then the selection if any."""
        out = []
        for number, hop in enumerate(self.hops, start=1):
            source = (
                gasl_literal(self.start.id)
                if number == 1
                else f"${{{VARIABLE.format(number - 1)}}}"
            )
            parts = [f"NEIGHBORS {source}"]
            if self.directed:
                parts.append(f"DIRECTION {hop.direction}")
            if hop.relation:
                parts.append(f"VIA {gasl_literal(hop.relation)}")
            parts.append(f"AS {VARIABLE.format(number)}")
            out.append(" ".join(parts))
        conditions = []
        if self.keep_type:
            conditions.append(f"entity_type = {gasl_literal(self.keep_type)}")
        if self.leave_out_start:
            conditions.append(f"id != {gasl_literal(self.start.id)}")
        if conditions:
            last = VARIABLE.format(len(self.hops))
            out.append(f"SELECT {last} WHERE {' AND '.join(conditions)} AS {ANSWER}")
        return tuple(out)


@dataclass(frozen=True)
class RelationWord:
    """A question word that names relations of the card: where it is, how well, which."""

    offset: int
    score: float
    relations: tuple[str, ...]


def _words(question: str, linked: Sequence[LinkedEntity]) -> list[tuple[str, int]]:
    return words_outside(question, linked, _WORD)


def _names(words: Sequence[str], asked: str) -> float:
    return max((similarity(word, asked) for word in words), default=0.0)


def answer_types(
    card: dict[str, Any], question: str, linked: Sequence[LinkedEntity] = ()
) -> tuple[str, ...]:
    """The card's types the question's wh-phrase asks for, commonest first (see the module's
    docstring); none when it asks for no type the card has."""
    types = list(card.get("entity_types", {}))
    # the words that may name a type: outside the linked mentions ("The Silent Harbor" names
    # no type), function words left out
    words = _words(question, linked)
    for match in _WORD.finditer(question):
        word = match.group().lower()
        if word in _WH_ASKS:
            asked = _WH_ASKS[word]
            return tuple(t for t in types if any(_names(words_of(t), a) >= NAMES for a in asked))
        if word in _WH_NAMING:
            following = [w for w, at in words if at > match.start()][:_NAMING_WORDS]
            for candidate in following:
                found = tuple(t for t in types if _names(words_of(t), candidate) >= NAMES)
                if found:
                    return found
            return ()
    return ()


def relation_words(
    card: dict[str, Any], question: str, linked: Sequence[LinkedEntity] = ()
) -> list[RelationWord]:
    """The question's words (outside the linked mentions) that name relations of the card,
    in the question's order, each with the relations it names best."""
    names = list(dict.fromkeys(r["name"] for r in card.get("relations", [])))
    found = []
    for word, offset in _words(question, linked):
        scored = [(_names(words_of(name), word), name) for name in names]
        best = max((score for score, _ in scored), default=0.0)
        if best >= NAMES:
            found.append(RelationWord(offset, best, tuple(n for s, n in scored if s == best)))
    return found


def question_chains(
    card: dict[str, Any], question: str, linked: Sequence[LinkedEntity]
) -> list[Chain]:
    """The chains the question asks to walk, best first: the best and those that score as
    well (at most MAX_CHAINS); none when it links no entity or names no relation of a graph
    whose edges name them."""
    if not linked:
        return []
    expected = answer_types(card, question, linked)
    words = relation_words(card, question, linked)
    built: list[Chain] = []
    for start in linked:
        if start.score < linked[0].score - TIE:
            continue
        span = mention_spans(question, [start])
        where = span[0] if span else (0, 0)
        ordered = sorted(
            words,
            key=lambda w: (not _owned(question, w, where), _distance(w.offset, where), w.offset),
        )
        for chain in _walks(card, start, ordered, question, where):
            finished = _finish(card, chain, expected, len(ordered))
            if finished is not None:
                built.append(finished)
    if not built:
        return []
    built.sort(key=lambda c: -c.score)
    kept: dict[tuple[str, ...], Chain] = {}
    for chain in built:
        if round(built[0].score - chain.score, 3) <= TIE and chain.commands() not in kept:
            kept[chain.commands()] = chain
    return list(kept.values())[:MAX_CHAINS]


# "<word> of [the] <mention>" and "<mention>'s <word>"
_OF = re.compile(r"[^\W_]+\s+of\s+(?:the\s+)?", re.IGNORECASE)
_POSSESSIVE = re.compile(r"['’]s?\s+")


def _owned(question: str, word: RelationWord, span: tuple[int, int]) -> bool:
    """Whether the word is the mention's own noun ("the director of X", "X's director"),
    which binds before any verb however near: "which films did the director of X write"
    walks `directed_by` from X first."""
    start, end = span
    if word.offset < start:
        return bool(_OF.fullmatch(question[word.offset : start]))
    return bool(_POSSESSIVE.fullmatch(question[end : word.offset]))


def _distance(offset: int, span: tuple[int, int]) -> int:
    start, end = span
    return start - offset if offset < start else offset - end


def _signatures(card: dict[str, Any]) -> dict[str, list[tuple[str, str, int]]]:
    """Each relation name's (source, target, count) signatures."""
    out: dict[str, list[tuple[str, str, int]]] = {}
    for r in card.get("relations", []):
        out.setdefault(r["name"], []).append((r["source"], r["target"], r["count"]))
    return out


def _options(
    card: dict[str, Any], relation: str, at: tuple[str, ...]
) -> list[tuple[Direction, tuple[str, ...]]]:
    """The ways `relation` may be walked from a node of the types `at` (empty: unknown), and
    the types each reaches."""
    signatures = _signatures(card).get(relation, [])
    if not card.get("directed", True):
        reached = {t for s, t, _ in signatures if not at or s in at}
        reached |= {s for s, t, _ in signatures if not at or t in at}
        return [("both", tuple(sorted(reached)))] if reached else []
    outward = tuple(dict.fromkeys(t for s, t, _ in signatures if not at or s in at))
    inward = tuple(dict.fromkeys(s for s, t, _ in signatures if not at or t in at))
    return [(d, r) for d, r in (("out", outward), ("in", inward)) if r]


def _back(hop: Hop, before: tuple[str, ...]) -> Hop:
    """`hop` walked back, to the types it started from."""
    flipped: Direction = {"out": "in", "in": "out", "both": "both"}[hop.direction]  # type: ignore[assignment]
    return Hop(hop.relation, flipped, before)


def _walks(
    card: dict[str, Any],
    start: LinkedEntity,
    ordered: Sequence[RelationWord],
    question: str,
    span: tuple[int, int],
) -> list[Chain]:
    """Every chain the relation words allow from `start` (a branch per way a relation may be
    walked), scored by the words walked; the hops' ends are kept for _finish."""
    directed = bool(card.get("directed", True))
    first: tuple[str, ...] = (start.entity_type,) if start.entity_type else ()
    # (hops, the types reached before each hop, score)
    partial: list[tuple[tuple[Hop, ...], tuple[tuple[str, ...], ...], float]] = [
        ((), (first,), start.score)
    ]
    for word in ordered:
        grown = []
        for hops, reached, score in partial:
            here = reached[-1]
            options: list[tuple[Hop, ...]] = []
            for relation in word.relations:
                for direction, ends in _options(card, relation, here):
                    options.append((Hop(relation, direction, ends),))
            added = 0.0
            if not options and hops:
                # the relation does not join where the chain is: walk the last hop back first
                back = _back(hops[-1], reached[-2])
                for relation in word.relations:
                    for direction, ends in _options(card, relation, back.reaches):
                        options.append((back, Hop(relation, direction, ends)))
                added = _ADDED_HOP
            options = [o for o in options if len(hops) + len(o) <= MAX_HOPS]
            if not options:
                grown.append((hops, reached, score - _UNWALKED))
                continue
            for option in options:
                bonus = _agent_bonus(option[-1], question, word, span) if not hops else 0.0
                grown.append(
                    (
                        hops + option,
                        reached + tuple(h.reaches for h in option),
                        score + word.score - added + bonus,
                    )
                )
        partial = grown
    return [Chain(start, hops, directed, score=score) for hops, _, score in partial]


def _agent_bonus(hop: Hop, question: str, word: RelationWord, span: tuple[int, int]) -> float:
    """A passive relation (`influenced_by`: source influenced by target) between one type:
    when the question says the linked entity is the agent ("by X", or X before the verb:
    "whom did X influence"), the chain walks in from it (X is the target); else out."""
    if not hop.relation.endswith("_by") or hop.direction == "both":
        return 0.0
    before = question[: span[0]].split()
    agent = (bool(before) and before[-1].lower() == "by") or span[1] <= word.offset
    return _AGENT if (hop.direction == "in") == agent else 0.0


def _finish(
    card: dict[str, Any], chain: Chain, expected: tuple[str, ...], words: int
) -> Chain | None:
    """The chain made to end at the expected type: one hop more if it ends short of it (the
    last relation back first, else the commonest relation that reaches it), a walk of every
    edge when the graph's edges name no relation, then the selection; None when it walks
    nothing on a graph whose edges name relations."""
    hops = list(chain.hops)
    score = chain.score
    start_types = (chain.start.entity_type,) if chain.start.entity_type else ()
    at = hops[-1].reaches if hops else start_types
    if expected and (not at or not set(at) & set(expected)) and len(hops) < MAX_HOPS:
        step = _toward(card, hops, at, expected, start_types)
        if step is not None:
            hops.append(step)
            score -= _ADDED_HOP if words else 0.0
    if not hops:
        if card.get("relations"):
            # the question names no relation of a graph whose edges name them: no chain
            # to offer; the model plans
            return None
        # a graph whose edges name no relation: every edge from the start
        hops.append(Hop("", "both", ()))
    end = hops[-1].reaches
    keep = ""
    if expected and set(end) != {expected[0]} and not (len(end) == 1 and end[0] in expected):
        usable = [t for t in expected if not end or t in end]
        keep = usable[0] if usable else expected[0]
    # a chain of a hop and that hop back ("who acted together with X": X's films, their
    # actors) reaches its start again whatever the graph holds: the start is no answer
    returns = len(hops) == 2 and (hops[1].relation, hops[1].direction) == (
        hops[0].relation,
        _back(hops[0], ()).direction,
    )
    return replace(
        chain, hops=tuple(hops), keep_type=keep, leave_out_start=returns, score=round(score, 3)
    )


def _toward(
    card: dict[str, Any],
    hops: list[Hop],
    at: tuple[str, ...],
    expected: tuple[str, ...],
    start_types: tuple[str, ...],
) -> Hop | None:
    """One hop from the types `at` to an expected type: the last hop walked back if that
    reaches one, else the commonest relation from `at` that does."""
    if hops:
        before = hops[-2].reaches if len(hops) > 1 else start_types
        back = _back(hops[-1], before)
        if set(back.reaches) & set(expected):
            return back
    best: tuple[int, Hop] | None = None
    for name, signatures in _signatures(card).items():
        for direction, ends in _options(card, name, at):
            if set(ends) & set(expected):
                count = sum(c for *_, c in signatures)
                if best is None or count > best[0]:
                    best = (count, Hop(name, direction, ends))
    return best[1] if best else None
