"""The QA movie graph: the KGQA benchmark's knowledge graph and questions, generated from
a seed (`postel bench qa`, and the tests of its planners and oracle).

A movie knowledge graph in the style of MetaQA's: FILM nodes with edges that point from the
film to a PERSON (`directed_by`, `written_by`, `starred_actors`), a GENRE (`has_genre`), a
TAG (`has_tags`), a LANGUAGE (`in_language`) and a YEAR (`release_year`). People appear in
films with a skewed popularity, so some have one credit and some hundreds. It is written as
GraphML (a MultiDiGraph: a person who directed and wrote a film is two relations of one
pair), the format `postel graph add` takes.
Names collide the way real ones do, and those collisions are the hard cases a plan must
quote exactly: a title drawn twice carries its year ("The Silent Harbor (1987)"), a person's
name drawn twice an initial ("Ada Bergson K."). One film in NAMESAKE_EVERY remakes an
earlier title and one person in NAMESAKE_EVERY shares an earlier name, so a graph of any
size holds such names; and one question in HARD_QUESTION_EVERY starts at one, so a small
question set holds them too. The other hard cases are in the answers: one question in
HARD_ANSWER_EVERY has none (MetaQA's "which films did X direct" for someone who directed
nothing), one a big answer (BIG_ANSWER names or more: the films of a genre, or sharing an
actor with a popular film).

Questions follow chains of relations from one named entity (1, 2 or 3 hops); the oracle
answers them on the generated MultiDiGraph with networkx alone, independently of GASL: each
hop is the set of nodes joined to the previous set by that relation, walked the way the
relation points (`out`) or against it (`in`). Some questions leave the start entity out of
the answer ("who acted with X" is not X).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import networkx as nx

Direction = Literal["out", "in"]

ENTITY_TYPES = ("FILM", "PERSON", "GENRE", "TAG", "LANGUAGE", "YEAR")
RELATIONS = (
    "directed_by",
    "written_by",
    "starred_actors",
    "has_genre",
    "has_tags",
    "in_language",
    "release_year",
)
# A question is kept only if its answer has 1..MAX_ANSWER names and no hop on the way reaches
# more than MAX_HOP_SET nodes (well under GASL's default max_results, 1000); an empty-answer
# question's answer has none, a big-answer question's BIG_ANSWER..MAX_BIG_ANSWER names (and no
# hop more than MAX_BIG_ANSWER nodes).
MAX_ANSWER = 40
MAX_HOP_SET = 400
BIG_ANSWER = 100
MAX_BIG_ANSWER = 900


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_GENRES = _words(
    "Drama Comedy Thriller Horror Romance Western Documentary Animation Musical Mystery "
    "Adventure Fantasy Crime War Biography Noir Satire Sports Family Science_Fiction"
)
_LANGUAGES = _words(
    "English French German Italian Spanish Japanese Korean Hindi Swedish Danish Russian "
    "Portuguese Polish Turkish Mandarin"
)
_TAG_WORDS = _words(
    "heist revenge time-travel coming-of-age road-trip small-town dystopia courtroom "
    "boxing spies pirates vampires zombies aliens robots dragons submarine jazz ballet "
    "chess desert jungle arctic island circus prison hospital newsroom casino railway "
    "lighthouse orphan twins amnesia betrayal friendship rivalry inheritance blackmail "
    "kidnapping shipwreck earthquake epidemic election strike monastery vineyard carnival "
    "masquerade"
)
_TAG_MODIFIERS = _words(
    "dark quiet slow bittersweet surreal gritty cult classic witty tense epic cozy "
    "stylish bleak playful lyrical"
)
_FIRST = _words(
    "Ada Ben Clara Dmitri Elena Farid Greta Hugo Ines Jonas Kaito Lena Marco Nadia Oskar "
    "Priya Quentin Rosa Samir Tove Umar Vera Wes Xenia Yusuf Zora Anton Bianca Cyril "
    "Dalia Emil Freya Gideon Hana Ivo Juno Kasper Lotte Milo Nora Otto Paula Rafael "
    "Saskia Theo Ulla Viktor Wanda Yara Zeno Alma Bruno Celia Dario Esme Felix Gemma "
    "Henrik Ilse Joel"
)
_SURNAME_HEADS = _words(
    "Ander Bel Cor Dal Eck Fal Gar Hol Ist Jor Kal Lind Mor Nor Ost Pel Quin Ros Sten Tor "
    "Ul Vas Wil Yor Zan Berg Fern Hald Kess Mar"
)
_SURNAME_TAILS = _words("sen son berg ström ez ova ini ski ley ford mann quist lund ard ette")
_TITLE_ADJECTIVES = _words(
    "Silent Crimson Hidden Broken Golden Distant Frozen Burning Hollow Restless Forgotten "
    "Velvet Midnight Electric Paper Iron Glass Wild Lonely Secret Bitter Endless Falling "
    "Northern Southern Savage Gentle Shattered Painted Scarlet Wandering Sleeping Last "
    "First Lost Sunken Twisted Quiet Bright Pale Ancient"
)
_TITLE_NOUNS = _words(
    "Harbor Garden River Mirror Kingdom Season Station Orchard Letter Summer Winter "
    "Mountain Empire Circle Voyage Witness Shadow Signal Island Bridge Tower Engine "
    "Frontier Lantern Promise Theory Ballad Crossing Horizon Machine Voice Tide Border "
    "Compass Hunter Stranger Dancer Legacy Rebellion Parade Cathedral Echo Desert Canyon "
    "Forest Highway Carnival"
)


@dataclass(frozen=True)
class RelationHop:
    """One step of a question's path through the graph: along a relation, either way."""

    relation: str
    direction: Direction  # out: the way the relation points (film -> person), in: against it


