"""The dependency rule of docs/ARCHITECTURE.md, checked on every import statement of the
package and of the benchmarks. ROOMS below is the rule, one row per room: what it may import;
who may import it follows. Each room's docstring states its row, word for word as `rule_of`
renders it (test_every_room_states_its_rule): the table is the one source, and the docstrings
cannot drift from it.

messages import nothing of ours, services only messages, infra never a worker, and each infra
room only the rooms below it (store < runtime < client < web < cli). The benchmarks
(postel_bench, the postel-bench distribution) sit above everything: they may import anything
of postel, and nothing of postel imports them, not even by name (the command line finds
`postel bench` through an entry point)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from postel.infra.runtime.settings import Settings
from postel.infra.store.job_stores import job_stores
from postel.infra.store.keys import Keyspace
from redis.asyncio import Redis

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("messages", "services", "workers", "infra", "postel", "benchmarks/postel_bench")
INFRA_FLOORS = ("store", "runtime", "client", "web", "cli")
BENCH = "postel_bench"
INFRA_ORDER = "infra's rooms import only down their order: store < runtime < client < web < cli."


@dataclass(frozen=True)
class Room:
    """A room of the rule: the name its docstring calls it, the file whose docstring states
    its rule, the rooms it may import, and what else this test enforces for it, in words."""

    name: str
    docstring_of: str
    imports: frozenset[str]
    also: tuple[str, ...] = ()


ROOMS: dict[str, Room] = {
    "messages": Room("messages", "messages/__init__.py", frozenset()),
    "services": Room(
        "services",
        "services/__init__.py",
        frozenset({"messages"}),
        ("Its packages import each other without a cycle.",),
    ),
    "workers": Room(
        "workers",
        "workers/__init__.py",
        frozenset({"messages", "services", "infra.store", "infra.runtime"}),
        ("infra loads a worker by its name, never by an import.",),
    ),
    "infra": Room("infra", "infra/__init__.py", frozenset(), (INFRA_ORDER,)),
    "infra.store": Room(
        "infra.store",
        "infra/store/__init__.py",
        frozenset({"messages", "services"}),
        (INFRA_ORDER, "Only job_stores.py builds an EventLog."),
    ),
    "infra.runtime": Room(
        "infra.runtime",
        "infra/runtime/__init__.py",
        frozenset({"messages", "services", "infra.store"}),
        (INFRA_ORDER,),
    ),
    "infra.client": Room(
        "infra.client",
        "infra/client/__init__.py",
        frozenset({"messages", "services", "infra.store", "infra.runtime"}),
        (INFRA_ORDER,),
    ),
    "infra.web": Room(
        "infra.web",
        "infra/web/__init__.py",
        frozenset({"messages", "services", "infra.store", "infra.runtime", "infra.client"}),
        (INFRA_ORDER,),
    ),
    "infra.cli": Room(
        "infra.cli",
        "infra/cli/__init__.py",
        frozenset(
            {"messages", "services", "infra.store", "infra.runtime", "infra.client", "infra.web"}
        ),
        (
            INFRA_ORDER,
            "`postel --help` loads, of postel, only the command line's own modules (listed in "
            "test_postel_help_loads_no_heavy_module) and infra/runtime/names.py, and of the "
            "benchmarks only the module that defines `bench`: no pydantic, Redis, arq, "
            "structlog, httpx, networkx, GASL, web app or bundled model.",
        ),
    ),
    "testing": Room(
        "postel.testing",
        "postel/testing/__init__.py",
        frozenset({"messages", "services", "infra.store", "infra.runtime"}),
    ),
    "postel": Room(
        "postel",
        "postel/__init__.py",
        frozenset(),
        ("It names its public surface by strings, each imported on first use.",),
    ),
    "__main__": Room("postel.__main__", "postel/__main__.py", frozenset({"infra.cli"})),
}
ROOMS["bench"] = Room(
    "the benchmarks",
    f"benchmarks/{BENCH}/__init__.py",
    frozenset(ROOMS),
    (INFRA_ORDER.replace("cli.", "cli < the benchmarks."), "Nothing of postel names them."),
)
ALLOWED: dict[str, frozenset[str]] = {room: row.imports for room, row in ROOMS.items()}


def rule_of(room: str) -> str:
    """`room`'s row of ROOMS in words, as its docstring states it."""
    row = ROOMS[room]
    imports = (
        "any room of postel"
        if row.imports == set(ROOMS) - {room}
        else ", ".join(ROOMS[other].name for other in ROOMS if other in row.imports)
        or "nothing of postel"
    )
    importers = [ROOMS[other].name for other in ROOMS if room in ROOMS[other].imports]
    return " ".join(
        [
            f"Layer rule (tests/contract/test_layers.py): imports {imports}; imported by "
            f"{', '.join(importers) or 'nothing of postel'}.",
            *row.also,
        ]
    )


