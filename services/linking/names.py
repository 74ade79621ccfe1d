"""The name index of a graph and the entity linker that reads a question with it.

The index maps every normalized name of a node to the node: its id, its id without a trailing
year in brackets ("Sunken Voice (2010)" is also "sunken voice"), and the values of its name-like
fields (ALIAS_FIELDS). Normalizing folds case and accents and reads punctuation as a word break,
so "Amélie's Garden" and "amelie s garden" are one name. It is built in one pass over the nodes
(`NameIndexBuilder`, fed node by node), stored with the graph's version, and read back whole.

`link` finds the question's mentions deterministically:
- longest match first: the longest run of the question's words that is a name wins, and its
  words are not read again (so "The Silent Harbor (1987)" is one mention, not two); a lone
  word that opens the sentence links only when spelt exactly as the name (its capital may
  be the sentence's: "Who ..." does not name "WHO");
- then bounded fuzzy matching on what is left: a run holding a capitalized word (not the
  sentence's first) or a number, within FUZZY_DISTANCE edits of a name of as many words, found
  through the names sharing a word's first letters;
- up to `per_mention` nodes per mention (the exact spelling first), the mentions best first.
Nothing in it knows one graph or one benchmark: no word lists.
"""

from __future__ import annotations

import gzip
import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from postel.messages.intent import LinkedEntity

ALIAS_FIELDS = ("name", "label", "title", "alias", "aliases")
MAX_NAME_WORDS = 8
_WORD = re.compile(r"\w+")
_YEAR_SUFFIX = re.compile(r"\s*\(\s*\d{4}\s*\)\s*$")
_PREFIX = 3  # fuzzy candidates share a word's first letters with the mention
_FUZZY_MIN_CHARS = 5
_POSTING_MAX = 5000  # a prefix this common says nothing about which name is meant
_SCORES = {"exact": 1.0, "normalized": 0.95, "alias": 0.9}

How = Literal["exact", "normalized", "alias", "fuzzy"]


def fold(word: str) -> str:
    """A word without case or accents."""
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def normalize(text: str) -> str:
    """The words of `text`, folded, joined by one space."""
    return " ".join(fold(w) for w in _WORD.findall(text))


def _keys(node_id: str, attrs: dict[str, Any]) -> set[str]:
    names = [node_id, _YEAR_SUFFIX.sub("", node_id)]
    for name in ALIAS_FIELDS:
        value = attrs.get(name)
        if isinstance(value, str):
            names.append(value)
        elif isinstance(value, list | tuple):
            names += [v for v in value if isinstance(v, str)]
    keys = {normalize(n) for n in names}
    return {k for k in keys if k and k.count(" ") < MAX_NAME_WORDS}


@dataclass
class NameIndex:
    """Normalized name -> node numbers; `nodes[n]` is (id, entity_type)."""

    nodes: list[tuple[str, str]]
    names: dict[str, list[int]]
    _postings: dict[str, list[str]] | None = field(default=None, repr=False)

    def to_bytes(self) -> bytes:
        body = {"nodes": self.nodes, "names": self.names}
        return gzip.compress(json.dumps(body, ensure_ascii=False).encode(), compresslevel=6)

    @classmethod
    def from_bytes(cls, data: bytes) -> NameIndex:
        body = json.loads(gzip.decompress(data))
        return cls([(i, t) for i, t in body["nodes"]], body["names"])

    def postings(self) -> dict[str, list[str]]:
        """A word's first letters -> the names holding such a word (built on first use)."""
        if self._postings is None:
            found: dict[str, list[str]] = {}
            for key in self.names:
                for word in dict.fromkeys(key.split()):
                    found.setdefault(word[:_PREFIX], []).append(key)
            self._postings = found
        return self._postings


class NameIndexBuilder:
    """Fed node by node (a graph of any size streams through it)."""

    def __init__(self) -> None:
        self._nodes: list[tuple[str, str]] = []
        self._names: dict[str, list[int]] = {}

    def add(self, node_id: str, attrs: dict[str, Any]) -> None:
        number = len(self._nodes)
        self._nodes.append((node_id, str(attrs.get("entity_type") or "")))
        for key in _keys(node_id, attrs):
            self._names.setdefault(key, []).append(number)

    def build(self) -> NameIndex:
        return NameIndex(self._nodes, self._names)


def build_name_index(nodes: Iterable[tuple[str, dict[str, Any]]]) -> NameIndex:
    builder = NameIndexBuilder()
    for node_id, attrs in nodes:
        builder.add(node_id, attrs)
    return builder.build()


@dataclass(frozen=True)
class _Token:
    word: str  # folded
    start: int
    end: int
    capital: bool
    sentence_start: bool


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    for match in _WORD.finditer(text):
        before = text[: match.start()].rstrip()
        out.append(
            _Token(
                fold(match.group()),
                match.start(),
                match.end(),
                match.group()[0].isupper(),
                not before or before[-1] in ".?!:",
            )
        )
    return out


