"""`postel bench web` runs end to end at a small size and prints a figure for every page
(the figures themselves are for reading, not asserting)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.bench
def test_bench_web_prints_every_page(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POSTEL_")}
    env.update(POSTEL_LOG_LEVEL="WARNING", POSTEL_STATE_DIR=str(tmp_path))
    small = ["--jobs", "40", "--events", "400", "--requests", "2", "--json"]
    run = subprocess.run(
        [sys.executable, "-m", "postel", "bench", "web", *small],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    figures = json.loads(run.stdout)
    assert figures["filled"]["jobs"] == 41  # and the heavy one
    assert figures["filled"]["dead_letters"] == 4
    pages = figures["pages"]
    assert {
        "jobs, newest",
        "jobs, failed",
        "job page (2000 events)",
        "jobs, the middle page",
    } <= set(pages)
    assert all(page["full"]["p50_ms"] > 0 for page in pages.values())
