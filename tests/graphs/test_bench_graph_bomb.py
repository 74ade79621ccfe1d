"""`postel bench graph-bomb` (the bench lane): a smaller bomb refused by the CLI and the web
upload, then stored on ladybug with the limit lifted and a worker's job run on it, every
process within the 300 MB bound."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from postel.infra.cli.main import main


@pytest.mark.bench
def test_bench_graph_bomb_small() -> None:
    result = CliRunner().invoke(
        main,
        ["bench", "graph-bomb", "--edges", "30000", "--stored", "ladybug", "--port", "7152"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    figures = json.loads(
        CliRunner()
        .invoke(main, ["bench", "graph-bomb", "--edges", "20000", "--port", "7153", "--json"])
        .stdout
    )
    assert set(figures["processes"]) == {"cli_refused", "web_refused"}
    assert all(figures["as_expected"].values()) and all(figures["within_bound"].values())
    assert figures["bomb"]["graphml_bytes"] > 20000 * 60
