"""Shared by the GASL tests: a small graph in the shared attribute model and a fake model.
pytest puts this folder on sys.path, so tests import it as `gasl_support`."""

from __future__ import annotations

from typing import Any

import networkx as nx
from postel.services.gasl.loaders import normalise_graph


def small_graph() -> nx.Graph:
    raw = nx.Graph()
    people = {"ADA": ["c1", "c2"], "BOB": ["c1"], "CY": ["c2"], "DEE": ["c9"]}
    for name, chunks in people.items():
        raw.add_node(
            f'"{name}"',
            entity_type='"PERSON"',
            description=f'"{name} writes"',
            source_id="<SEP>".join(chunks),
            score=len(name),
        )
    raw.add_node('"LAB"', entity_type='"ORGANIZATION"', description='"A lab"', source_id="c1")
    raw.add_edge(
        '"ADA"',
        '"BOB"',
        weight=2.0,
        description='"co-authors"',
        source_id="c1",
        keywords="co-author",
    )
    raw.add_edge(
        '"BOB"',
        '"LAB"',
        weight=1.0,
        description='"works at"',
        source_id="c1",
        keywords="affiliation",
    )
    raw.add_edge(
        '"LAB"', '"CY"', weight=3.0, description='"employs"', source_id="c2", keywords="affiliation"
    )
    return normalise_graph(raw)


class FakeModel:
    """Deterministic stand-in for the LLM layer: replays canned JSON, records prompts."""

    def __init__(self, *answers: dict[str, Any]) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    async def complete_json(
        self, step: str, parts: dict[str, str], schema: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        self.prompts.append("\n".join(f"{title}: {text}" for title, text in parts.items()))
        return self.answers.pop(0), {"model": "fake", "tokens": 7}
