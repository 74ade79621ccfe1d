"""The retriever's verb forms and the question chains the schema card gives
(services.linking.card, services.linking.paths): deterministic, no model. Every question shape
of `postel bench qa` gets its one chain, whose run on the graph is the oracle's answer; the
demo's co-author question keeps only people."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from postel.messages.gasl import GaslPlan
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.executor import GaslExecutor
from postel.services.gasl.loaders import DEMO_GRAPH, load_graphml
from postel.services.linking.aids import GraphAids, aids_of_graph, build_aids
from postel.services.linking.card import rank_relations, similarity, stem
from postel.services.linking.names import link
from postel.services.linking.paths import answer_types, question_chains, relation_words
from postel_bench.data.qa_movies import (
    BIG_TEMPLATES,
    TEMPLATES,
    oracle,
    qa_movie_graph,
    questions,
    write_graphml,
)

METAQA_RELATIONS = (
    ("directed_by", "FILM", "PERSON"),
    ("written_by", "FILM", "PERSON"),
    ("starred_actors", "FILM", "PERSON"),
    ("has_genre", "FILM", "GENRE"),
    ("has_tags", "FILM", "TAG"),
    ("in_language", "FILM", "LANGUAGE"),
    ("release_year", "FILM", "YEAR"),
)


def metaqa_card() -> dict[str, Any]:
    types = {"FILM": 10, "PERSON": 9, "GENRE": 3, "TAG": 3, "LANGUAGE": 2, "YEAR": 2}
    relations = [
        {"name": n, "source": s, "target": t, "count": 5, "example": ["a", "b"]}
        for n, s, t in METAQA_RELATIONS
    ]
    return {"directed": True, "entity_types": types, "relations": relations, "node_fields": {}}


@pytest.mark.parametrize(
    ("asked", "named"),
    [
        ("wrote", "written"),
        ("writers", "written"),
        ("directed", "director"),
        ("starring", "starred"),
        ("stars", "starred"),
        ("acted", "actors"),
        ("tagged", "tags"),
        ("studies", "study"),
    ],
)
def test_verb_forms_meet_their_relation_words(asked: str, named: str) -> None:
    assert similarity(asked, named) >= 0.75, (stem(asked), stem(named))


def test_unrelated_words_do_not_meet() -> None:
    assert similarity("share", "starred") == 0.0
    assert similarity("wrote", "release") == 0.0


@pytest.mark.parametrize(
    ("question", "relation"),
    [
        ("Who wrote The Silent Harbor?", "written_by"),
        ("Which films did Ada Lindsen write?", "written_by"),
        ("Who directed The Silent Harbor?", "directed_by"),
        ("Which films has Ada Lindsen starred in?", "starred_actors"),
        ("Who starred in The Silent Harbor?", "starred_actors"),
        ("Which films are tagged heist?", "has_tags"),
        ("When was The Silent Harbor released?", "release_year"),
    ],
)
def test_the_retriever_maps_verb_forms_to_metaqa_relations(question: str, relation: str) -> None:
    ranked = rank_relations(metaqa_card(), question)
    assert ranked[0]["name"] == relation
    [word] = relation_words(metaqa_card(), question)
    assert word.relations == (relation,)


def test_function_words_name_no_relation() -> None:
    # "has" and "in" are words of has_genre and in_language, but name neither
    assert relation_words(metaqa_card(), "Which films has it been in?") == []


@pytest.mark.parametrize(
    ("question", "types"),
    [
        ("Who directed The Silent Harbor?", ("PERSON",)),
        ("Which genres is The Silent Harbor?", ("GENRE",)),
        ("Which other films share an actor with The Silent Harbor?", ("FILM",)),
        ("When was The Silent Harbor released?", ("YEAR",)),
        ("How long is The Silent Harbor?", ()),
    ],
)
def test_the_expected_type_comes_from_the_wh_phrase_and_the_card(
    question: str, types: tuple[str, ...]
) -> None:
    assert answer_types(metaqa_card(), question) == types


def test_a_linked_names_words_name_no_type() -> None:
    aids = build_aids([("Genre Films", {"entity_type": "FILM"})], [], directed=True)
    card = {**metaqa_card(), "entity_types": aids.card["entity_types"] | {"GENRE": 1}}
    question = "What did Genre Films win?"
    assert answer_types(card, question, link(question, aids.names)) == ()


def test_a_type_the_card_lacks_is_never_expected() -> None:
    card = {**metaqa_card(), "entity_types": {"FILM": 3, "GENRE": 2}}
    assert answer_types(card, "Who directed The Silent Harbor?") == ()


@pytest.fixture(scope="module")
def movies(tmp_path_factory: pytest.TempPathFactory) -> tuple[nx.Graph, GraphAids, Path]:
    graph = qa_movie_graph(2000, seed=7)
    path = tmp_path_factory.mktemp("qa") / "movies.graphml"
    write_graphml(graph, path)
    loaded = load_graphml(path)
    return loaded, aids_of_graph(loaded), path


async def run(graph: nx.Graph, commands: tuple[str, ...]) -> set[str]:
    executor = GaslExecutor(NetworkXAdapter.from_graph(graph), max_rows=None)
    result = await executor.execute_plan(GaslPlan(plan_id="p", commands=list(commands)))
    last = result.records[-1]
    return set() if last.status == "empty" else {row["id"] for row in last.rows}


@pytest.mark.parametrize("template", TEMPLATES + BIG_TEMPLATES, ids=lambda t: t.name)
async def test_every_bench_shape_gets_its_one_chain_and_the_oracles_answer(
    movies: tuple[nx.Graph, GraphAids, Path], template: Any
) -> None:
    graph, aids, _ = movies
    generated = qa_movie_graph(2000, seed=7)
    # a start with an answer: the most connected node of the start's type that has one
    starts = sorted(
        (n for n, d in generated.nodes(data=True) if d["entity_type"] == template.start_type),
        key=lambda n: (-generated.degree(n), n),
    )
    start = next(s for s in starts if oracle(generated, s, template.hops, False)[-1] - {s})
    question = template.text.format(start=start)
    linked = link(question, aids.names)
    [chain] = question_chains(aids.card, question, linked)
    walked = tuple((hop.relation, hop.direction) for hop in chain.hops)
    assert walked == tuple((hop.relation, hop.direction) for hop in template.hops)
    assert chain.leave_out_start == template.exclude_start
    expected = oracle(generated, start, template.hops, template.exclude_start)[-1]
    assert expected and await run(graph, chain.commands()) == expected


async def test_the_bench_questions_of_the_measured_seeds_chain_right() -> None:
    for seed in (7, 8, 9, 10):
        generated = qa_movie_graph(2000, seed=seed)
        aids = build_aids(
            generated.nodes(data=True),
            ((u, v, [d["keywords"]]) for u, v, d in generated.edges(data=True)),
            directed=True,
        )
        for asked in questions(generated, 6, seed=seed)[:3]:
            chains = question_chains(aids.card, asked.text, link(asked.text, aids.names))
            hops = tuple((h.relation, h.direction) for h in chains[0].hops)
            assert hops == tuple((h.relation, h.direction) for h in asked.hops), asked.text


@pytest.mark.parametrize(
    "question",
    ["Which films did the director of Harbor write?", "Which films did Harbor's director write?"],
)
def test_the_mentions_own_noun_binds_before_a_nearer_verb(question: str) -> None:
    aids = build_aids(
        [("Harbor", {"entity_type": "FILM"}), ("Ada", {"entity_type": "PERSON"})],
        [("Harbor", "Ada", ["directed_by"]), ("Harbor", "Ada", ["written_by"])],
        directed=True,
    )
    [chain] = question_chains(aids.card, question, link(question, aids.names))
    assert [(h.relation, h.direction) for h in chain.hops] == [
        ("directed_by", "out"),
        ("written_by", "in"),
    ]


def test_a_passive_relation_between_one_type_walks_from_its_agent() -> None:
    aids = build_aids(
        [("Ada", {"entity_type": "PERSON"}), ("Ben", {"entity_type": "PERSON"})],
        [("Ada", "Ben", ["influenced_by"])],  # Ada was influenced by Ben
        directed=True,
    )

    def first_hop(question: str) -> str:
        chains = question_chains(aids.card, question, link(question, aids.names))
        return chains[0].hops[0].direction

    assert first_hop("Who influenced Ada?") == "out"  # Ada is influenced: walk to Ben
    assert first_hop("Who was influenced by Ben?") == "in"
    assert first_hop("Whom did Ben influence?") == "in"


def test_a_question_naming_no_relation_of_a_named_graph_gets_no_chain() -> None:
    aids = build_aids(
        [("Ada", {"entity_type": "PERSON"}), ("Harbor", {"entity_type": "FILM"})],
        [("Harbor", "Ada", ["directed_by"])],
        directed=True,
    )
    # the model plans: walking every edge would answer with whatever Ada touches
    for question in ("Who are Ada's friends?", "Quels films pour Ada ?"):
        assert question_chains(aids.card, question, link(question, aids.names)) == []
    question = "Which films did Ada direct?"
    assert question_chains(aids.card, question, link(question, aids.names))


def test_tied_starts_give_the_model_a_choice() -> None:
    aids = build_aids(
        [
            ("Sunken Voice (1987)", {"entity_type": "FILM"}),
            ("Sunken Voice (2010)", {"entity_type": "FILM"}),
            ("Ada Lindsen", {"entity_type": "PERSON"}),
        ],
        [("Sunken Voice (2010)", "Ada Lindsen", ["directed_by"])],
        directed=True,
    )
    question = "Who directed Sunken Voice?"
    chains = question_chains(aids.card, question, link(question, aids.names))
    assert sorted(c.start.id for c in chains) == ["Sunken Voice (1987)", "Sunken Voice (2010)"]
    # an exact spelling outscores the folded one: no choice to make
    exact = build_aids(
        [
            ("Sunken Voice", {"entity_type": "FILM"}),
            ("Sunken Voice (2010)", {"entity_type": "FILM"}),
            ("Ada Lindsen", {"entity_type": "PERSON"}),
        ],
        [("Sunken Voice", "Ada Lindsen", ["directed_by"])],
        directed=True,
    )
    [chain] = question_chains(exact.card, question, link(question, exact.names))
    assert chain.start.id == "Sunken Voice"


async def test_the_demo_question_keeps_only_people() -> None:
    graph = load_graphml(DEMO_GRAPH)
    aids = aids_of_graph(graph)
    question = "Who are Briana Moreland's co-authors?"
    [chain] = question_chains(aids.card, question, link(question, aids.names))
    # the demo graph's edges name no relation: the type comes from "who" and the card alone
    assert chain.keep_type == "PERSON"
    assert chain.commands() == (
        "NEIGHBORS 'BRIANA MORELAND' AS step1",
        "SELECT step1 WHERE entity_type = 'PERSON' AS answer",
    )
    assert await run(graph, chain.commands()[:1]) == {
        "ROBIN LEE",
        "CENTERS FOR DISEASE CONTROL AND PREVENTION",
    }
    assert await run(graph, chain.commands()) == {"ROBIN LEE"}
