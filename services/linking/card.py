"""The schema card of a graph version, and the schema retriever that ranks its relations
against a question.

The card (plain JSON) says what the graph holds, in counts:

    {"directed": true,
     "entity_types": {"PERSON": 9000, "FILM": 9100, ...},            # most frequent first
     "relations": [{"name": "directed_by", "source": "FILM", "target": "PERSON",
                    "count": 9900, "example": ["The Silent Harbor", "Ada Lindsen"]}, ...],
     "node_fields": {"description": "list", "entity_type": "text", "id": "text"}}

A relation name used between several pairs of types has one entry per signature. On an
undirected graph source and target are only the order an edge was written in.

`rank_relations` scores each relation by lexical similarity of its name and of its end types'
names with the question's words (`stem`: an English irregular past form read as its verb, a
common suffix cut and a doubled last consonant undone, so "wrote" and "written" meet, and
"starred" and "starring" are "star"; then the shared prefix); English function words ("has",
"by", "in") name nothing. The relations that touch a linked entity's type score more.
Nothing is trained or tuned to a graph; it only orders what the card holds.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from postel.messages.intent import LinkedEntity
from postel.services.linking.names import fold

_SPLIT = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SUFFIXES = ("ings", "ing", "ers", "ors", "ies", "ied", "ed", "es", "er", "or", "s")
# an English verb's irregular past forms -> the verb: the stems a suffix cut cannot reach
# ("wrote", "written" -> "write"); English, not any graph's words
_IRREGULAR = {
    form: verb
    for verb, *forms in (
        line.split()
        for line in """
        write wrote written
        speak spoke spoken
        sing sang sung
        make made
        give gave given
        take took taken
        see saw seen
        know knew known
        grow grew grown
        draw drew drawn
        drive drove driven
        choose chose chosen
        begin began begun
        bring brought
        buy bought
        build built
        teach taught
        think thought
        find found
        hold held
        lead led
        lose lost
        meet met
        pay paid
        sell sold
        send sent
        tell told
        win won
        fight fought
        break broke broken
        fall fell fallen
        fly flew flown
        forget forgot forgotten
        hide hid hidden
        shoot shot
        steal stole stolen
        throw threw thrown
        wear wore worn
        bear bore born borne
        become became
        come came
        run ran
        sit sat
        stand stood
        """.strip().splitlines()
    )
    for form in forms
}
# English function words: a relation named `has_tags` or `directed_by` is not named by "has"
# or "by"
_FUNCTION_WORDS = """a an the of by to in on at for with from and or is are was were be been
has have had did does do that which who whom whose what when where how"""
FUNCTION_WORDS = frozenset(_FUNCTION_WORDS.split())
_MIN_SHARED = 3
_TYPE_WEIGHT = 0.5
_TOUCHES_LINKED = 0.3
_NEARNESS = 0.2
_FAR = 200  # characters


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return "text"


class SchemaCardBuilder:
    """Fed the nodes, then the relations (each relation's ends must have been fed)."""

    def __init__(self, directed: bool) -> None:
        self._directed = directed
        self._types: Counter[str] = Counter()
        self._type_of: dict[str, str] = {}
        self._fields: dict[str, str] = {}
        self._relations: dict[tuple[str, str, str], list[Any]] = {}

    def add_node(self, node_id: str, attrs: dict[str, Any]) -> None:
        entity_type = str(attrs.get("entity_type") or "UNKNOWN")
        self._types[entity_type] += 1
        self._type_of[node_id] = entity_type
        for name, value in attrs.items():
            kind = _kind(value)
            if self._fields.setdefault(name, kind) != kind:
                self._fields[name] = "mixed"

    def add_relation(self, source: str, target: str, names: list[str]) -> None:
        ends = (self._type_of.get(source, "UNKNOWN"), self._type_of.get(target, "UNKNOWN"))
        for name in names:
            entry = self._relations.setdefault((name, *ends), [0, [source, target]])
            entry[0] += 1

    def build(self) -> dict[str, Any]:
        relations = [
            {"name": n, "source": s, "target": t, "count": c, "example": example}
            for (n, s, t), (c, example) in self._relations.items()
        ]
        relations.sort(key=lambda r: (-r["count"], r["name"]))
        return {
            "directed": self._directed,
            "entity_types": dict(sorted(self._types.items(), key=lambda i: (-i[1], i[0]))),
            "relations": relations,
            "node_fields": dict(sorted(self._fields.items())),
        }


def stem(word: str) -> str:
    """A word's crude lemma: an irregular form's verb, else the word less a common suffix
    ("-ies"/"-ied" back to "y", a doubled last consonant undone: "starred" -> "star")."""
    word = fold(word)
    word = _IRREGULAR.get(word, word)
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_SHARED:
            base = word[: -len(suffix)]
            if suffix in ("ies", "ied"):
                return base + "y"
            if base[-1] == base[-2] and base[-1] not in "lsz":
                return base[:-1]
            return base
    return word


def words_of(name: str) -> list[str]:
    """A name's words: split at underscores, spaces, dashes and lowerUpper joins; function
    words left out."""
    return [w for w in (w.lower() for w in _SPLIT.findall(name)) if w not in FUNCTION_WORDS]


def similarity(a: str, b: str) -> float:
    """Shared prefix of the two stems over the longer one; 0 under three letters."""
    sa, sb = stem(a), stem(b)
    shared = 0
    for ca, cb in zip(sa, sb, strict=False):
        if ca != cb:
            break
        shared += 1
    return shared / max(len(sa), len(sb)) if shared >= _MIN_SHARED else 0.0


def _best(words: list[str], asked: list[tuple[str, int]]) -> tuple[float, int]:
    """The best similarity of `words` with the question's words, and where in the question
    (a character offset) that word is; (0, -1) when none is similar."""
    best, where = 0.0, -1
    for word in words:
        for question_word, offset in asked:
            score = similarity(word, question_word)
            if score > best:
                best, where = score, offset
    return best, where


def rank_relations(
    card: dict[str, Any], question: str, linked: Sequence[LinkedEntity] = ()
) -> list[dict[str, Any]]:
    """The card's relations, each with its `score`, its `lexical` part (how much its own
    words and its end types' words are the question's) and `named` (its own words' part),
    best first (ties: the commoner
    first). The linked mentions' own words do not count: a film called "The Director" says
    nothing about which relation is asked for. Of two relations the question names, the one
    named nearer a linked mention scores a little more (it is walked first: "who acted in the
    films directed by X" walks directed_by from X, then starred_actors)."""
    spans = mention_spans(question, linked)
    asked = _asked(question, linked)
    types = {e.entity_type for e in linked}
    ranked = []
    for relation in card.get("relations", []):
        ends = words_of(relation["source"]) + words_of(relation["target"])
        named, where = _best(words_of(relation["name"]), asked)
        typed, _ = _best(ends, asked)
        lexical = named + _TYPE_WEIGHT * typed
        score = lexical
        if types & {relation["source"], relation["target"]}:
            score += _TOUCHES_LINKED
        if named and spans:
            distance = min(min(abs(where - start), abs(where - end)) for start, end in spans)
            score += _NEARNESS * (1 - min(distance, _FAR) / _FAR)
        ranked.append(
            {**relation, "score": round(score, 3), "lexical": round(lexical, 3), "named": named}
        )
    ranked.sort(key=lambda r: (-r["score"], -r["count"], r["name"]))
    return ranked


def relation_mentions(
    card: dict[str, Any], question: str, linked: Sequence[LinkedEntity] = ()
) -> int:
    """How many of the question's words (outside the linked mentions) name one of the card's
    relations: "who acted in the films directed by X" names two."""
    names = [words_of(r["name"]) for r in card.get("relations", [])]
    return sum(
        1
        for word, _ in _asked(question, linked)
        if any(similarity(w, word) > 0 for words in names for w in words)
    )


def _asked(question: str, linked: Sequence[LinkedEntity]) -> list[tuple[str, int]]:
    return words_outside(question, linked, _SPLIT)


def words_outside(
    question: str, linked: Sequence[LinkedEntity], word: re.Pattern[str]
) -> list[tuple[str, int]]:
    """The question's words (as `word` cuts them) outside the linked mentions, with their
    offsets, function words left out."""
    spans = mention_spans(question, linked)
    return [
        (m.group(), m.start())
        for m in word.finditer(question)
        if not any(start <= m.start() < end for start, end in spans)
        and m.group().lower() not in FUNCTION_WORDS
    ]


def mention_spans(question: str, linked: Sequence[LinkedEntity]) -> list[tuple[int, int]]:
    return [
        (found, found + len(e.mention))
        for e in linked
        if e.mention and (found := question.find(e.mention)) >= 0
    ]


def named_types(
    card: dict[str, Any], question: str, linked: Sequence[LinkedEntity] = ()
) -> list[str]:
    """The card's entity types the question's words name ("which genres" names GENRE)."""
    asked = _asked(question, linked)
    return [name for name in card.get("entity_types", {}) if _best(words_of(name), asked)[0] > 0]