@dataclass(frozen=True)
class Template:
    """A question shape: its text with `{start}`, the start's entity type and its hops."""

    name: str
    text: str
    start_type: str
    hops: tuple[RelationHop, ...]
    exclude_start: bool = False


def _hops(*spec: str) -> tuple[RelationHop, ...]:
    """`"directed_by>"` walks the relation as it points, `"<directed_by"` against it."""
    out = []
    for item in spec:
        if item.endswith(">"):
            out.append(RelationHop(item[:-1], "out"))
        else:
            out.append(RelationHop(item[1:], "in"))
    return tuple(out)


TEMPLATES: tuple[Template, ...] = (
    # 1 hop
    Template("film_directors", "Who directed {start}?", "FILM", _hops("directed_by>")),
    Template("film_actors", "Who acted in {start}?", "FILM", _hops("starred_actors>")),
    Template("film_writers", "Who wrote {start}?", "FILM", _hops("written_by>")),
    Template("film_genres", "Which genres is {start}?", "FILM", _hops("has_genre>")),
    Template("director_films", "Which films did {start} direct?", "PERSON", _hops("<directed_by")),
    Template("actor_films", "Which films did {start} act in?", "PERSON", _hops("<starred_actors")),
    Template("tag_films", "Which films are tagged {start}?", "TAG", _hops("<has_tags")),
    # 2 hops
    Template(
        "director_actors",
        "Who acted in the films directed by {start}?",
        "PERSON",
        _hops("<directed_by", "starred_actors>"),
    ),
    Template(
        "actor_directors",
        "Who directed the films that {start} acted in?",
        "PERSON",
        _hops("<starred_actors", "directed_by>"),
    ),
    Template(
        "writer_genres",
        "Which genres are the films written by {start}?",
        "PERSON",
        _hops("<written_by", "has_genre>"),
    ),
    Template(
        "costars",
        "Who acted together with {start} in a film?",
        "PERSON",
        _hops("<starred_actors", "starred_actors>"),
        exclude_start=True,
    ),
    Template(
        "same_director_films",
        "Which other films were directed by the director of {start}?",
        "FILM",
        _hops("directed_by>", "<directed_by"),
        exclude_start=True,
    ),
    # 3 hops
    Template(
        "director_peer_actors",
        "Who acted in films directed by the director of {start}?",
        "FILM",
        _hops("directed_by>", "<directed_by", "starred_actors>"),
    ),
    Template(
        "writer_peer_directors",
        "Who directed the films written by the writers of {start}?",
        "FILM",
        _hops("written_by>", "<written_by", "directed_by>"),
    ),
    Template(
        "shared_actor_genres",
        "Which genres are the films that share an actor with {start}?",
        "FILM",
        _hops("starred_actors>", "<starred_actors", "has_genre>"),
    ),
    Template(
        "director_writer_films",
        "Which films were written by the writers of films directed by {start}?",
        "PERSON",
        _hops("<directed_by", "written_by>", "<written_by"),
    ),
)