def _mention(text: str, tokens: list[_Token]) -> str:
    start, end = tokens[0].start, tokens[-1].end
    if text[end : end + 1] == ")" and "(" in text[start:end]:
        end += 1
    return text[start:end]


def _how(mention: str, node_id: str, key: str) -> How:
    if mention == node_id:
        return "exact"
    if key == normalize(node_id) or key == normalize(_YEAR_SUFFIX.sub("", node_id)):
        return "normalized"
    return "alias"


def distance_within(a: str, b: str, bound: int) -> int | None:
    """The edit distance of a and b when it is at most `bound`, else None."""
    if abs(len(a) - len(b)) > bound:
        return None
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        if min(current) > bound:
            return None
        previous = current
    return previous[-1] if previous[-1] <= bound else None


def fuzzy_bound(key: str) -> int:
    """Edits allowed for a name this long: none under 5 characters, 1 to 10, then 2."""
    if len(key) < _FUZZY_MIN_CHARS:
        return 0
    return 1 if len(key) <= 10 else 2


def link(
    question: str, index: NameIndex, *, per_mention: int = 3, most: int = 8
) -> list[LinkedEntity]:
    """The nodes the question names, best first (see the module's docstring)."""
    tokens = _tokens(question)
    covered = [False] * len(tokens)
    found: list[tuple[float, int, list[LinkedEntity]]] = []
    longest = min(MAX_NAME_WORDS, len(tokens))
    for size in range(longest, 0, -1):
        for start in range(len(tokens) - size + 1):
            window = tokens[start : start + size]
            if any(covered[start : start + size]):
                continue
            if size == 1 and len(window[0].word) < 3 and not window[0].word.isdigit():
                continue  # a one- or two-letter word names nothing on its own
            key = " ".join(t.word for t in window)
            numbers = index.names.get(key)
            if not numbers:
                continue
            mention = _mention(question, window)
            if size == 1 and window[0].sentence_start and not _spelt_as(mention, numbers, index):
                continue  # "Who" opens a question; it names "WHO" only spelt so
            covered[start : start + size] = [True] * size
            links = [
                LinkedEntity(
                    mention=mention,
                    id=index.nodes[n][0],
                    entity_type=index.nodes[n][1],
                    score=_SCORES[_how(mention, index.nodes[n][0], key)],
                    how=_how(mention, index.nodes[n][0], key),
                )
                for n in numbers
            ]
            links.sort(key=lambda item: -item.score)
            found.append((links[0].score, len(key), links[:per_mention]))
    for size in range(longest, 0, -1):
        for start in range(len(tokens) - size + 1):
            window = tokens[start : start + size]
            if any(covered[start : start + size]) or not _names_something(window):
                continue
            links = _fuzzy(question, window, index, per_mention)
            if links:
                covered[start : start + size] = [True] * size
                found.append((links[0].score, len(links[0].mention), links))
    found.sort(key=lambda item: (-item[0], -item[1]))
    out: list[LinkedEntity] = []
    for _, _, links in found:
        out += [entity for entity in links if entity.id not in {e.id for e in out}]
    return out[:most]


def _spelt_as(mention: str, numbers: list[int], index: NameIndex) -> bool:
    return any(index.nodes[n][0] == mention for n in numbers)


def _names_something(window: list[_Token]) -> bool:
    """Could this run be a misspelt name: a capitalized word past the sentence's start, or
    a number."""
    return any((t.capital and not t.sentence_start) or t.word.isdigit() for t in window)


def _fuzzy(
    question: str, window: list[_Token], index: NameIndex, per_mention: int
) -> list[LinkedEntity]:
    key = " ".join(t.word for t in window)
    bound = fuzzy_bound(key)
    if bound == 0:
        return []
    postings = index.postings()
    size = len(window)
    candidates: set[str] = set()
    for token in window:
        posting = postings.get(token.word[:_PREFIX], [])
        if len(posting) <= _POSTING_MAX:
            candidates.update(c for c in posting if c.count(" ") + 1 == size)
    scored: list[tuple[int, str]] = []
    for candidate in candidates:
        distance = distance_within(key, candidate, bound)
        if distance is not None and distance > 0:
            scored.append((distance, candidate))
    scored.sort()
    mention = _mention(question, window)
    links: list[LinkedEntity] = []
    for distance, candidate in scored:
        for number in index.names[candidate]:
            node_id, entity_type = index.nodes[number]
            score = round(0.8 - 0.1 * distance, 2)
            links.append(
                LinkedEntity(
                    mention=mention, id=node_id, entity_type=entity_type, score=score, how="fuzzy"
                )
            )
    return links[:per_mention]