def module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if parts[0] == "benchmarks":
        return ".".join(parts[1:])
    return ".".join(parts if parts[0] == "postel" else ["postel", *parts])


def room_of(module: str) -> str:
    if module.split(".")[0] == BENCH:
        return "bench"
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
                if imported.startswith(("postel.", f"{BENCH}.")) or imported == BENCH:
                    found.append((module, room_of(module), imported, room_of(imported)))
    return found


def test_every_import_follows_the_dependency_rule() -> None:
    broken = [
        f"{module} ({room}) imports {imported} ({target})"
        for module, room, imported, target in crossings()
        if target != room and target not in ALLOWED[room]
    ]
    assert broken == []


def test_nothing_of_postel_imports_the_benchmarks_or_names_them() -> None:
    """Not the runtime, not the command line: `postel bench` comes from an entry point, so
    no module of postel holds the benchmarks' package name, even in a string."""
    imports = [
        f"{module} imports {imported}"
        for module, room, imported, target in crossings()
        if room != "bench" and target == "bench"
    ]
    named = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for top in SOURCES
        if top != f"benchmarks/{BENCH}"
        for path in sorted((ROOT / top).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and BENCH in node.value
    ]
    assert imports == [] and named == []


def test_no_import_runs_back_up_the_rooms_of_infra() -> None:
    """Read from the order of the rooms alone, whatever ALLOWED says: an import goes to a
    room lower in store < runtime < client < web < cli < the benchmarks, never higher."""
    order = [*(f"infra.{room}" for room in INFRA_FLOORS), "bench"]
    upward = [
        f"{module} ({room}) imports {imported} ({target})"
        for module, room, imported, target in crossings()
        if room in order and target in order and order.index(target) > order.index(room)
    ]
    assert upward == []


def test_the_check_sees_imports_and_rooms() -> None:
    rooms = {(room, target) for _, room, _, target in crossings()}
    # the rule is not vacuous: the walk reads real crossings of every kind it allows
    assert ("workers", "infra.runtime") in rooms
    assert ("infra.runtime", "infra.store") in rooms
    assert ("services", "messages") in rooms
    # the benchmarks are read too, and reach the command line's support and the test doubles
    assert {("bench", "infra.cli"), ("bench", "testing"), ("bench", "services")} <= rooms


def test_every_room_is_a_row_of_the_rule() -> None:
    rooms = {room_of(module_of(path)) for top in SOURCES for path in (ROOT / top).rglob("*.py")}
    assert rooms == set(ROOMS)


def test_every_room_states_its_rule() -> None:
    """Each room's docstring holds its row of ROOMS, as `rule_of` words it (line breaks
    aside), and states no other: change the table, and the docstring with it."""
    wrong = {}
    for room, row in ROOMS.items():
        tree = ast.parse((ROOT / row.docstring_of).read_text("utf-8"))
        stated = " ".join((ast.get_docstring(tree) or "").split())
        rule = " ".join(rule_of(room).split())
        if rule not in stated or stated.count("Layer rule") != 1:
            wrong[row.docstring_of] = rule
    assert wrong == {}, "each docstring should hold its rule:\n" + "\n".join(
        f"{path}:\n{rule}" for path, rule in wrong.items()
    )


def test_a_rule_reads_both_ways() -> None:
    assert rule_of("infra.runtime").startswith(
        "Layer rule (tests/contract/test_layers.py): imports messages, services, infra.store; "
        "imported by workers, infra.client, infra.web, infra.cli, postel.testing, the benchmarks."
    )
    assert re.search(r"imports nothing of postel; imported by .*\.", rule_of("messages"))
    assert "imports any room of postel; imported by nothing of postel." in rule_of("bench")