BIG_TEMPLATES: tuple[Template, ...] = (
    Template("genre_films", "Which films are {start} films?", "GENRE", _hops("<has_genre")),
    Template(
        "shared_actor_films",
        "Which other films share an actor with {start}?",
        "FILM",
        _hops("starred_actors>", "<starred_actors"),
        exclude_start=True,
    ),
    Template(
        "director_shared_actor_films",
        "Which films share an actor with the films directed by {start}?",
        "PERSON",
        _hops("<directed_by", "starred_actors>", "<starred_actors"),
    ),
)
"""Shapes that reach many films from a popular start: the big-answer questions' (the 1-hop one
needs a large graph; a small one's big answers come from the 2- and 3-hop ones)."""


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    template: str
    start: str
    start_type: str
    hops: tuple[RelationHop, ...]
    exclude_start: bool
    answer: frozenset[str]

    @property
    def hop_count(self) -> int:
        return len(self.hops)


# --- the graph ------------------------------------------------------------------------------


def qa_movie_graph(triples: int, seed: int = 7) -> nx.MultiDiGraph:
    """About `triples` relations (never fewer), films added until the count is reached."""
    rng = random.Random(seed)
    films_wanted = max(4, triples // 11)
    people = _people(rng, max(8, films_wanted * 9 // 10))
    tags = _tags(max(12, films_wanted // 20))
    graph = nx.MultiDiGraph()
    for name, kind in [
        *((g.replace("_", " "), "GENRE") for g in _GENRES),
        *((lang, "LANGUAGE") for lang in _LANGUAGES),
        *((t, "TAG") for t in tags),
        *((p, "PERSON") for p in people),
    ]:
        graph.add_node(name, entity_type=kind, description=f"a {kind.lower()}")
    titles: set[str] = set()
    drawn_titles: list[str] = []
    relations = 0
    while relations < triples:
        year = rng.randrange(1930, 2024)
        title = _title(rng, year, titles, drawn_titles)
        genre = rng.choice(_GENRES).replace("_", " ")
        graph.add_node(title, entity_type="FILM", description=f"a {year} {genre.lower()} film")
        if not graph.has_node(str(year)):
            graph.add_node(str(year), entity_type="YEAR", description="a release year")
        credits: list[tuple[str, str]] = [("release_year", str(year)), ("has_genre", genre)]
        credits += [
            ("has_genre", g.replace("_", " ")) for g in rng.sample(_GENRES, rng.randint(0, 1))
        ]
        credits.append(("in_language", rng.choice(_LANGUAGES)))
        credits += [("has_tags", t) for t in rng.sample(tags, rng.randint(0, 3))]
        directors = _cast(rng, people, 1 if rng.random() < 0.9 else 2, 0.0, 0.3)
        credits += [("directed_by", p) for p in directors]
        credits += [("written_by", p) for p in _cast(rng, people, rng.randint(1, 2), 0.1, 0.5)]
        credits += [("starred_actors", p) for p in _cast(rng, people, rng.randint(2, 5), 0.0, 1.0)]
        for relation, target in dict.fromkeys(credits):
            graph.add_edge(title, target, keywords=relation)
            relations += 1
    graph.remove_nodes_from([n for n in list(graph.nodes) if graph.degree(n) == 0])
    return graph


NAMESAKE_EVERY = 10
"""One film in this many remakes an earlier title, one person shares an earlier name."""
HARD_QUESTION_EVERY = 4
"""One question in this many starts at a name holding a year or an initial, where the start's
type has one."""
HARD_ANSWER_EVERY = 10
EMPTY_AT, BIG_AT = 5, 7
"""Question `index` with index % HARD_ANSWER_EVERY == EMPTY_AT has an empty answer (the graph
holds none: a person who directed nothing, a film whose writers wrote nothing else), == BIG_AT
a big one (BIG_ANSWER names at least), where the graph holds such a question. Both are odd, so
never a HARD_QUESTION_EVERY slot; in a set of 9 or more, each comes once at least."""


def _hard(name: str) -> bool:
    """Does the name hold what a collision adds: a year in brackets, or a closing initial?"""
    return name.endswith(")") or (len(name) > 3 and name[-1] == "." and name[-3] == " ")


def hard_cases(items: Iterable[Question]) -> dict[str, int]:
    """How many questions hold each hard case: a start named with a year, with an initial,
    an empty answer, a big one."""
    items = list(items)
    return {
        "year_names": sum(bool(re.search(r" \(\d{4}\)$", q.start)) for q in items),
        "initial_names": sum(bool(re.search(r" [A-Z]\.$", q.start)) for q in items),
        "empty_answers": sum(not q.answer for q in items),
        "big_answers": sum(len(q.answer) >= BIG_ANSWER for q in items),
    }


def _people(rng: random.Random, count: int) -> list[str]:
    names: dict[str, None] = {}
    drawn: list[str] = []
    while len(names) < count:
        name = f"{rng.choice(_FIRST)} {rng.choice(_SURNAME_HEADS)}{rng.choice(_SURNAME_TAILS)}"
        if drawn and len(names) % NAMESAKE_EVERY == NAMESAKE_EVERY - 1:
            name = rng.choice(drawn)  # a namesake
        drawn.append(name)
        if name in names:
            name = f"{name} {chr(ord('A') + rng.randrange(26))}."
        names.setdefault(name, None)
    return list(names)


def _tags(count: int) -> list[str]:
    found = list(_TAG_WORDS)
    for modifier in _TAG_MODIFIERS:
        found += [f"{modifier} {word}" for word in _TAG_WORDS]
    return found[:count] if count <= len(found) else found


def _title(rng: random.Random, year: int, taken: set[str], drawn: list[str]) -> str:
    """A new title; `drawn` lists every title drawn before (one in NAMESAKE_EVERY is one of
    them again: a remake)."""
    noun = rng.choice(_TITLE_NOUNS)
    shape = rng.randrange(3)
    if shape == 0:
        title = f"The {rng.choice(_TITLE_ADJECTIVES)} {noun}"
    elif shape == 1:
        title = f"{rng.choice(_TITLE_ADJECTIVES)} {noun}"
    else:
        title = f"{noun} of the {rng.choice(_TITLE_NOUNS)}"
    if drawn and len(taken) % NAMESAKE_EVERY == NAMESAKE_EVERY - 1:
        title = rng.choice(drawn)
    drawn.append(title)
    if title in taken:
        title = f"{title} ({year})"
    number = 2
    base = title
    while title in taken:
        title = f"{base} {number}"
        number += 1
    taken.add(title)
    return title


def _cast(rng: random.Random, people: list[str], count: int, low: float, high: float) -> list[str]:
    """`count` distinct people from the slice [low, high) of the pool, the first ones far more
    often (a skewed popularity: a few people with many credits, most with one or two)."""
    start, end = int(len(people) * low), max(int(len(people) * high), int(len(people) * low) + 1)
    chosen: dict[str, None] = {}
    while len(chosen) < min(count, end - start):
        chosen.setdefault(people[start + int((end - start) * rng.random() ** 2.5)], None)
    return list(chosen)


def write_graphml(graph: nx.MultiDiGraph, path: Path) -> None:
    nx.write_graphml(graph, str(path))


# --- the oracle -----------------------------------------------------------------------------


def follow(graph: nx.MultiDiGraph, nodes: Iterable[str], hop: RelationHop) -> set[str]:
    """The nodes joined to `nodes` by a `hop.relation` relation walked `hop.direction`."""
    reached: set[str] = set()
    for node in nodes:
        edges = (
            graph.out_edges(node, data="keywords")
            if hop.direction == "out"
            else graph.in_edges(node, data="keywords")
        )
        for source, target, relation in edges:
            if relation == hop.relation:
                reached.add(target if hop.direction == "out" else source)
    return reached


def oracle(
    graph: nx.MultiDiGraph, start: str, hops: Iterable[RelationHop], exclude_start: bool
) -> list[set[str]]:
    """The set each hop reaches from `start`, in order (the last is the answer)."""
    sets: list[set[str]] = []
    current = {start}
    for hop in hops:
        current = follow(graph, current, hop)
        sets.append(current)
    if exclude_start and sets:
        sets[-1] = sets[-1] - {start}
    return sets


def questions(graph: nx.MultiDiGraph, count: int, seed: int = 7) -> list[Question]:
    """`count` questions, as evenly spread over 1, 2 and 3 hops and over each hop count's
    templates as the graph allows; one in HARD_ANSWER_EVERY has an empty answer and one a big
    one (see EMPTY_AT, BIG_AT), the others an answer of 1..MAX_ANSWER names."""
    rng = random.Random(seed)
    by_type: dict[str, list[str]] = {kind: [] for kind in ENTITY_TYPES}
    for node, kind in graph.nodes(data="entity_type"):
        by_type[kind].append(node)
    for names in by_type.values():
        names.sort()
    per_hops = {n: [t for t in TEMPLATES if len(t.hops) == n] for n in (1, 2, 3)}
    found: list[Question] = []
    seen: set[str] = set()
    for index, (hop_count, template) in enumerate(_schedule(per_hops, count)):
        names = by_type[template.start_type]
        hard = [name for name in names if _hard(name)]
        if index % HARD_QUESTION_EVERY == 0 and hard:
            names = hard
        slot = index % HARD_ANSWER_EVERY
        drawn = None
        if slot == EMPTY_AT:
            drawn = _draw_hard(graph, _rotated(per_hops[hop_count], template), by_type, rng, seen)
        elif slot == BIG_AT:
            big = sorted(BIG_TEMPLATES, key=lambda t: len(t.hops) != hop_count)
            drawn = _draw_hard(graph, big, by_type, rng, seen, big=True)
        if drawn is not None:
            template, question = drawn
        else:
            question = _draw(graph, template, names, rng, seen)
        if question is None:
            continue
        hop_count = len(template.hops)
        found.append(
            Question(
                id=f"q{index:04d}-{hop_count}hop",
                text=template.text.format(start=question[0]),
                template=template.name,
                start=question[0],
                start_type=template.start_type,
                hops=template.hops,
                exclude_start=template.exclude_start,
                answer=frozenset(question[1]),
            )
        )
        seen.add(found[-1].text)
    return found


def _schedule(per_hops: dict[int, list[Template]], count: int) -> Iterator[tuple[int, Template]]:
    """1, 2, 3 hops in turn; within each, its templates in turn."""
    turns = {n: 0 for n in per_hops}
    for index in range(count):
        hop_count = 1 + index % 3
        templates = per_hops[hop_count]
        yield hop_count, templates[turns[hop_count] % len(templates)]
        turns[hop_count] += 1


def _rotated(templates: list[Template], first: Template) -> list[Template]:
    at = templates.index(first)
    return [*templates[at:], *templates[:at]]


def _draw_hard(
    graph: nx.MultiDiGraph,
    templates: Iterable[Template],
    by_type: dict[str, list[str]],
    rng: random.Random,
    seen: set[str],
    *,
    big: bool = False,
) -> tuple[Template, tuple[str, set[str]]] | None:
    """The first of `templates` that has a question with an empty answer (or, `big`, one of
    BIG_ANSWER..MAX_BIG_ANSWER names), and that question."""
    sizes = (BIG_ANSWER, MAX_BIG_ANSWER, MAX_BIG_ANSWER) if big else (0, 0, MAX_HOP_SET)
    for template in templates:
        found = _draw(graph, template, by_type[template.start_type], rng, seen, sizes=sizes)
        if found is not None:
            return template, found
    return None


def _draw(
    graph: nx.MultiDiGraph,
    template: Template,
    candidates: list[str],
    rng: random.Random,
    seen: set[str],
    tries: int = 400,
    sizes: tuple[int, int, int] = (1, MAX_ANSWER, MAX_HOP_SET),
) -> tuple[str, set[str]] | None:
    """A start whose answer has sizes[0]..sizes[1] names, no hop reaching over sizes[2]."""
    least, most, most_per_hop = sizes
    for _ in range(tries):
        start = rng.choice(candidates)
        if template.text.format(start=start) in seen:
            continue
        sets = oracle(graph, start, template.hops, template.exclude_start)
        if least <= len(sets[-1]) <= most and all(len(s) <= most_per_hop for s in sets):
            return start, sets[-1]
    return None


def question_set_json(items: list[Question]) -> str:
    """The questions with their oracle answers, for `--keep`."""
    return json.dumps(
        [
            {
                "id": q.id,
                "question": q.text,
                "template": q.template,
                "start": q.start,
                "hops": [f"{h.relation} {h.direction}" for h in q.hops],
                "answer": sorted(q.answer),
            }
            for q in items
        ],
        indent=2,
        ensure_ascii=False,
    )
