"""CLI support functions and a tiny benchmark run (figures only, nothing timed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from postel.infra.bench.gasl import format_gasl_bench, run_gasl_bench
from postel.infra.cli.gasl_run import (
    STATE_FILE,
    check_commands,
    format_records_table,
    records_json,
    run_commands,
)
from postel.services.gasl.errors import GaslSyntaxError
from postel.services.gasl.loaders import DEMO_GRAPH


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
    figures = run_gasl_bench(nodes=3000, path_nodes=1000, repeat=1)
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
