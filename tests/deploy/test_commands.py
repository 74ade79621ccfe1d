"""The README's two commands and the scripts behind them: what they run, which Python they
choose, and that a failed step says so with its log."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bash(script: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", f"set -euo pipefail; source scripts/lib.sh; {script}"],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )


def test_the_readme_gives_the_two_commands_and_ci_runs_the_second() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Two commands", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = [line for line in block.splitlines() if line and not line.startswith("#")]
    assert commands == ["./scripts/demo", "./scripts/test"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^lane tests ./scripts/test$", ci, re.MULTILINE)
    assert re.search(r"^lane bench ./scripts/test bench$", ci, re.MULTILINE)
    assert re.search(r"^lane model ./scripts/test model$", ci, re.MULTILINE)
    for name in ("demo", "test", "install"):
        script = ROOT / "scripts" / name
        assert os.access(script, os.X_OK), f"scripts/{name} is not executable"
        subprocess.run(["bash", "-n", str(script)], check=True)


def test_an_active_virtualenv_is_the_python_used(tmp_path: Path) -> None:
    venv = tmp_path / "env"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    chosen = _bash('choose_python; echo "$PYTHON"', VIRTUAL_ENV=str(venv))
    assert chosen.returncode == 0, chosen.stderr
    assert chosen.stdout.strip() == f"{venv}/bin/python"


def test_a_failed_step_shows_its_log_and_fails() -> None:
    failed = _bash("with_heartbeat 'the step' bash -c 'echo compiler exploded; exit 3'")
    assert failed.returncode == 1
    assert "compiler exploded" in failed.stderr
    assert "the step failed" in failed.stderr


def test_a_step_that_works_says_how_long_it_took() -> None:
    done = _bash("with_heartbeat 'the step' true")
    assert done.returncode == 0
    assert re.search(r"the step: done in \d+ s", done.stderr)


@pytest.mark.parametrize(
    ("extras", "benchmarks"), [("dev,local", True), ("dev", True), ("local", False)]
)
def test_the_install_adds_the_benchmarks_with_the_dev_extras(
    tmp_path: Path, extras: str, benchmarks: bool
) -> None:
    """The benchmarks are a distribution of their own (benchmarks/), which an extra cannot
    name: the install asks pip for both, in one run, whenever the extras include dev."""
    asked = tmp_path / "asked"
    python = tmp_path / "python"
    python.write_text(f'#!/usr/bin/env bash\nprintf "%s\\n" "$@" > {asked}\n')
    python.chmod(0o755)
    done = _bash(f"PYTHON={python}; install_postel {extras}")
    assert done.returncode == 0, done.stderr
    arguments = asked.read_text().splitlines()
    assert arguments[:3] == ["-m", "pip", "install"]
    expected = ["-e", f".[{extras}]", *(["-e", "./benchmarks"] if benchmarks else [])]
    assert arguments[-len(expected) :] == expected
