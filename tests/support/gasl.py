"""Shared by the GASL tests: a small graph in the shared attribute model, a small film
knowledge base stored film -> person, fake models, and the records' text a round prompt
shows.
Tests import it as `support.gasl` (tests/support, on pytest's pythonpath)."""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from typing import Any

import networkx as nx
from postel.messages.gasl import ExecutionRecord
from postel.services.gasl.loaders import normalise_graph
from postel.services.planner.render import failure_line, record_texts, results_text


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


class SchemaModel:
    """Deterministic stand-in that answers any model step from its prompt alone: the same
    instruction over the same data gets the same answer, a different one a different
    answer, whatever the order of the calls."""

    async def complete_json(
        self, step: str, parts: dict[str, str], schema: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        said = hashlib.sha256("\n".join(parts.values()).encode()).hexdigest()[:12]
        # the excerpt's part starts with how many items it shows ("3 of 40 items ...")
        counted = re.match(r"\d+", parts.get("DATA") or parts.get("FINDINGS") or "")
        shown = int(counted.group()) if counted else 0
        properties = schema.get("properties", {})
        if step == "analyze":
            answer: dict[str, Any] = {"answer": said, "rationale": parts["INSTRUCTION"]}
        elif "classes" in properties:
            label = schema["$defs"]["ItemClass"]["properties"]["label"]
            chosen = label.get("enum", [said])[0]
            answer = {"classes": [{"index": i, "label": chosen} for i in range(shown)]}
        elif "values" in properties:
            answer = {"values": [{"index": i, "value": f"{said}-{i}"} for i in range(shown)]}
        else:
            answer = {"items": [{"id": said, "instruction": parts["INSTRUCTION"]}]}
        return answer, {"model": "schema", "tokens": 7}


def film_kb(seed: int = 7) -> nx.DiGraph:
    """Films with their actors (`starred_actors`) and a director (`directed_by`), every edge
    stored film -> person."""
    rng = random.Random(seed)
    raw = nx.DiGraph()
    actors = [f"ACTOR {n}" for n in range(40)]
    directors = [f"DIRECTOR {n}" for n in range(8)]
    for name in actors:
        raw.add_node(name, entity_type="PERSON")
    for name in directors:
        raw.add_node(name, entity_type="PERSON")
    for n in range(30):
        film = f"FILM {n}"
        raw.add_node(film, entity_type="FILM")
        for actor in rng.sample(actors, rng.randint(2, 4)):
            raw.add_edge(film, actor, keywords="starred_actors")
        raw.add_edge(film, rng.choice(directors), keywords="directed_by")
    return normalise_graph(raw)


def records_text(records: Sequence[ExecutionRecord], error: str | None = None) -> str:
    """LAST RESULTS as a round prompt shows them with nothing cut: each command's record,
    every sample row, the failure once."""
    return results_text(record_texts(records), failure_line(records, error))
