"""Loading both GraphML dialects into one attribute model; adapter caps and indexes."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest
from postel.services.gasl.conditions import bind
from postel.services.gasl.engines.caps import Caps
from postel.services.gasl.engines.networkx_engine import NetworkXAdapter
from postel.services.gasl.errors import InvalidCap, UnknownCap
from postel.services.gasl.loaders import load_graphml, split_parts
from postel.services.gasl.parser import parse_one

NANO = Path(__file__).resolve().parents[2] / "services/gasl/data/mmwr_nano_graphrag.graphml"

LIGHTRAG = """<?xml version='1.0' encoding='utf-8'?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
<key id="d0" for="node" attr.name="entity_id" attr.type="string"/>
<key id="d1" for="node" attr.name="entity_type" attr.type="string"/>
<key id="d2" for="node" attr.name="description" attr.type="string"/>
<key id="d3" for="node" attr.name="source_id" attr.type="string"/>
<key id="d4" for="node" attr.name="file_path" attr.type="string"/>
<key id="d5" for="edge" attr.name="weight" attr.type="double"/>
<key id="d6" for="edge" attr.name="description" attr.type="string"/>
<key id="d7" for="edge" attr.name="keywords" attr.type="string"/>
<key id="d8" for="edge" attr.name="source_id" attr.type="string"/>
<key id="d9" for="edge" attr.name="file_path" attr.type="string"/>
<graph edgedefault="undirected">
<node id="Ada Lovelace"><data key="d0">Ada Lovelace</data><data key="d1">person</data>
<data key="d2">Wrote the first program.&lt;SEP&gt;Mathematician.</data>
<data key="d3">chunk-1&lt;SEP&gt;chunk-2</data><data key="d4">notes.txt</data></node>
<node id="Charles Babbage"><data key="d0">Charles Babbage</data><data key="d1">person</data>
<data key="d2">Designed the engine.</data><data key="d3">chunk-1</data>
<data key="d4">notes.txt</data></node>
<node id="Analytical Engine"><data key="d0">Analytical Engine</data>
<data key="d1">artifact</data><data key="d2">A mechanical computer.</data>
<data key="d3">chunk-3</data><data key="d4">engine.txt</data></node>
<edge source="Ada Lovelace" target="Charles Babbage"><data key="d5">2.0</data>
<data key="d6">Collaborators.</data><data key="d7">collaboration, co-author</data>
<data key="d8">chunk-1</data><data key="d9">notes.txt</data></edge>
<edge source="Charles Babbage" target="Analytical Engine"><data key="d5">5.0</data>
<data key="d6">Babbage designed the engine.</data><data key="d7">design,invention</data>
<data key="d8">chunk-3</data><data key="d9">engine.txt</data></edge>
</graph></graphml>
"""


def lightrag_file(tmp_path: Path) -> Path:
    path = tmp_path / "lightrag.graphml"
    path.write_text(LIGHTRAG, encoding="utf-8")
    return path


def test_split_parts_unquotes_and_dedupes() -> None:
    assert split_parts('"a"<SEP>"b"<SEP>"a"<SEP>') == ["a", "b"]
    assert split_parts("x, y<SEP>z", extra_separator=",") == ["x", "y", "z"]
    assert split_parts(None) == []


def test_lightrag_normalised(tmp_path: Path) -> None:
    graph = load_graphml(lightrag_file(tmp_path))
    ada = graph.nodes["Ada Lovelace"]
    assert ada["entity_type"] == "PERSON"
    assert ada["description"] == ["Wrote the first program.", "Mathematician."]
    assert ada["source_ids"] == ["chunk-1", "chunk-2"]
    assert ada["file_paths"] == ["notes.txt"]
    assert "entity_id" not in ada and ada["id"] == "Ada Lovelace"
    edge = graph.edges["Ada Lovelace", "Charles Babbage"]
    assert edge["keywords"] == ["collaboration", "co-author"]
    assert edge["weight"] == 2.0 and edge["source_ids"] == ["chunk-1"]


def test_nano_graphrag_normalised() -> None:
    graph = load_graphml(NANO)
    assert graph.number_of_nodes() == 3261 and graph.number_of_edges() == 1740
    node = graph.nodes["BRIANA MORELAND"]
    assert node["entity_type"] == "PERSON"
    assert len(node["description"]) == 2 and not node["description"][0].startswith('"')
    assert node["source_ids"][0] == "chunk-bf8555ff159c7dfa432fcac94065affb"
    assert node["clusters"][0] == {"level": 0, "cluster": 17}
    edge = graph.edges["BRIANA MORELAND", "ROBIN LEE"]
    assert edge["weight"] == 8.0 and edge["keywords"] == []


def _where(text: str):  # type: ignore[no-untyped-def]
    cmd = parse_one(f"SELECT v WHERE {text} AS w")
    return bind(cmd.where, lambda name, path: None)  # type: ignore[attr-defined]


def test_equality_and_in_use_the_index_not_a_scan(tmp_path: Path) -> None:
    adapter = NetworkXAdapter.from_graphml(lightrag_file(tmp_path))
    found = adapter.find_nodes(_where('entity_type = "ARTIFACT"'), None)
    assert [n["id"] for n in found.items] == ["Analytical Engine"]
    assert found.used_index and found.examined == 1
    found = adapter.find_nodes(_where('source_ids IN ["chunk-2", "chunk-3"]'), None)
    assert found.used_index and found.examined == 2
    both = adapter.find_nodes(
        _where('entity_type = "PERSON" AND description CONTAINS "engine"'), None
    )
    assert [n["id"] for n in both.items] == ["Charles Babbage"] and both.examined == 2
    scan = adapter.find_nodes(_where('description CONTAINS "program"'), None)
    assert not scan.used_index and scan.examined == 3


def test_index_agrees_with_scan(tmp_path: Path) -> None:
    path = lightrag_file(tmp_path)
    indexed = NetworkXAdapter.from_graphml(path)
    scanning = NetworkXAdapter(load_graphml(path), use_indexes=False)
    for text in (
        'entity_type = "PERSON"',
        'id IN ["Ada Lovelace", "nobody"]',
        'source_ids = "chunk-1" OR entity_type = "ARTIFACT"',
    ):
        a = [n["id"] for n in indexed.find_nodes(_where(text), None).items]
        b = [n["id"] for n in scanning.find_nodes(_where(text), None).items]
        assert a == b


def test_result_cap_is_reported_but_limit_is_not(tmp_path: Path) -> None:
    adapter = NetworkXAdapter.from_graphml(lightrag_file(tmp_path))
    capped = adapter.find_nodes(None, None, caps=Caps(max_results=1))
    assert len(capped.items) == 1 and capped.caps_hit == ["max_results"]
    limited = adapter.find_nodes(None, 1, caps=Caps(max_results=1).with_value("max_results", 10))
    assert len(limited.items) == 1 and limited.caps_hit == []
    with pytest.raises(UnknownCap, match="unknown cap 'bogus'"):
        Caps().with_value("bogus", 1)
    with pytest.raises(InvalidCap, match="positive integer"):
        Caps().with_value("max_results", 0)


def test_path_search_is_bounded_by_expansions() -> None:
    graph = nx.complete_graph(60)
    graph = nx.relabel_nodes(graph, {i: f"n{i}" for i in graph})
    adapter = NetworkXAdapter(graph)
    caps = Caps(max_expansions=50, max_path_length=5)
    found = adapter.find_paths(["n0"], ["n59"], None, 5, None, caps=caps)
    assert "max_expansions" in found.caps_hit and found.examined <= 50


def test_path_length_cap_and_undirected_dedupe(tmp_path: Path) -> None:
    adapter = NetworkXAdapter.from_graphml(lightrag_file(tmp_path))
    everyone = ["Ada Lovelace", "Charles Babbage", "Analytical Engine"]
    found = adapter.find_paths(everyone, everyone, None, 3, None, caps=Caps(max_path_length=1))
    assert found.caps_hit == ["max_path_length"]
    assert sorted(tuple(p["nodes"]) for p in found.items) == [
        ("Ada Lovelace", "Charles Babbage"),
        ("Charles Babbage", "Analytical Engine"),
    ]
