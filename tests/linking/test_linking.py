"""The entity linker and the schema card (services.linking): what a question names, found
deterministically, and which relations it is about."""

from __future__ import annotations

from typing import Any

from postel.services.linking.aids import GraphAids, build_aids
from postel.services.linking.card import rank_relations, relation_mentions
from postel.services.linking.names import build_name_index, distance_within, link, normalize

NODES: list[tuple[str, dict[str, Any]]] = [
    ("Sunken Voice", {"entity_type": "FILM"}),
    ("Sunken Voice (2010)", {"entity_type": "FILM"}),
    ("The Silent Harbor", {"entity_type": "FILM"}),
    ("Amélie Durand", {"entity_type": "PERSON"}),
    ("Ada Lindsen", {"entity_type": "PERSON"}),
    ("Ada Lindsen K.", {"entity_type": "PERSON"}),
    ("heist", {"entity_type": "TAG"}),
    ("WHO", {"entity_type": "ORGANIZATION"}),
    ("Q42", {"entity_type": "PERSON", "name": "Douglas Adams", "aliases": ["D. N. Adams"]}),
]
RELATIONS = [
    ("Sunken Voice", "Ada Lindsen", ["directed_by"]),
    ("Sunken Voice (2010)", "Ada Lindsen", ["directed_by"]),
    ("Sunken Voice", "Amélie Durand", ["starred_actors"]),
    ("The Silent Harbor", "Amélie Durand", ["starred_actors"]),
    ("The Silent Harbor", "heist", ["has_tags"]),
]


def aids() -> GraphAids:
    return build_aids(NODES, RELATIONS, directed=True)


def ids(question: str) -> list[str]:
    return [entity.id for entity in link(question, aids().names)]


def test_normalizing_folds_case_accents_and_punctuation() -> None:
    assert normalize("Amélie's  GARDEN!") == "amelie s garden"
    assert normalize("Sunken Voice (2010)") == "sunken voice 2010"


def test_a_year_in_brackets_links_both_ways() -> None:
    # the question's year picks the film that has it, whole, ahead of the shorter name
    [first, *_] = link("Who directed Sunken Voice (2010)?", aids().names)
    assert (first.id, first.how, first.mention) == (
        "Sunken Voice (2010)",
        "exact",
        "Sunken Voice (2010)",
    )
    # without the year both are candidates, the exact spelling first
    assert ids("Who directed Sunken Voice?")[:2] == ["Sunken Voice", "Sunken Voice (2010)"]


def test_case_and_accents_do_not_matter_and_the_type_comes_along() -> None:
    [entity] = link("which films did amelie durand act in", aids().names)
    assert (entity.id, entity.entity_type, entity.how) == ("Amélie Durand", "PERSON", "normalized")


def test_the_longest_match_wins() -> None:
    assert ids("Who acted with Ada Lindsen K. in a film?")[0] == "Ada Lindsen K."
    assert ids("Who acted with Ada Lindsen in a film?")[0] == "Ada Lindsen"


def test_a_word_opening_the_question_names_only_what_it_spells() -> None:
    assert ids("Who directed Sunken Voice?") == ["Sunken Voice", "Sunken Voice (2010)"]
    assert sorted(ids("WHO funded the heist?")) == ["WHO", "heist"]
    assert ids("Which films did the WHO fund?") == ["WHO"]


def test_name_fields_are_aliases() -> None:
    [entity] = link("What did Douglas Adams write?", aids().names)
    assert (entity.id, entity.how) == ("Q42", "alias")


def test_a_typo_links_within_the_bound_and_scores_less() -> None:
    [entity] = link("Who acted in The Silent Harbr?", aids().names)
    assert (entity.id, entity.how) == ("The Silent Harbor", "fuzzy")
    assert entity.score < 1.0
    assert distance_within("harbor", "harbour", 1) == 1
    assert distance_within("harbor", "arbour", 1) is None


def test_a_name_the_graph_lacks_links_nothing() -> None:
    assert link("Who directed Zorblax Quuxfield?", aids().names) == []
    # lower-case words are not read as misspelt names, and one-word nodes still link
    assert ids("Which films are tagged heist?") == ["heist"]


def test_the_index_survives_its_stored_form() -> None:
    stored = aids()
    again = GraphAids.from_fields(
        **{k: v for k, v in zip(("names", "card"), stored.to_fields().values(), strict=True)}
    )
    assert again.card == stored.card
    assert link("Who directed Sunken Voice?", again.names) == link(
        "Who directed Sunken Voice?", stored.names
    )
    assert build_name_index(NODES).names == stored.names.names


def test_the_card_counts_types_and_relation_signatures() -> None:
    card = aids().card
    assert card["entity_types"] == {"PERSON": 4, "FILM": 3, "ORGANIZATION": 1, "TAG": 1}
    directed = [r for r in card["relations"] if r["name"] == "directed_by"]
    assert directed == [
        {
            "name": "directed_by",
            "source": "FILM",
            "target": "PERSON",
            "count": 2,
            "example": ["Sunken Voice", "Ada Lindsen"],
        }
    ]
    assert {"entity_type", "name", "aliases"} <= set(card["node_fields"])


def test_the_retriever_ranks_the_relations_the_question_names() -> None:
    card = aids().card
    question = "Who acted in the films directed by Ada Lindsen?"
    linked = link(question, aids().names)
    ranked = [r["name"] for r in rank_relations(card, question, linked)]
    # both named; the one named nearer the entity first (it is walked first)
    assert ranked[:2] == ["directed_by", "starred_actors"]
    assert relation_mentions(card, question, linked) == 2
    assert rank_relations(card, "Which films are tagged heist?")[0]["name"] == "has_tags"
