"""The scale movie graph: a movie knowledge graph of a chosen size, generated from a seed,
written as GraphML, for measuring how graphs of that size are added and loaded
(`postel bench graphs`) and for the tests of the graph format.

MetaQA-style: FILM nodes with relations pointing from the film to a PERSON (`directed_by`,
`written_by`, `starred_actors`), a GENRE (`has_genre`), a TAG (`has_tags`), a LANGUAGE
(`in_language`) and a YEAR (`release_year`). It is a MultiDiGraph, so a person who directs
and writes a film is two relations of one pair, as real knowledge graphs have them. Every node
carries an entity type and a description, every edge its relation as `keywords` and a weight.
The same (triples, seed) always gives the same file, byte for byte. Its names are simple
and unique by construction ("Ada Andersson 12", "Silent Harbor (1954, #3)"); the QA
benchmark's graph (qa_movies.py) is the one with names that are hard to write in a plan.
Each keeps its own vocabulary, so changing one never moves the other's figures.
"""

from __future__ import annotations

import random
from pathlib import Path

import networkx as nx

_GENRES = [
    "Drama",
    "Comedy",
    "Thriller",
    "Horror",
    "Romance",
    "Western",
    "Documentary",
    "Animation",
    "Musical",
    "Mystery",
    "Adventure",
    "Fantasy",
    "Crime",
    "War",
    "Biography",
    "Noir",
    "Satire",
    "Sports",
    "Family",
    "Science_Fiction",
]
_LANGUAGES = [
    "English",
    "French",
    "German",
    "Italian",
    "Spanish",
    "Japanese",
    "Korean",
    "Hindi",
    "Swedish",
    "Polish",
]
_WORDS = [
    "Silent",
    "Crimson",
    "Hidden",
    "Broken",
    "Golden",
    "Distant",
    "Frozen",
    "Burning",
    "Hollow",
    "Restless",
    "Harbor",
    "Garden",
    "River",
    "Mirror",
    "Kingdom",
    "Season",
    "Station",
    "Orchard",
    "Letter",
    "Summer",
    "Winter",
    "Mountain",
    "Empire",
    "Circle",
    "Voyage",
    "Witness",
    "Shadow",
    "Signal",
    "Island",
    "Bridge",
    "Tower",
    "Engine",
    "Frontier",
    "Lantern",
    "Promise",
    "Ballad",
]
_FIRST = [
    "Ada",
    "Ben",
    "Clara",
    "Dmitri",
    "Elena",
    "Farid",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Kaito",
    "Lena",
    "Marco",
    "Nadia",
]
_LAST = [
    "Anders",
    "Bel",
    "Cor",
    "Dal",
    "Eck",
    "Fal",
    "Gar",
    "Hol",
    "Ist",
    "Jor",
    "Kal",
    "Lind",
    "Mor",
    "Nor",
    "Ost",
    "Pel",
    "Quin",
    "Ros",
]
# Relations per film, on average: 1 director, 1.5 writers, 4 actors, 1.5 genres, 2 tags,
# a language and a year: about 12 triples.
_PER_FILM = 12


def scale_movie_graph(triples: int, seed: int = 7) -> nx.MultiDiGraph:
    """About `triples` relations (within one film's worth) over films, people and labels."""
    rng = random.Random(seed)
    films = max(1, triples // _PER_FILM)
    graph = nx.MultiDiGraph()
    people = [
        f"{rng.choice(_FIRST)} {rng.choice(_LAST)}son {i}" for i in range(max(10, films * 3 // 2))
    ]
    tags = [f"{a.lower()}-{b.lower()}" for a in _WORDS[:20] for b in _WORDS[20:]]
    for kind, names in (
        ("PERSON", people),
        ("GENRE", _GENRES),
        ("TAG", tags),
        ("LANGUAGE", _LANGUAGES),
    ):
        for name in names:
            graph.add_node(name, entity_type=kind, description=f"a {kind.lower()} named {name}")
    made = 0
    film = 0
    while made < triples:
        year = str(1920 + rng.randrange(100))
        title = f"{rng.choice(_WORDS)} {rng.choice(_WORDS)} ({year}, #{film})"
        film += 1
        graph.add_node(title, entity_type="FILM", description=f"a film released in {year}")
        graph.add_node(year, entity_type="YEAR", description=f"the year {year}")
        # Popularity is skewed: a few people have hundreds of credits, most a handful.
        crew = [people[int(len(people) * rng.random() ** 2)] for _ in range(6)]
        relations = [
            ("directed_by", crew[0]),
            ("written_by", crew[0] if rng.random() < 0.3 else crew[1]),
            *(("starred_actors", name) for name in crew[2 : 2 + rng.randint(2, 4)]),
            *(("has_genre", g) for g in rng.sample(_GENRES, rng.randint(1, 2))),
            *(("has_tags", t) for t in rng.sample(tags, rng.randint(1, 3))),
            ("in_language", rng.choice(_LANGUAGES)),
            ("release_year", year),
        ]
        for relation, target in relations:
            graph.add_edge(title, target, keywords=relation, weight=1.0)
        made += len(relations)
    return graph


def write_scale_movie_graphml(path: Path, triples: int, seed: int = 7) -> nx.MultiDiGraph:
    """Generate the graph and write it to `path` as GraphML; returns the graph."""
    graph = scale_movie_graph(triples, seed)
    nx.write_graphml(graph, str(path))
    return graph
