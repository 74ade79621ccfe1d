"""`postel bench graphs --engine` and `postel bench qa --engine` run small (the bench lane):
both engines give the same answers, side by side, and the QA answers equal the oracle."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from postel.infra.cli.main import main
from postel_bench.engines import format_engine_graphs, run_engine_graphs

pytestmark = pytest.mark.bench


def test_bench_graphs_compares_the_engines_side_by_side(tmp_path: Path) -> None:
    figures = run_engine_graphs(2000, ("networkx", "ladybug"), scratch=tmp_path)
    assert figures["same_answers"] and set(figures["engines"]) == {"networkx", "ladybug"}
    for measured in figures["engines"].values():
        assert measured["rss_mb"] > 0 and set(measured["p50_ms"]) == {
            "find",
            "neighbors",
            "walk_2hop",
        }
    assert {"rss_mb", "open_s", "find_p50_ms"} <= set(figures["targets"])
    text = format_engine_graphs(figures)
    assert "networkx" in text and "ladybug" in text and "same answers on every engine: True" in text
    again = run_engine_graphs(2000, ("ladybug",), scratch=tmp_path)
    assert "store_build_s" not in again, "the scratch folder's store is reused"


def test_bench_qa_engine_both_gives_the_same_answers() -> None:
    ran = CliRunner().invoke(
        main,
        ["bench", "qa", "--engine", "both", "--triples", "2000", "--questions", "9", "--json"],
    )
    assert ran.exit_code == 0, ran.output
    figures = json.loads(ran.output[ran.output.index("{\n") :])
    assert figures["same_answers"] and figures["questions"] == 9
    assert all(e["oracle_matches"] == 9 for e in figures["engines"].values())