@pytest.mark.parametrize(
    ("module", "room"),
    [
        ("postel.infra.store.keys", "infra.store"),
        ("postel.infra.web", "infra.web"),
        ("postel.infra", "infra"),
        ("postel.testing.relay", "testing"),
        ("postel.services.gasl.parser", "services"),
        ("postel_bench", "bench"),
        ("postel_bench.data.qa_movies", "bench"),
    ],
)
def test_rooms_are_read_from_module_names(module: str, room: str) -> None:
    assert room_of(module) == room


def service_packages() -> dict[str, set[str]]:
    """Each services package (or top-level module) and the others it imports, anywhere in
    its files (imports inside functions count: a cycle hidden there is still a cycle)."""
    graph: dict[str, set[str]] = {}
    for path in sorted((ROOT / "services").rglob("*.py")):
        source = module_of(path).split(".")
        if len(source) < 3:
            continue  # services/__init__
        imported = graph.setdefault(source[2], set())
        for name in imports_of(path):
            parts = name.split(".")
            if parts[:2] == ["postel", "services"] and len(parts) > 2 and parts[2] != source[2]:
                imported.add(parts[2])
    return graph


def cycles_in(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_services_packages_form_no_import_cycle() -> None:
    graph = service_packages()
    assert {"validation", "ipv", "llm", "validator"} <= set(graph)
    assert cycles_in(graph) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert cycles_in({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles_in({"a": {"b"}, "b": set()}) == []


def test_postel_help_loads_no_heavy_module() -> None:
    """`postel --help` imports neither GASL and networkx, nor the web app, the bundled
    model or the benchmarks, nor pydantic, Redis, arq, the HTTP client or the messages: each
    command imports what it needs when it runs. Of postel, only the command line's own
    modules load, and of the benchmarks only the module that defines the `bench` group (for
    its line of help)."""
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from postel.infra.cli.main import main\n"
        "result = CliRunner().invoke(main, ['--help'])\n"
        "assert result.exit_code == 0, result.output\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    assert "postel.infra.cli.main" in loaded
    heavy = {
        "networkx",
        "postel.services.gasl",
        "postel.infra.store.graphs",
        "postel.infra.web",
        "postel_bench.bus",
        "postel_bench.chaos",
        "postel_bench.qa",
        "postel_bench.data",
        "postel_bench.baselines",
        "fastapi",
        "uvicorn",
        "llama_cpp",
        "pydantic",
        "pydantic_settings",
        "redis",
        "hiredis",
        "arq",
        "httpx",
        "structlog",
        "postel.messages",
        "postel.services",
        "postel.infra.store",
        "postel.infra.client",
    }
    assert sorted(heavy & loaded) == []
    postel_modules = {name for name in loaded if name.startswith("postel")}
    assert postel_modules == {
        "postel",
        "postel.infra",
        "postel.infra.cli",
        "postel.infra.cli.client_command",
        "postel.infra.cli.dead",
        "postel.infra.cli.entry_points",
        "postel.infra.cli.gasl",
        "postel.infra.cli.graph",
        "postel.infra.cli.jobs",
        "postel.infra.cli.main",
        "postel.infra.cli.replay",
        "postel.infra.cli.serve",
        "postel.infra.runtime",
        "postel.infra.runtime.names",
        "postel_bench",
        "postel_bench.cli",
    }


def test_one_function_builds_the_job_stores_from_settings() -> None:
    limits = Settings(events_maxlen=500, job_events_maxlen=20, job_ttl_s=120)
    events, jobs = job_stores(Redis(), Keyspace(), limits)
    assert (events.maxlen, events.job_maxlen, events.job_ttl_s, jobs.ttl_s) == (500, 20, 120, 120)
    built = [
        f"{path.relative_to(ROOT)}: {node.func.id}(...)"
        for path in sorted([*ROOT.glob("[ims]*/**/*.py"), *ROOT.glob("benchmarks/**/*.py")])
        if path.name != "job_stores.py"
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "EventLog"
    ]
    assert built == []
