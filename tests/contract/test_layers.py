"""The dependency rule of docs/ARCHITECTURE.md, checked on every import statement of the
package: messages import nothing of ours, services only messages, infra never a worker, and
each infra room only the rooms below it (store < runtime < client < web < cli < bench); the
CLI reaches the benchmarks only inside the bench commands."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("messages", "services", "workers", "infra", "postel")
INFRA_FLOORS = ("store", "runtime", "client", "web", "cli", "bench")

ALLOWED: dict[str, set[str]] = {
    "messages": set(),
    "services": {"messages"},
    "workers": {"messages", "services", *(f"infra.{room}" for room in INFRA_FLOORS[:2])},
    "testing": {"messages", "services", "infra", "infra.store", "infra.runtime"},
    "postel": set(),  # postel/__init__ names its public surface by strings, lazily
}
for floor, room in enumerate(INFRA_FLOORS):
    below = {f"infra.{other}" for other in INFRA_FLOORS[:floor]}
    ALLOWED[f"infra.{room}"] = {"messages", "services", "infra", *below}
ALLOWED["infra.bench"] |= {"testing"}
ALLOWED["infra.cli"] |= {"infra.bench"}  # inside the bench commands only (test below)
ALLOWED["infra"] = {"infra.store"}  # infra/__init__ packs commands with hiredis
ALLOWED["__main__"] = {"infra.cli"}


def module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts if parts[0] == "postel" else ["postel", *parts])


def room_of(module: str) -> str:
    parts = module.split(".")[1:]
    if not parts:
        return "postel"
    if parts[0] == "infra" and len(parts) > 1 and parts[1] in INFRA_FLOORS:
        return f"infra.{parts[1]}"
    return parts[0]


def imports_of(path: Path, *, top_level_only: bool = False) -> Iterator[str]:
    tree = ast.parse(path.read_text("utf-8"))
    for node in tree.body if top_level_only else ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from postel.infra import x` names module x, not only the package
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def crossings(*, top_level_only: bool = False) -> list[tuple[str, str, str, str]]:
    found = []
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*.py")):
            module = module_of(path)
            for imported in imports_of(path, top_level_only=top_level_only):
                if imported.startswith("postel."):
                    found.append((module, room_of(module), imported, room_of(imported)))
    return found


def test_every_import_follows_the_dependency_rule() -> None:
    broken = [
        f"{module} ({room}) imports {imported} ({target})"
        for module, room, imported, target in crossings()
        if target != room and target not in ALLOWED[room]
    ]
    assert broken == []


def test_the_cli_loads_benchmarks_only_when_one_is_run() -> None:
    """The one upward import: a `postel bench` command imports its benchmark inside the
    command, so `postel --help` and every other command start without them."""
    eager = [
        f"{module} imports {imported} at load"
        for module, room, imported, target in crossings(top_level_only=True)
        if room == "infra.cli" and target == "infra.bench"
    ]
    assert eager == []


def test_the_check_sees_imports_and_rooms() -> None:
    rooms = {(room, target) for _, room, _, target in crossings()}
    # the rule is not vacuous: the walk reads real crossings of every kind it allows
    assert ("workers", "infra.runtime") in rooms
    assert ("infra.runtime", "infra.store") in rooms
    assert ("services", "messages") in rooms


@pytest.mark.parametrize(
    ("module", "room"),
    [
        ("postel.infra.store.keys", "infra.store"),
        ("postel.infra.web", "infra.web"),
        ("postel.infra", "infra"),
        ("postel.testing.relay", "testing"),
        ("postel.services.gasl.parser", "services"),
    ],
)
def test_rooms_are_read_from_module_names(module: str, room: str) -> None:
    assert room_of(module) == room
