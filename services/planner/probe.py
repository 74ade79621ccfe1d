"""The recovery probe: the read-only plan a round runs when the model gave no usable plan (an
unusable answer, a reference that names nothing, an empty answer to confirm), built from the
question itself, so that what it shows bears on the question.

What it looks at, the first that applies:
1. the entities the question links to (`LinkedEntity`s, best first, at most PROBE_ENTITIES):
   each node by id, and its neighbours;
2. the graph's entity types the question names ("films" -> FILM, "research labs" ->
   RESEARCH_LAB), each LIMIT PROBE_LIMIT;
3. the commonest entity type of the graph, when the question names none.

The linked entities are the intent's entity links (`Intent.linked_entities`, filled in by the
intent stage once the graph is known: see `linked_nodes`)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from postel.messages.gasl import GaslPlan
from postel.messages.intent import Intent, LinkedEntity

PROBE_LIMIT = 10
PROBE_ENTITIES = 3


def linked_nodes(intent: Intent) -> Sequence[LinkedEntity]:
    """The nodes the question links to, best first: the intent's `linked_entities`."""
    return intent.linked_entities


def named_types(question: str, graph_summary: dict[str, Any] | None) -> list[str]:
    """The graph's entity types the question names, singular or plural, any case, with an
    underscore read as a space: in the order the graph ranks them (commonest first)."""
    words = question.lower()
    found = []
    for name in (graph_summary or {}).get("entity_types", {}):
        spoken = re.escape(str(name).lower().replace("_", " "))
        if re.search(rf"\b{spoken}(?:s|es)?\b", words):
            found.append(str(name))
    return found


def probe_plan(
    plan_name: str,
    graph_summary: dict[str, Any] | None,
    question: str = "",
    linked: Sequence[LinkedEntity] = (),
) -> GaslPlan:
    """A read-only look at what the question is about (see the module docstring)."""
    commands: list[str] = []
    for number, node in enumerate(linked[:PROBE_ENTITIES], start=1):
        literal = json.dumps(node.id, ensure_ascii=False)
        commands.append(f"FIND nodes WHERE id = {literal} AS probe_{number}")
        commands.append(f"NEIGHBORS {literal} LIMIT {PROBE_LIMIT} AS probe_{number}_around")
    if not commands:
        types = named_types(question, graph_summary)
        if not types:
            types = list((graph_summary or {}).get("entity_types", {}))[:1]
        for name in types[:PROBE_ENTITIES]:
            literal = json.dumps(name, ensure_ascii=False)
            label = re.sub(r"\W+", "_", name.lower()).strip("_") or "nodes"
            commands.append(
                f"FIND nodes WHERE entity_type = {literal} LIMIT {PROBE_LIMIT} AS probe_{label}"
            )
    if not commands:
        commands.append(f"FIND nodes LIMIT {PROBE_LIMIT} AS probe")
    return GaslPlan(
        plan_id=plan_name,
        why="probe: what the question names, as the graph holds it",
        commands=commands,
    )
