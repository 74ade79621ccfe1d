"""CLI support functions and a tiny benchmark run (figures only, nothing timed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from postel.infra.cli.gasl_run import (
    STATE_FILE,
    check_commands,
    format_records_table,
    records_json,
    run_commands,
)
from postel.infra.cli.main import main
from postel.services.gasl.errors import GaslSyntaxError
from postel.services.gasl.loaders import DEMO_GRAPH
from postel_bench.gasl import (
    format_gasl_bench,
    format_write_figures,
    run_gasl_bench,
    write_figures,
)


def test_run_commands_with_state_dir_and_plan_file(tmp_path: Path) -> None:
    records = run_commands(
        DEMO_GRAPH,
        [
            "DECLARE people AS LIST",
            'FIND nodes WHERE entity_type = "PERSON" LIMIT 3 AS p',
            "UPDATE people WITH p",
            "FIND nodes WHERE nope = 1 AS q",
        ],
        tmp_path,
    )
    assert [r.status for r in records] == ["success", "success", "success", "empty"]
    saved = json.loads((tmp_path / STATE_FILE).read_text())
    assert len(saved["variables"]["people"]["items"]) == 3
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"plan_id": "f", "commands": ["COUNT ghost AS n"]}))
    failed = run_commands(DEMO_GRAPH, plan)
    table = format_records_table(records + failed)
    assert "binding_failure" in table and "hint: no item has field(s) nope" in table
    rows = json.loads(records_json(records))
    assert rows[1]["rows"][0]["entity_type"] == "PERSON"


def test_check_commands() -> None:
    results = check_commands(["COUNT a AS n", "COUNT a"])
    assert results[0] == "ok"
    assert isinstance(results[1], GaslSyntaxError) and "AS" in results[1].expected


@pytest.mark.bench
def test_bench_small_run() -> None:
    figures = run_gasl_bench(nodes=3000, path_nodes=1000, repeat=1, write_sizes=())
    names = [q["question"] for q in figures["questions"]]
    assert names == [
        "equality (index)",
        "equality (scan)",
        "contains (scan)",
        "paths <= 3 (scale-free)",
    ]
    for q in figures["questions"]:
        if "cypher_results" in q and not q["question"].startswith("paths"):
            assert q["cypher_results"] == q["results"]
    assert "index vs scan" in format_gasl_bench(figures)


def test_bench_writes_section_small_run() -> None:
    figures = write_figures((300, 3000), repeat=2)
    assert [row["nodes"] for row in figures["by_size"]] == [300, 3000]
    for row in figures["by_size"]:
        for name in ("create_groups", "add_field", "update"):
            assert row[f"{name}_ms"] > 0 and row[f"{name}_read_ms"] > 0, row
            ratio = row[f"{name}_ms"] / row["read_ms"]
            assert row[f"{name}_x_read"] == pytest.approx(ratio, rel=0.02, abs=0.1)
        # two changes made two groups of 100 members each, in the job's overlay
        assert row["overlay"] == {"nodes": 2, "edges": 200}
        assert row["copy_ms"] > 0
    ratios = figures["largest_vs_smallest"]
    assert set(ratios) == {
        "create_groups",
        "add_field",
        "update",
        "create_groups_read",
        "add_field_read",
        "update_read",
        "read",
    }
    assert figures["meets_target"] == all(r <= figures["target"] for r in ratios.values())
    text = format_write_figures(figures)
    assert "3,000 vs 300 nodes" in text and "target within 3x" in text


def test_bench_gasl_json_is_pure_json_with_the_writes_section() -> None:
    args = ["bench", "gasl", "--nodes", "200", "--path-nodes", "100", "--repeat", "1"]
    args += ["--no-cypher", "--plan-questions", "0", "--write-sizes", "1000,2000", "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["writes"]["sizes"] == [1000, 2000]
    skipped = CliRunner().invoke(main, [*args[:-3], "--write-sizes", "", "--json"])
    assert "writes" not in json.loads(skipped.stdout)


def test_bench_gasl_refuses_write_sizes_it_cannot_compare() -> None:
    for sizes in ("2000,1000", "abc", "500"):
        result = CliRunner().invoke(main, ["bench", "gasl", "--write-sizes", sizes])
        assert result.exit_code == 2 and "--write-sizes" in result.output, result.output
