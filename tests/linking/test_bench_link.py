"""`postel bench link` at a small size: every figure is measured and printed, and recall@3
is judged against its target."""

from __future__ import annotations

from click.testing import CliRunner
from postel.infra.cli.main import main
from postel_bench.link import format_link, run_link


def test_the_link_bench_measures_recall_and_the_index() -> None:
    figures = run_link([600], question_count=9)
    [row] = figures["sizes"]
    assert row["questions"] == 9 and row["recall_at_3"] >= row["recall_at_1"] > 0
    assert 0 < row["index_names"] <= row["nodes"] and row["index_build_s"] >= 0
    assert set(row["stored_bytes"]) == {"name_index", "schema_card"}
    assert figures["holds"] == (row["recall_at_3"] >= figures["target_recall_at_3"])
    assert "R@3" in format_link(figures)


def test_the_command_prints_the_table() -> None:
    ran = CliRunner().invoke(main, ["bench", "link", "--triples", "400", "--questions", "6"])
    assert ran.exit_code == 0, ran.output
    assert "target: recall@3 >= 95% at every size: holds" in ran.output
