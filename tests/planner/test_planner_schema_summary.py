"""The graph schema summary on the shipped MMWR sample graph."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from postel.services.gasl import NetworkXAdapter, schema_summary
from postel.services.gasl.schema_summary import summarize_graph

GRAPH = Path(__file__).resolve().parents[2] / "services/gasl/data/mmwr_nano_graphrag.graphml"


def test_summary_of_the_mmwr_graph() -> None:
    adapter = NetworkXAdapter.from_graphml(GRAPH)
    started = time.process_time()
    summary = summarize_graph(adapter)
    assert time.process_time() - started < 1.0, "tens of milliseconds of CPU, not seconds"
    assert summary["nodes"] == 3261 and summary["edges"] == 1740
    assert not summary["directed"]
    types = summary["entity_types"]
    assert types["PERSON"] == 371
    assert types["STATISTICAL MEASURE"] == 310 and types["ORGANIZATION"] == 61
    assert list(types)[:2] == ["PERSON", "STATISTICAL MEASURE"]  # most frequent first
    assert sum(types.values()) == 3261
    assert summary["node_attributes"] == {
        "clusters": "list",
        "description": "list",
        "entity_type": "text",
        "id": "text",
        "source_ids": "list",
    }
    assert summary["edge_attributes"]["weight"] == "number"
    assert summary["edge_attributes"]["keywords"] == "list"
    assert summary["relation_keywords"] == {}  # nano-graphrag writes no edge keywords
    assert summary["example_ids"]["PERSON"] == ["BRIANA MORELAND", "ROBIN LEE"]
    assert len(summary["example_ids"]) == 10


def test_summary_is_cached_per_adapter_and_copied_out(monkeypatch: pytest.MonkeyPatch) -> None:
    computed: list[NetworkXAdapter] = []
    summarize = schema_summary._summarize

    def counted(adapter: NetworkXAdapter) -> dict[str, Any]:
        computed.append(adapter)
        return summarize(adapter)

    monkeypatch.setattr(schema_summary, "_summarize", counted)
    adapter = NetworkXAdapter.from_graphml(GRAPH)
    first = summarize_graph(adapter)
    first["entity_types"].clear()  # a caller trimming its copy
    again = summarize_graph(adapter)
    assert computed == [adapter], "computed once for the adapter"
    assert again["entity_types"]["PERSON"] == 371
