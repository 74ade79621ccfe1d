"""Message ids are written and read in one place, messages/ids.py: each parser reads what its
writer writes, and the terminal message types are read from the routes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from postel.messages import TERMINAL_TYPES, ids

ROOT = Path(__file__).resolve().parents[2]


def test_a_message_id_is_its_job_and_its_key() -> None:
    written = ids.message_id("job-1", ids.generation_continued("t0", 1, 2))
    assert written == "job-1:gen:t0:1:2"
    assert ids.job_of(written) == "job-1"
    assert ids.key_of(written) == "gen:t0:1:2"
    assert (ids.job_of("job-1"), ids.key_of("job-1")) == ("job-1", "job-1")


def test_a_gasl_round_is_read_back_from_its_plan_and_its_records() -> None:
    assert ids.gasl_round_of(ids.message_id("j", ids.gasl_round(2, 7))) == (2, 7)
    assert ids.gasl_round_of(ids.message_id("j", ids.gasl_round_done(0, 11))) == (0, 11)


@pytest.mark.parametrize(
    "key",
    [ids.INTENT, ids.generation(3), ids.repair("t", 1), "gasl:x:1", ids.redrive("gasl:0:1", 1)],
)
def test_other_messages_name_no_gasl_round(key: str) -> None:
    assert ids.gasl_round_of(ids.message_id("j", key)) is None


def test_a_redrive_is_read_back_with_its_count() -> None:
    first = ids.message_id("j", ids.gasl_round(0, 1))
    assert ids.redrive_of(first) == (first, 0)
    again = ids.redrive(ids.redrive(first, 1), 3)
    assert ids.redrive_of(again) == (ids.redrive(first, 1), 3)
    assert ids.redrive_of(ids.redrive(first, 12)) == (first, 12)
    assert ids.job_of(again) == "j"


def test_the_terminal_types_are_those_no_queue_takes() -> None:
    assert {"job.completed", "job.failed"} == TERMINAL_TYPES


def _code_strings(path: Path) -> list[ast.Constant]:
    """The string constants of a module's code (not its docstrings, which may name ids)."""
    tree = ast.parse(path.read_text("utf-8"))
    prose = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
    ]


def test_no_module_splits_a_message_id_but_messages_ids() -> None:
    """A reader of ids calls the parsers: nothing else looks for `:redrive` or `gasl-done`
    in an id by hand, and no template splits one."""
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for top in ("messages", "services", "workers", "infra")
        for path in sorted((ROOT / top).rglob("*.py"))
        if path != ROOT / "messages" / "ids.py"
        for node in _code_strings(path)
        if ":redrive" in node.value or "gasl-done" in node.value
    ]
    templates = [
        path.name
        for path in sorted((ROOT / "infra" / "web" / "templates").glob("*.html"))
        if "message_id.split" in path.read_text() or "replace(job.job_id" in path.read_text()
    ]
    assert found == [] and templates == []
