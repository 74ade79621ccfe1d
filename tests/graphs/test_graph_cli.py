"""`postel graph`, `postel gasl` and `postel bench gasl` through click, with exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest
from click.testing import CliRunner, Result
from postel.infra.cli.main import main
from postel.infra.runtime.settings import Settings
from postel.infra.store.redis_server import free_port
from postel.services.gasl.loaders import DEMO_GRAPH

PEOPLE = 'FIND nodes WHERE entity_type = "PERSON" LIMIT 3 AS p'


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def system_redis(redis_url: str, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> str:
    """Point the CLI at the test Redis as `postel submit` would find a running system."""
    monkeypatch.setenv("POSTEL_REDIS_URL", redis_url)
    monkeypatch.setenv("POSTEL_LOG_LEVEL", "WARNING")
    return redis_url


def test_graph_add_list_info(system_redis: str) -> None:
    added = run("graph", "add", "mmwr", str(DEMO_GRAPH))
    assert added.exit_code == 0, added.output
    assert added.stdout.startswith("graph mmwr version 1: 3261 nodes, 1740 edges")
    assert "nano-graphrag" in added.stdout

    again = run("graph", "add", "mmwr", str(DEMO_GRAPH))
    assert "version 2" in again.stdout

    table = run("graph", "list")
    assert table.exit_code == 0
    header, row = table.stdout.splitlines()
    assert header.split()[:4] == ["name", "version", "nodes", "edges"]
    assert row.split()[:5] == ["mmwr", "2", "3261", "1740", "nano-graphrag"]

    listed = json.loads(run("graph", "list", "--json").stdout)
    assert [(g["name"], g["version"], g["nodes"]) for g in listed] == [("mmwr", 2, 3261)]

    info = run("graph", "info", "mmwr")
    assert json.loads(info.stdout)["sha256"] == listed[0]["sha256"]

    removed = run("graph", "remove", "mmwr")
    assert removed.exit_code == 0 and "graph mmwr removed (it was version 2)" in removed.stdout
    assert "no graphs registered" in run("graph", "list").stdout
    gone = run("graph", "remove", "mmwr")
    assert gone.exit_code == 4 and "no graph named 'mmwr'" in gone.stderr


def test_graph_add_an_edge_list_on_ladybug_past_a_limit(
    system_redis: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edges = tmp_path / "edges.csv"
    edges.write_text("source,target,keywords\na,b,knows\nb,c,likes\n")
    added = run("graph", "add", "kg", str(edges), "--directed", "--engine", "ladybug")
    assert added.exit_code == 0, added.output
    assert added.stdout.startswith("graph kg version 1: 3 nodes, 2 edges (edge list, ladybug")
    monkeypatch.setenv("POSTEL_GRAPH_MAX_EDGES", "1")
    refused = run("graph", "add", "kg", str(edges))
    assert refused.exit_code == 2 and "POSTEL_GRAPH_MAX_EDGES" in refused.stderr


def test_graph_errors_and_exit_codes(
    system_redis: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "no graphs registered" in run("graph", "list").stdout
    unknown = run("graph", "info", "ghost")
    assert unknown.exit_code == 4 and "no graph named 'ghost'" in unknown.stderr

    bad = tmp_path / "bad.graphml"
    bad.write_text("<nope>")
    refused = run("graph", "add", "g", str(bad))
    assert refused.exit_code == 2 and "bad.graphml is not a readable GraphML" in refused.stderr
    named = run("graph", "add", "no spaces", str(DEMO_GRAPH))
    assert named.exit_code == 2 and "invalid graph name" in named.stderr
    assert run("graph", "add", "g", str(tmp_path / "missing.graphml")).exit_code == 2

    monkeypatch.setenv("POSTEL_REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")
    down = run("graph", "list")
    assert down.exit_code == 3 and "cannot reach Redis" in down.stderr


def test_gasl_run_table_and_json() -> None:
    table = run("gasl", "run", "--graph", "sample", PEOPLE, "COUNT p AS n")
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert "status" in lines[0] and len(lines) == 4
    assert lines[2].split()[1:3] == ["success", "3"]

    as_json = run("gasl", "run", "--graph", "sample", "--json", PEOPLE)
    records = json.loads(as_json.stdout)
    assert records[0]["status"] == "success"
    assert [row["entity_type"] for row in records[0]["rows"]] == ["PERSON"] * 3


def test_gasl_run_json_gives_every_row_unless_limited() -> None:
    everyone = 'FIND nodes WHERE entity_type = "PERSON" AS p'
    oracle = nx.read_graphml(DEMO_GRAPH)
    people = sum(1 for _, kind in oracle.nodes(data="entity_type") if kind == '"PERSON"')
    assert people > 20  # more than a record kept before
    [record] = json.loads(run("gasl", "run", "--graph", "sample", "--json", everyone).stdout)
    assert record["count"] == len(record["rows"]) == people
    limited = run("gasl", "run", "--graph", "sample", "--json", "--limit", "5", everyone)
    [record] = json.loads(limited.stdout)
    assert record["count"] == people and len(record["rows"]) == 5


def test_gasl_run_plan_file_state_and_failure_exit(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "plan_id": "people",
                "commands": ["DECLARE people AS LIST", PEOPLE, "UPDATE people WITH p"],
            }
        )
    )
    state = tmp_path / "state"
    first = run(
        "gasl", "run", "--graph", str(DEMO_GRAPH), "--plan", str(plan), "--state", str(state)
    )
    assert first.exit_code == 0, first.output
    # The state directory carries `people` into the next run; `ghost` was never bound.
    counts = ["COUNT people AS n", "COUNT ghost AS m"]
    later = run("gasl", "run", "--graph", "sample", "--state", str(state), "--json", *counts)
    assert later.exit_code == 1
    records = json.loads(later.stdout)
    assert [r["status"] for r in records] == ["success", "binding_failure"]
    assert records[0]["count"] == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--graph", "sample"], "either --plan"),
        (["--graph", "sample", "--plan", "p.json", "COUNT a AS n"], "either --plan"),
        (["--graph", "nowhere.graphml", "COUNT a AS n"], "graph file nowhere.graphml"),
        (["--graph", "sample", "--plan", "missing.json"], "invalid plan missing.json"),
    ],
)
def test_gasl_run_usage_errors_exit_2(args: list[str], message: str) -> None:
    result = run("gasl", "run", *args)
    assert result.exit_code == 2 and message in result.stderr


def test_gasl_run_refuses_an_invalid_plan_object(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"plan_id": "x", "commands": []}))
    result = run("gasl", "run", "--graph", "sample", "--plan", str(plan))
    assert result.exit_code == 2 and "commands" in result.stderr


def test_gasl_check() -> None:
    good = run("gasl", "check", "COUNT a AS n", PEOPLE)
    assert good.exit_code == 0
    assert [line.split()[0] for line in good.stdout.splitlines()] == ["ok", "ok"]

    bad = run("gasl", "check", "COUNT a AS n", "COUNT a")
    assert bad.exit_code == 2
    assert "error  COUNT a" in bad.stdout
    assert "line 1, column" in bad.stdout and "expected: AS" in bad.stdout
    assert "hint: COUNT needs" in bad.stdout


@pytest.mark.bench
def test_bench_gasl_tiny_run() -> None:
    tiny = ["bench", "gasl", "--nodes", "2000", "--path-nodes", "500", "--repeat", "1"]
    tiny += ["--plan-questions", "0", "--write-sizes", ""]
    result = run(*tiny, "--no-cypher")
    assert result.exit_code == 0, result.output
    assert "GASL bench: 2,000 nodes" in result.stdout
    assert "index vs scan (equality)" in result.stdout

    figures = json.loads(run(*tiny, "--no-cypher", "--json").stdout)
    assert figures["nodes"] == 2000 and len(figures["questions"]) == 4


@pytest.mark.bench
@pytest.mark.local_model
def test_bench_gasl_asks_the_local_model_for_plans_with_and_without_the_grammar() -> None:
    tiny = ["bench", "gasl", "--nodes", "1000", "--path-nodes", "300", "--repeat", "1"]
    tiny += ["--write-sizes", ""]
    result = run(*tiny, "--no-cypher", "--plan-questions", "2", "--json")
    assert result.exit_code == 0, result.output
    rates = json.loads(result.stdout)["plan_parse"]
    assert rates["questions"] == 2
    for side in ("free", "grammar"):
        assert 0 <= rates[side]["parsed"] <= 2 and rates[side]["seconds"] > 0
    # under the grammar an answer fails only when its token budget cut it short
    assert rates["grammar"]["parsed"] >= rates["free"]["parsed"]


def test_gasl_run_shows_the_canonical_command_and_what_was_written() -> None:
    table = run("gasl", "run", "--graph", "sample", "FIND nodes with entity_type=PERSON AS p")
    assert table.exit_code == 0, table.output
    assert 'FIND nodes WHERE entity_type = "PERSON" AS p' in table.stdout
    assert "written as: FIND nodes with entity_type=PERSON AS p" in table.stdout


def test_graph_add_offers_the_registry_s_engines() -> None:
    from postel.infra.cli.graph import graph_add
    from postel.services.gasl.engines.registry import ENGINES

    [engine] = [p for p in graph_add.params if p.name == "engine"]
    assert tuple(engine.type.choices) == ENGINES  # type: ignore[attr-defined]
