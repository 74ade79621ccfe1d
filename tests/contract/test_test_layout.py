"""The tests run piece by piece: no file edits sys.path, no test imports another test, and
what tests share lives in tests/support, which pytest's `pythonpath` (pyproject.toml) makes
importable as `support`."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
SUPPORT = TESTS / "support"
EDITS = {"insert", "append", "extend", "remove", "pop", "clear", "__setitem__"}


def python_files() -> list[Path]:
    return sorted([*TESTS.rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")])


def imported_modules(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return names


def is_sys_path(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "path"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


def sys_path_edits(tree: ast.AST) -> list[int]:
    """Lines that change sys.path: a call of one of its list methods, or an assignment."""
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_sys_path(node.value) and node.attr in EDITS:
            edits.append(node.lineno)
        elif isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                inner = target.value if isinstance(target, ast.Subscript) else target
                if is_sys_path(inner):
                    edits.append(node.lineno)
    return sorted(edits)


def test_nothing_edits_sys_path() -> None:
    edits = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in python_files()
        for line in sys_path_edits(ast.parse(path.read_text("utf-8")))
    ]
    assert not edits, f"sys.path is edited at {edits}: put shared code in tests/support"


def test_an_edit_of_sys_path_is_found() -> None:
    code = "import sys\nsys.path.insert(0, 'x')\nsys.path += ['y']\nprint(len(sys.path))\n"
    assert sys_path_edits(ast.parse(code)) == [2, 3]


def test_no_test_imports_another_test_and_helpers_come_from_support() -> None:
    helpers = {path.stem for path in TESTS.rglob("*.py") if SUPPORT not in path.parents}
    helpers -= {"conftest"}
    wrong = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted(TESTS.rglob("*.py"))
        for name in imported_modules(ast.parse(path.read_text("utf-8")))
        if name.split(".")[0] in helpers | {"conftest", "tests"}
    ]
    assert not wrong, wrong


def test_support_is_on_pytests_pythonpath() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    assert "tests" in options["ini_options"]["pythonpath"]
    assert (SUPPORT / "__init__.py").exists()
