"""What the tests share and are not tests themselves: fakes, scripted models, graphs, the
fuzzers' sizes, each pytest-xdist worker's database, and the scripts a test starts as a
process of its own. pyproject.toml puts tests/ on pytest's `pythonpath`, so a test imports
`support.<module>`; no test imports another test.

A script runs as `python -m support.<name>` (`script`), with tests/ on its PYTHONPATH
(`with_support`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def script(name: str, *args: str) -> list[str]:
    """The command that runs the support script NAME with ARGS in a process of its own."""
    return [sys.executable, "-m", f"support.{name}", *args]


def with_support(env: Mapping[str, str]) -> dict[str, str]:
    """ENV with tests/ first on PYTHONPATH, so a process can import `support`."""
    paths = [str(TESTS), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    return {**env, "PYTHONPATH": os.pathsep.join(paths)}
