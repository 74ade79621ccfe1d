"""The garbage collector is the worker process's memory policy's alone
(infra/runtime/memory.py): services/ neither imports nor calls `gc`."""

from __future__ import annotations

import ast
from pathlib import Path

import postel.services

SERVICES = Path(postel.services.__file__).parent


def _gc_uses(path: Path) -> list[int]:
    def uses(node: ast.AST) -> bool:
        if isinstance(node, ast.Import):
            return any(alias.name == "gc" for alias in node.names)
        if isinstance(node, ast.ImportFrom):
            return node.module == "gc"
        return isinstance(node, ast.Name) and node.id == "gc"

    return [n.lineno for n in ast.walk(ast.parse(path.read_text(), str(path))) if uses(n)]


def test_services_make_no_gc_call() -> None:
    found = {
        str(path.relative_to(SERVICES)): lines
        for path in sorted(SERVICES.rglob("*.py"))
        if (lines := _gc_uses(path))
    }
    assert found == {}


def test_the_memory_policy_is_where_gc_is() -> None:
    memory = SERVICES.parent / "infra" / "runtime" / "memory.py"
    assert _gc_uses(memory)
